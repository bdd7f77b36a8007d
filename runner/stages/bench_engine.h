// How a bench times the student's code: by the runner's clock, from outside the child, so that
// nothing the code does inside its own process (a clock of its own, a patched timer) can change
// a figure, and every figure rests on calls whose output the runner has checked.
//
// Contract: a measurement is a child that makes one untimed call (pages, caches, thread pools,
// the optional packing step), stops itself (Region::StartTimedCalls: the runner writes the
// seed of the timed calls' inputs and starts its clock as it resumes the child,
// ChildLimits::resumeStops), makes `calls` timed calls, each on inputs of its own made from
// that seed (runner/stages/timed_inputs.h) and writing into an output slot, and exits; the
// same child with `callsSkipped` does everything but those calls (making the inputs, and the
// exit). RunBatch starts one such child and returns its time from the resuming to its reaping
// and its seed, or why its figures cannot be used: it did not return, or what a timed call
// wrote is not what it must be (the caller checks the kept calls' outputs for elements never
// written, and calls and elements drawn at random after the child has ended, BenchRandom,
// against the reference on that call's inputs).
//
// Call c writes output slot c % slots, of OutputSlots(bytes of a call's output): as many as
// kOutputSlotBytes holds, so that the outputs stay in the caches as a decoder's reused buffers
// do (a slot of fresh memory for every call made the stage-3 matmul at T = 512 12 % slower),
// and the last min(calls, slots) calls' outputs are there to check (OutputSlotRing).
//
// TimeCallsFromOutside spends `budgetSeconds` on the timed batches together. A first child with
// its one call skipped says what a child costs besides its calls; then it finds how many calls
// (at least kLeastCallsInBatch) do work for at least half of a batch's share, budgetSeconds /
// kBatchesTimed (starting from one, growing at most a hundredfold a round), runs
// kBatchesTimed batches of that many calls, then as many of the children with the calls
// skipped (one of each when a single call outlasts the whole budget: it is timed once). A
// call's time is (batch - the fastest skipped one) / calls: the median over the batches is the
// figure, the fastest and slowest its spread; runs is the number of timed calls. A busy machine
// only lengthens a child, so the fastest skipped one is the least disturbed. Any child's
// failure ends the measurement and comes back as OutsideTiming::failure, with no figure.
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
// What a batch's output slots may take together: a share of a core's L2 and the L3 beside it.
inline constexpr size_t kOutputSlotBytes = size_t{4} << 20;

// How many output slots a measurement whose calls write `bytesPerCall` has: as many as
// kOutputSlotBytes holds, at least kLeastCallsInBatch.
int OutputSlots(size_t bytesPerCall);

// A batch's output slots after its child has ended: `floats` holds `count` slots of `perCall`
// floats, and call c of the batch's `calls` wrote slot c % count, so the last Kept() calls'
// outputs are there.
struct OutputSlotRing {
  std::span<const float> floats;
  int count = 1;
  size_t perCall = 0;
  int calls = 0;
  int Kept() const { return calls < count ? calls : count; }
  int FirstKept() const { return calls - Kept(); }
  std::span<const float> Of(int call) const {
    return floats.subspan(static_cast<size_t>(call % count) * perCall, perCall);
  }
  // A kept call, drawn at random (DrawBelow).
  int DrawKept() const;
};

struct OutsideTiming {
  CallTiming timing;
  std::string failure;  // "" when timing is a measurement
};

Expected<OutsideTiming> TimeCallsFromOutside(const RunBatch& run, double budgetSeconds);

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

// Timed calls kept for a check made once the whole measurement is over (the blocks', whose
// float64 reference is too slow to run on every batch): one kept call of each batch, drawn at
// random, with its batch's seed and call count and what it wrote; DrawOne picks the call that
// is checked only then, so no batch could know whether it is the one.
struct KeptCall {
  uint64_t seed = 0;
  int call = 0;
  int calls = 0;
  std::vector<float> output;
};
class KeptCalls {
 public:
  void KeepDrawn(const OutputSlotRing& slots, uint64_t seed);
  bool empty() const { return kept_.empty(); }
  const KeptCall& DrawOne() const;

 private:
  std::vector<KeptCall> kept_;
};

// One measurement of a bench, as a driver describes it: its name, where its calls write and
// how wide, how to tell a batch's child what to do, and how the runner checks what the kept calls
// wrote. TimeMeasurement does the rest (the poisoning, the children, the unwritten check, the
// draws). Set one of the two checks, or both:
//   checkBatch  every batch's kept calls, checked as soon as its child has ended (a sample
//               against the reference: the matmuls');
//   checkKept   one kept call of each batch kept (KeptCalls), and one of them checked once the
//               measurement is over (the blocks', whose float64 reference is too slow for every
//               batch).
// Each returns "" when what it checked is right, or what is wrong in words; every refusal
// begins with `name`.
struct BenchMeasurement {
  std::string name;              // "matmul qkv", "quant_block on q8_0 at T = 16"
  size_t perCall = 0;            // floats one call writes
  size_t rowWidth = 1;           // floats in one row of them, to name an element's row and column
  int slots = 0;                 // OutputSlots(perCall * sizeof(float))
  std::span<const float> slotFloats;  // the region's output slots: at least slots * perCall floats
  std::function<void(int calls, bool callsSkipped)> setParams;  // the region's parameters for one batch
  std::function<std::string(const OutputSlotRing& wrote, uint64_t seed)> checkBatch;
  std::function<std::string(const KeptCall& kept)> checkKept;
};

// Times `measurement` from outside (TimeCallsFromOutside over children of `harness` on `region`,
// under `limits` with BatchWallSeconds(budgetSeconds)), checking every batch as the measurement
// says; a failure, its name first, ends it with no figure.
Expected<OutsideTiming> TimeMeasurement(const BenchMeasurement& measurement, const std::string& harness,
                                        SharedRegion& region, ChildLimits limits, double budgetSeconds);

// The first kept call whose output holds an element never written (still the region's
// poison): the call and the element's index in its slot.
struct UnwrittenOutput {
  int call = 0;
  size_t element = 0;
};
std::optional<UnwrittenOutput> FindUnwritten(const OutputSlotRing& slots);
// The same, in words for the refusal ("timed call 3 of 8: its output at row 0, column 5 was
// never written: ..."), rows `width` elements wide; "" when every element was written.
std::string UnwrittenOutputText(const OutputSlotRing& slots, size_t width);

// How far above the machine's roof (the best reading its probe gave) a figure may lie before
// the bench refuses to print it. The probe and the code are timed at different moments, and on a
// busy machine a probe can come out at a fraction of the truth, so only a figure ten times the
// roof is refused: skipped work and a replaced clock gave thousands.
inline constexpr double kBeyondRoof = 10;
// The refusal for `figure` (in `unit`) when it lies beyond kBeyondRoof x `roof`, "" when it does
// not: "WHAT: 2500.0 GFLOP/s would be 10 times ROOF, which no code reaches: ...". `roofText`
// names the roof with its figure ("this machine's FMA peak of 250.0 GFLOP/s").
std::string BeyondRoofText(const std::string& what, double figure, const std::string& unit, double roof,
                           const std::string& roofText);

// Words for a timed call whose output the check found never written: the call skipped its work.
inline constexpr const char* kSkippedWorkText =
    "was never written: each timed call has an output slot, and the bench checks the last calls' after the child "
    "has ended. No figure is printed for code that skips work when it is timed";
// Words for one that was written but wrong.
inline constexpr const char* kWrongWhenTimedText =
    "the bench checks what calls drawn at random wrote, on inputs made for each timed call, and this one is wrong";

}  // namespace wb
