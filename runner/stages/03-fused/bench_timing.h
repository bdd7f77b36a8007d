// How the benches of stages 3 and 4 time a piece of code, the same way in the student's bench
// child and in the yardstick (OpenBLAS, the probes): one untimed run, then runs until the budget
// is spent (at least kMinRuns, at most kMaxRuns), and the median with the fastest and slowest
// run. The median is what the tables compare; the two others show how noisy the machine was.
//
// The student's code is linked into the program that times it, so the timing must not take its
// word for anything:
//   - the clock is the kernel's (runner/harness/trusted_clock.h): a function of the student's
//     named clock_gettime would otherwise take the C library's place for every caller in the
//     program; and the C library's clock is read beside it, so a program whose clock
//     disagrees with the system's gets no figure (kClockDisagreed);
//   - with Evidence (what the timed code writes), the output is cleared before each timed run
//     and must come back as the untimed first run wrote it: code that skips work once it is
//     being timed gets no figure (kRecomputeFailed).
// Either refusal comes back as a Timing whose runs is the refusal's code (TimingRefusal says it
// in words); the drivers print no figure for it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <vector>

#include "runner/harness/trusted_clock.h"

namespace wb::stage03 {

struct Timing {
  double median = 0;  // seconds
  double fastest = 0;
  double slowest = 0;
  int runs = 0;
};

inline constexpr int kMinRuns = 3;
inline constexpr int kMaxRuns = 200;
inline constexpr int kRecomputeFailed = -1;  // Timing::runs: the timed runs did not rewrite the output
inline constexpr int kClockDisagreed = -2;   // Timing::runs: the program's clock is not the system's

// What the timed code writes, cleared before each timed run and compared afterwards.
struct Evidence {
  float* data = nullptr;
  size_t count = 0;
};

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
Timing Measure(const Run& run, double budgetSeconds, Evidence evidence = {}) {
  using LibraryClock = std::chrono::steady_clock;
  run();  // warm: pages, caches, the OpenMP thread pool
  std::vector<float> first;
  if (evidence.data != nullptr) first.assign(evidence.data, evidence.data + evidence.count);
  std::vector<double> seconds;
  double spent = 0, librarySpent = 0;
  while (static_cast<int>(seconds.size()) < kMaxRuns &&
         (static_cast<int>(seconds.size()) < kMinRuns || spent < budgetSeconds)) {
    if (evidence.data != nullptr) {
      std::fill(evidence.data, evidence.data + evidence.count, std::numeric_limits<float>::quiet_NaN());
    }
    const auto libraryStart = LibraryClock::now();
    const double start = TrustedSeconds();
    run();
    const double took = TrustedSeconds() - start;
    librarySpent += std::chrono::duration<double>(LibraryClock::now() - libraryStart).count();
    seconds.push_back(took);
    spent += took;
  }
  if (evidence.data != nullptr && std::memcmp(first.data(), evidence.data, evidence.count * sizeof(float)) != 0) {
    return {0, 0, 0, kRecomputeFailed};
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
// What one bench child measures: the four matmul shapes, then fused_block.
inline constexpr int kBenchMeasurements = kBenchShapeCount + 1;
inline constexpr int kTimingFloats = 4;  // median, fastest, slowest, runs
inline constexpr int kBenchLargestT = 512;

}  // namespace wb::stage03
