// How a bench times the student's code: by the runner's clock, from outside the child, so that
// nothing the code does inside its own process (a clock of its own, a patched timer) can change
// a figure, and every figure rests on calls whose output the runner has checked.
//
// Contract: a measurement is a child that makes one untimed call (pages, caches, thread pools,
// the optional packing step), stops itself (Region::StartTimedCalls: the runner writes the
// seed of the timed calls' inputs and starts its clock as it resumes the child,
// ChildLimits::resumeStops), makes `calls` timed calls, each on inputs of its own made from
// that seed (runner/stages/timed_inputs.h) and writing into an output slot of its own, and
// exits; the same child with `callsSkipped` does everything but those calls (making the
// inputs, and the exit). RunBatch starts one such child and returns its time from the resuming
// to its reaping and its seed, or why its figures cannot be used (it did not return, or what
// a timed call wrote is not what it must be: the caller checks that at calls and elements
// drawn at random after the child has ended (BenchRandom), against the reference on that
// call's inputs).
//
// A call's output slot is its own so that any call may be the one checked: a batch makes at
// most OutputSlots(bytes of a call's output) calls, all their outputs held at once.
//
// TimeCallsFromOutside spends `budgetSeconds` on the timed batches together. A first child with
// its one call skipped says what a child costs besides its calls; then it finds how many calls
// (at least kLeastCallsInBatch, at most `mostCalls`) do work for at least half of a batch's
// share, budgetSeconds / kBatchesTimed (starting from one, growing at most a hundredfold a
// round), runs kBatchesTimed batches of that many calls, then as many of the children with the
// calls skipped (one of each when a single call outlasts the whole budget: it is timed once).
// A call's time is (batch - the fastest skipped one) / calls: the median over the batches is
// the figure, the fastest and slowest its spread; runs is the number of timed calls. A busy
// machine only lengthens a child, so the fastest skipped one is the least disturbed. Any
// child's failure ends the measurement and comes back as OutsideTiming::failure, with no figure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
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
  uint64_t seed = 0;    // the seed its timed calls' inputs were made from
};
using RunBatch = std::function<Expected<BatchRun>(int calls, bool callsSkipped)>;

inline constexpr int kBatchesTimed = 3;
inline constexpr int kLeastCallsInBatch = 2;
inline constexpr int kMostCallsInBatch = 1 << 20;
inline constexpr int kMostSizingRounds = 8;
// What a batch's output slots may take together.
inline constexpr size_t kOutputSlotBytes = size_t{64} << 20;

// The most calls a batch makes when each keeps `bytesPerCall` of output: as many as
// kOutputSlotBytes holds, at least kLeastCallsInBatch.
int OutputSlots(size_t bytesPerCall);

struct OutsideTiming {
  CallTiming timing;
  std::string failure;  // "" when timing is a measurement
};

Expected<OutsideTiming> TimeCallsFromOutside(const RunBatch& run, double budgetSeconds,
                                             int mostCalls = kMostCallsInBatch);

// The runner's own random source for which calls and elements it checks, seeded from the
// kernel's: drawn after a child has ended, so nothing in the child could know the draw.
std::mt19937_64& BenchRandom();
// A number from 0 to count - 1, from BenchRandom.
int DrawBelow(int count);

// The wall-clock limit a batch's child runs under: its start-up, and a budget's worth of calls
// sized from an estimate that a busy machine can make several times too small.
double BatchWallSeconds(double budgetSeconds);

// Runs one batch's child on `region` under `limits` (resumeStops set here) and returns its
// time from the resuming to its reaping, or, as the failure, how it ended when it did not
// return (DescribeEnding, naming `function`, with what it printed).
Expected<BatchRun> RunBatchChild(const std::string& harness, SharedRegion& region, ChildLimits limits,
                                 const std::string& function);

// Where the first of `calls` output slots of `perCall` floats each holds an element never
// written (still the region's poison): the call and the element's index in its slot.
struct UnwrittenOutput {
  int call = 0;
  size_t element = 0;
};
std::optional<UnwrittenOutput> FindUnwritten(std::span<const float> slots, int calls, size_t perCall);
// The same, in words for the refusal ("timed call 3 of 8: its output at row 0, column 5 was
// never written: ..."), rows `width` elements wide; "" when every element was written.
std::string UnwrittenOutputText(std::span<const float> slots, int calls, size_t perCall, size_t width);

// Words for a timed call whose output the check found never written: the call skipped its work.
inline constexpr const char* kSkippedWorkText =
    "was never written: each timed call has an output of its own, and the bench checks calls drawn at random after "
    "the child has ended. No figure is printed for code that skips work when it is timed";
// Words for one that was written but wrong.
inline constexpr const char* kWrongWhenTimedText =
    "the bench checks what calls drawn at random wrote, on inputs made for each timed call, and this one is wrong";

}  // namespace wb
