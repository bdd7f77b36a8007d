// How the trusted helpers of stages 3 and 4 (the yardsticks: OpenBLAS, the probes, stage 1's
// loops) time a piece of code: one untimed run, then runs until the budget is spent (at least
// kMinRuns, at most kMaxRuns), and the median with the fastest and slowest run. The median is
// what the tables compare; the two others show how noisy the machine was. The student's code
// of these stages is not timed here, inside its own program, but by the runner from outside
// the child (runner/stages/bench_engine.h); the shapes both time are below.
//
// Stage 2's bench child still times the student's decoder_step from inside (its own Measure,
// runner/stages/02-kv-cache/bench_call.cc), by the kernel's clock (runner/harness/trusted_clock.h)
// read beside the C library's, and shares the refusals here: a timing whose runs is
// kRecomputeFailed (the timed calls did not rewrite their output) or kClockDisagreed (the
// program's clock is not the system's) prints no figure, and TimingRefusal says why in words.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <vector>

#include "runner/harness/trusted_clock.h"
#include "runner/stages/call_timing.h"

namespace wb::stage03 {

using Timing = CallTiming;

inline constexpr int kMinRuns = 3;
inline constexpr int kMaxRuns = 200;
inline constexpr int kRecomputeFailed = -1;  // Timing::runs: the timed runs did not rewrite the output
inline constexpr int kClockDisagreed = -2;   // Timing::runs: the program's clock is not the system's

using harness::TrustedSeconds;

// Words for a refused timing; nullptr for a timing that is a measurement.
inline const char* TimingRefusal(const Timing& t) {
  if (t.runs == kRecomputeFailed) {
    return "the timed calls did not compute their output again: the bench clears the output before each timed "
           "call, and afterwards it did not hold what the untimed first call wrote. No figure is printed for code "
           "that skips work when it is timed";
  }
  if (t.runs == kClockDisagreed) {
    return "the program's clock (clock_gettime as the C library gives it) disagreed with the system's: no figure "
           "is printed when the clock the code sees is not the system's";
  }
  return nullptr;
}

template <typename Run>
Timing Measure(const Run& run, double budgetSeconds) {
  using LibraryClock = std::chrono::steady_clock;
  run();  // warm: pages, caches, the OpenMP thread pool
  std::vector<double> seconds;
  double spent = 0, librarySpent = 0;
  while (static_cast<int>(seconds.size()) < kMaxRuns &&
         (static_cast<int>(seconds.size()) < kMinRuns || spent < budgetSeconds)) {
    const auto libraryStart = LibraryClock::now();
    const double start = TrustedSeconds();
    run();
    const double took = TrustedSeconds() - start;
    librarySpent += std::chrono::duration<double>(LibraryClock::now() - libraryStart).count();
    seconds.push_back(took);
    spent += took;
  }
  if (!harness::ClocksAgree(spent, librarySpent)) return {0, 0, 0, kClockDisagreed};
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
