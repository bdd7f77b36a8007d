// The bench engine's outside timing (bench_engine.h).
#include "runner/stages/bench_engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "runner/compare/compare.h"
#include "runner/engine/case_verdict.h"
#include "runner/engine/crash_description.h"

namespace wb {

double BatchWallSeconds(double budgetSeconds) { return 120 + 20 * budgetSeconds; }

Expected<BatchRun> RunBatchChild(const std::string& harness, SharedRegion& region, ChildLimits limits,
                                 const std::string& function) {
  limits.resumeStops = true;  // the child stops when its timed calls begin: the runner's clock starts there
  auto ran = RunInChild(harness, region, limits);
  if (!ran.ok()) return ran.error();
  BatchRun run{.seconds = ran->timedSeconds, .failure = "", .seed = ran->timedSeed};
  if (ran->ending != ChildOutcome::Ending::kReturned) {
    run.failure = DescribeEnding(*ran, region, function, limits.wallSeconds, limits.memoryBytes);
    if (const std::string output = ChildOutputText(*ran); !output.empty()) run.failure += "\n" + output;
  } else if (ran->timedSeconds < 0) {
    run.failure = "the bench's child ended without starting its timed calls: this is a bug in the workbook";
  }
  return run;
}

int OutputSlots(size_t bytesPerCall) {
  const size_t fit = kOutputSlotBytes / std::max<size_t>(bytesPerCall, 1);
  return static_cast<int>(std::clamp<size_t>(fit, kLeastCallsInBatch, kMostCallsInBatch));
}

std::mt19937_64& BenchRandom() {
  static std::mt19937_64 random = [] {
    std::random_device source;
    std::seed_seq seeds{source(), source(), source(), source()};
    return std::mt19937_64(seeds);
  }();
  return random;
}

std::optional<UnwrittenOutput> FindUnwritten(const OutputSlotRing& slots) {
  for (int c = slots.FirstKept(); c < slots.calls; ++c) {
    const std::span<const float> slot = slots.Of(c);
    for (size_t i = 0; i < slot.size(); ++i) {
      if (StateOf(slot[i]) == ElementState::kUnwritten) return UnwrittenOutput{.call = c, .element = i};
    }
  }
  return std::nullopt;
}

std::string UnwrittenOutputText(const OutputSlotRing& slots, size_t width) {
  const std::optional<UnwrittenOutput> unwritten = FindUnwritten(slots);
  if (!unwritten) return "";
  width = std::max<size_t>(width, 1);
  return fmt::format("timed call {} of {}: its output at row {}, column {} {}", unwritten->call + 1, slots.calls,
                     unwritten->element / width, unwritten->element % width, kSkippedWorkText);
}

void KeptCalls::KeepDrawn(const OutputSlotRing& slots, uint64_t seed) {
  const int call = slots.DrawKept();
  const std::span<const float> output = slots.Of(call);
  kept_.push_back({.seed = seed, .call = call, .calls = slots.calls, .output = {output.begin(), output.end()}});
}

const KeptCall& KeptCalls::DrawOne() const {
  return kept_[static_cast<size_t>(DrawBelow(static_cast<int>(kept_.size())))];
}

int OutputSlotRing::DrawKept() const { return FirstKept() + DrawBelow(Kept()); }

int DrawBelow(int count) { return std::uniform_int_distribution<int>(0, std::max(count, 1) - 1)(BenchRandom()); }

Expected<OutsideTiming> TimeCallsFromOutside(const RunBatch& run, double budgetSeconds) {
  const double batchSeconds = budgetSeconds / kBatchesTimed;
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

  // What a child costs besides its calls (the clearing before each, its exit): a first child
  // with its one call skipped. The sizing takes it off each batch's time.
  auto fixed = once(1, true);
  if (!fixed.ok()) return fixed.error();
  if (!*fixed) return result;
  const double fixedSeconds = **fixed;

  // Size the batch: grow the calls until their work fills at least half the batch's share, and
  // is at least kLeastCallsInBatch calls (so that work a child leaves undone after its first
  // timed call shows), unless one call outlasts the whole budget: that one is timed once.
  int calls = 1;
  int batchesWanted = kBatchesTimed;
  std::vector<double> batches, startups;
  for (int round = 0;; ++round) {
    auto batch = once(calls, false);
    if (!batch.ok()) return batch.error();
    if (!*batch) return result;
    const double seconds = **batch;
    const double work = std::max(seconds - fixedSeconds, 0.0);
    if (calls == 1 && work >= budgetSeconds) {
      batches.push_back(seconds);
      batchesWanted = 1;
      break;
    }
    if ((work >= batchSeconds / 2 && calls >= kLeastCallsInBatch) || calls >= kMostCallsInBatch ||
        round + 1 >= kMostSizingRounds) {
      batches.push_back(seconds);  // the first timed batch
      break;
    }
    const double wanted = work > 0 ? std::ceil(batchSeconds * calls / work) : INFINITY;
    calls = static_cast<int>(std::min(std::clamp(wanted, 2.0 * calls, 100.0 * calls), double(kMostCallsInBatch)));
  }
  if (calls == 1) startups.push_back(fixedSeconds);  // the first child was this size
  while (static_cast<int>(batches.size()) < batchesWanted) {
    auto batch = once(calls, false);
    if (!batch.ok()) return batch.error();
    if (!*batch) return result;
    batches.push_back(**batch);
  }
  while (static_cast<int>(startups.size()) < batchesWanted) {
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

std::string BeyondRoofText(const std::string& what, double figure, const std::string& unit, double roof,
                           const std::string& roofText) {
  if (!(figure > kBeyondRoof * roof)) return "";
  return fmt::format("{}: {:.1f} {} would be {:.0f} times {}, which no code reaches: the timing is not to be trusted, "
                     "and no figure is printed.",
                     what, figure, unit, figure / roof, roofText);
}

Expected<OutsideTiming> TimeMeasurement(const BenchMeasurement& m, const std::string& harness, SharedRegion& region,
                                        ChildLimits limits, double budgetSeconds) {
  limits.wallSeconds = BatchWallSeconds(budgetSeconds);
  const auto named = [&m](const std::string& wrong) { return fmt::format("{}: {}", m.name, wrong); };
  KeptCalls kept;
  RunBatch batch = [&](int calls, bool callsSkipped) -> Expected<BatchRun> {
    region.PoisonOutputs();
    m.setParams(calls, callsSkipped);
    auto ran = RunBatchChild(harness, region, limits, "the bench");
    if (!ran.ok()) return ran;
    if (!ran->failure.empty()) {
      ran->failure = named(ran->failure);
      return ran;
    }
    if (callsSkipped) return ran;
    const OutputSlotRing wrote{.floats = m.slotFloats.first(static_cast<size_t>(m.slots) * m.perCall),
                               .count = m.slots, .perCall = m.perCall, .calls = calls};
    std::string wrong = UnwrittenOutputText(wrote, m.rowWidth);
    if (wrong.empty() && m.checkBatch) wrong = m.checkBatch(wrote, ran->seed);
    if (!wrong.empty()) {
      ran->failure = named(wrong) + ".";
    } else if (m.checkKept) {
      kept.KeepDrawn(wrote, ran->seed);
    }
    return ran;
  };
  auto timed = TimeCallsFromOutside(batch, budgetSeconds);
  if (!timed.ok() || !timed->failure.empty() || !m.checkKept || kept.empty()) return timed;
  if (const std::string wrong = m.checkKept(kept.DrawOne()); !wrong.empty()) timed->failure = named(wrong) + ".";
  return timed;
}

}  // namespace wb
