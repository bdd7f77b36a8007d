// How a bench times the student's code: by the runner's clock, from outside the child, so that
// nothing the code does inside its own process (a clock of its own, a patched timer) can change
// a figure, and every figure rests on calls whose output the runner has checked.
//
// Contract: a measurement is a child that makes one untimed call (pages, caches, thread pools,
// the optional packing step), stops itself (Region::StartTimedCalls: the runner starts its
// clock as it resumes the child, ChildLimits::resumeStops), makes `calls` timed calls and
// exits; the same child with `callsSkipped` does everything but those calls (whatever the
// harness does between calls, such as clearing the output, and the exit). RunBatch starts one
// such child and returns its time from the resuming to its reaping, or why its figures cannot
// be used (it did not return, or what its last timed call wrote is not what it must be: the
// caller checks that, against the first batch's output and, for a kernel, a sample of it
// against the reference).
//
// TimeCallsFromOutside spends `budgetSeconds` on the timed batches together. A first child with
// its one call skipped says what a child costs besides its calls; then it finds how many calls
// (at least kLeastCallsInBatch) do work for at least half of a batch's share, budgetSeconds /
// kBatchesTimed (starting from one, growing at most a hundredfold a round), runs kBatchesTimed
// batches of that many calls, then as many of the children with the calls skipped (one of each
// when a single call outlasts the whole budget: it is timed once). A call's time is
// (batch - the fastest skipped one) / calls: the median over the batches is the figure, the
// fastest and slowest its spread; runs is the number of timed calls. A busy machine only
// lengthens a child, so the fastest skipped one is the least disturbed. Any child's failure
// ends the measurement and comes back as OutsideTiming::failure, with no figure.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/expected.h"
#include "runner/isolation/child_process.h"
#include "runner/stages/call_timing.h"

namespace wb {

struct BatchRun {
  double seconds = 0;   // from the child's resuming to its reaping, by the runner's clock
  std::string failure;  // why this batch's figures cannot be used, in words; "" when they can
};
using RunBatch = std::function<Expected<BatchRun>(int calls, bool callsSkipped)>;

inline constexpr int kBatchesTimed = 3;
inline constexpr int kLeastCallsInBatch = 2;
inline constexpr int kMostCallsInBatch = 1 << 20;
inline constexpr int kMostSizingRounds = 8;

struct OutsideTiming {
  CallTiming timing;
  std::string failure;  // "" when timing is a measurement
};

Expected<OutsideTiming> TimeCallsFromOutside(const RunBatch& run, double budgetSeconds);

// The wall-clock limit a batch's child runs under: its start-up, and a budget's worth of calls
// sized from an estimate that a busy machine can make several times too small.
double BatchWallSeconds(double budgetSeconds);

// Runs one batch's child on `region` under `limits` (resumeStops set here) and returns its
// time from the resuming to its reaping, or, as the failure, how it ended when it did not
// return (DescribeEnding, naming `function`, with what it printed).
Expected<BatchRun> RunBatchChild(const std::string& harness, SharedRegion& region, ChildLimits limits,
                                 const std::string& function);

// Whether what a batch's last call wrote is, bit for bit, what the first batch's did: the
// first batch's (when `first` is empty) is kept in `first`, and matches.
bool SameAsFirstBatch(std::vector<float>& first, std::span<const float> wrote);

// Words for a batch whose last timed call did not leave what the first batch's did.
inline constexpr const char* kSkippedWorkText =
    "the timed calls did not compute their output again: the bench clears the output before each timed call, and "
    "after the last one it did not hold what the first batch's call wrote. No figure is printed for code that skips "
    "work when it is timed";

}  // namespace wb
