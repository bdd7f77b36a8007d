// The bench engine's outside timing (bench_engine.h).
#include "runner/stages/bench_engine.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace wb {

double BatchWallSeconds(double budgetSeconds) { return 120 + 20 * budgetSeconds; }

Expected<OutsideTiming> TimeCallsFromOutside(const RunBatch& run, double budgetSeconds) {
  OutsideTiming result;
  // One child; nullopt (with result.failure set) when its figures cannot be used.
  auto once = [&](int calls, bool callsSkipped) -> Expected<std::optional<double>> {
    Expected<BatchRun> ran = run(calls, callsSkipped);
    if (!ran.ok()) return ran.error();
    if (!ran->failure.empty()) {
      result.failure = ran->failure;
      return std::optional<double>{};
    }
    return std::optional<double>{ran->seconds};
  };

  // Size the batch: grow the calls until the batch takes at least half the budget. The batch's
  // own time stands for its calls' here (it also holds the exit, which only makes the sizing
  // err on the side of fewer calls).
  int calls = 1;
  std::vector<double> batches, startups;
  for (int round = 0;; ++round) {
    auto batch = once(calls, false);
    if (!batch.ok()) return batch.error();
    if (!*batch) return result;
    const double seconds = **batch;
    if (seconds >= budgetSeconds / 2 || calls >= kMostCallsInBatch || round + 1 >= kMostSizingRounds) {
      batches.push_back(seconds);  // the first timed batch
      break;
    }
    const double wanted = seconds > 0 ? std::ceil(budgetSeconds * calls / seconds) : INFINITY;
    calls = static_cast<int>(std::min(std::clamp(wanted, 2.0 * calls, 100.0 * calls), double(kMostCallsInBatch)));
  }
  while (static_cast<int>(batches.size()) < kBatchesTimed) {
    auto batch = once(calls, false);
    if (!batch.ok()) return batch.error();
    if (!*batch) return result;
    batches.push_back(**batch);
  }
  while (static_cast<int>(startups.size()) < kBatchesTimed) {
    auto startup = once(calls, true);
    if (!startup.ok()) return startup.error();
    if (!*startup) return result;
    startups.push_back(**startup);
  }
  const double startup = *std::min_element(startups.begin(), startups.end());
  std::vector<double> perCall;
  // A call takes some time: a batch that came out no longer than the fastest start-up (noise
  // on a tiny batch) counts a nanosecond a call, never zero or less.
  for (double b : batches) perCall.push_back(std::max(b - startup, 1e-9 * calls) / calls);
  std::sort(perCall.begin(), perCall.end());
  const size_t n = perCall.size();
  result.timing = {.median = n % 2 == 1 ? perCall[n / 2] : (perCall[n / 2 - 1] + perCall[n / 2]) / 2,
                   .fastest = perCall.front(),
                   .slowest = perCall.back(),
                   .runs = calls * static_cast<int>(n)};
  return result;
}

}  // namespace wb
