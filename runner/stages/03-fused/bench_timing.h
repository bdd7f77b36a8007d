// How the trusted helpers of stages 3 and 4 (the yardsticks: OpenBLAS, the probes, stage 1's
// loops) time a piece of code: one untimed run, then runs until the budget is spent (at least
// kMinRuns, at most kMaxRuns), and the median with the fastest and slowest run. The median is
// what the tables compare; the two others show how noisy the machine was. The student's code
// of these stages is not timed here, inside its own program, but by the runner from outside
// the child (runner/stages/bench_engine.h); the shapes both time are below.
//
// The yardsticks link no student code, so the C library's clock is theirs to trust.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <vector>

#include "runner/stages/call_timing.h"

namespace wb::stage03 {

using Timing = CallTiming;

inline constexpr int kMinRuns = 3;
inline constexpr int kMaxRuns = 200;

template <typename Run>
Timing Measure(const Run& run, double budgetSeconds) {
  using Clock = std::chrono::steady_clock;
  run();  // warm: pages, caches, the OpenMP thread pool
  std::vector<double> seconds;
  double spent = 0;
  while (static_cast<int>(seconds.size()) < kMaxRuns &&
         (static_cast<int>(seconds.size()) < kMinRuns || spent < budgetSeconds)) {
    const auto start = Clock::now();
    run();
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    seconds.push_back(took);
    spent += took;
  }
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  const double median = n % 2 == 1 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  return {median, seconds.front(), seconds.back(), static_cast<int>(n)};
}

// The shapes the bench times matmul at: the block's four projections (gate and up share one).
struct BenchShape {
  const char* name;
  int out;
  int in;
};
inline constexpr BenchShape kBenchShapes[] = {{"qkv", 768, 512}, {"wo", 512, 512}, {"gate/up", 1408, 512},
                                              {"down", 512, 1408}};
inline constexpr int kBenchShapeCount = 4;
// What the bench measures at each T and thread count, in this order: the four matmul shapes,
// then fused_block.
inline constexpr int kBenchMeasurements = kBenchShapeCount + 1;
inline constexpr int kBenchLargestT = 512;

}  // namespace wb::stage03
