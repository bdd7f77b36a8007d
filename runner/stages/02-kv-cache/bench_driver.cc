#include "bench_driver.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "bench_call.h"
#include "reference/block/block.h"
#include "reference/decode/decode.h"
#include "reference/gen/block_data.h"
#include "runner/compare/block_tolerances.h"
#include "runner/compare/compare.h"
#include "runner/isolation/shared_region.h"
#include "runner/stages/bench_engine.h"
#include "runner/stages/bench_support.h"
#include "runner/stages/timed_inputs.h"

namespace wb::stage02 {
namespace {

using BenchLayout = BenchCall;

// What the bench's checks read: the block's weights, the RoPE tables and the cache the runner
// laid out, as doubles.
struct BenchReference {
  ref::BlockShape shape;
  ref::BlockWeights weights;
  std::vector<double> ropeCos, ropeSin, kCache, vCache;
};

// The float64 output of `n` tokens at positions pos .. pos + n - 1 on rows `x`, reading the
// runner's cache for the rows before pos and the call's own keys and values for its rows: the
// stage-2 reference's definition (reference/decode/decode.h), step by step.
std::vector<double> ReferenceOutput(const BenchReference& r, std::span<const float> x, int pos, int n) {
  const ref::DecodeCall call{.pos = pos, .n = n};
  const std::vector<double> xd(x.begin(), x.end());
  const ref::BlockInputs inputs = ref::CallInputs(call, xd, r.ropeCos, r.ropeSin, r.shape.ropePairs(), {});
  const size_t kv = static_cast<size_t>(r.shape.kvWidth());
  ref::BlockState state;
  for (ref::Checkpoint c : ref::kCheckpointOrder) {
    if (c != ref::Checkpoint::kAttnOut) {
      state[ref::Index(c)] = ref::ComputeCheckpoint(c, r.shape, {}, r.weights, inputs, state);
      continue;
    }
    std::vector<double> keys(r.kCache.begin(), r.kCache.begin() + static_cast<ptrdiff_t>(size_t(pos) * kv));
    std::vector<double> values(r.vCache.begin(), r.vCache.begin() + static_cast<ptrdiff_t>(size_t(pos) * kv));
    const std::vector<double> own = ref::CachedKeyRows(r.shape, r.weights, call, state[ref::Index(ref::Checkpoint::kNorm1)],
                                                       state[ref::Index(ref::Checkpoint::kK)], {});
    keys.insert(keys.end(), own.begin(), own.end());
    const std::vector<double>& v = state[ref::Index(ref::Checkpoint::kV)];
    values.insert(values.end(), v.begin(), v.end());
    std::vector<double> out(static_cast<size_t>(n) * r.shape.qWidth());
    ref::AttendCached(state[ref::Index(ref::Checkpoint::kQ)], keys, values, call, r.shape, {}, {}, out);
    state[ref::Index(c)] = std::move(out);
  }
  return state[ref::Index(ref::Checkpoint::kOutput)];
}

// A kept call of each batch, drawn at random, checked against the reference on that call's
// rows of x (made again from the batch's seed), within the tolerance the stage's checks give
// the output: the decode step's one row over the cache; of a recompute, its first row (a token
// alone: the whole L rows would take the reference far longer than the bench, and a recompute
// that skips work only makes the cache's gain look smaller).
std::string CheckDrawnCall(const BenchReference& r, const OutputSlotRing& slots, uint64_t seed, int length,
                           BenchCall::Measurement m) {
  const int c = slots.DrawKept();
  const size_t D = static_cast<size_t>(r.shape.model);
  std::vector<float> row(D);
  TimedInputs(seed, BenchCall::kTimedX, static_cast<uint32_t>(c)).Fill(row.data(), D);
  const std::vector<double> expected =
      m == BenchCall::kDecodeStep ? ReferenceOutput(r, row, length - 1, 1) : ReferenceOutput(r, row, 0, 1);
  if (Matches(slots.Of(c).first(D), expected, BlockTolerance(ref::Checkpoint::kOutput))) return "";
  return fmt::format("timed call {} of {} wrote an output the reference does not: {}", c + 1, slots.calls,
                     kWrongWhenTimedText);
}

}  // namespace

Status CheckDecodeBenchOptions(const BenchOptions& options) {
  if (!options.tokens.empty() || !options.plotPath.empty() || options.format != "text") {
    return BadUsage("stage 2's bench takes --contexts and --budget, and prints a table: --tokens, --plot and "
                    "--format are stage 3's");
  }
  for (int c : options.contexts) {
    if (c < 1 || c > kCacheRows) {
      return BadUsage(fmt::format("--contexts: {} is not a context length from 1 to {}", c, kCacheRows));
    }
  }
  return Status::Ok();
}

Expected<int> RunDecodeBench(const PackedWeights& weights, const BenchOptions& options, const StageContext& context) {
  if (Status usage = CheckDecodeBenchOptions(options); !usage.ok()) return usage.error();
  const std::vector<int> contexts = options.contexts.empty() ? std::vector<int>{512, 4096} : options.contexts;
  const double budget = options.budgetSeconds > 0 ? options.budgetSeconds : 6.0;
  const ref::BlockShape shape = ref::Stage1Shape();
  std::vector<float> ropeCos;
  std::vector<float> ropeSin;
  ref::MakeFloatRopeTables(kCacheRows, shape.headDim, ref::kRopeBase, ropeCos, ropeSin);
  const std::vector<float> kCache = ref::GenerateInputRows(2, kCacheRows, kCacheWidth, 1.0);
  const std::vector<float> vCache = ref::GenerateInputRows(3, kCacheRows, kCacheWidth, 1.0);
  const BenchReference reference{.shape = shape,
                                 .weights = ref::ViewPacked(shape, weights.values),
                                 .ropeCos = {ropeCos.begin(), ropeCos.end()},
                                 .ropeSin = {ropeSin.begin(), ropeSin.end()},
                                 .kCache = {kCache.begin(), kCache.end()},
                                 .vCache = {vCache.begin(), vCache.end()}};

  std::printf("Stage 2 bench: the time to produce one more token at context length L\n");
  std::printf("  decode step: decoder_step(n=1, pos=L-1), which reads L-1 cached rows\n");
  std::printf("  recompute:   decoder_step(n=L, pos=0), the whole sequence again, as without a cache\n");
  std::printf("  each time is the median of three batches of calls, each batch a child process timed by the\n"
              "  runner's clock from outside; runs counts the timed calls\n\n");
  std::printf("%8s  %12s %5s  %12s %5s  %10s\n", "context", "decode step", "runs", "recompute", "runs", "ratio");
  std::fflush(stdout);
  for (int length : contexts) {
    // Each measurement's output slots (OutputSlots), and one for the untimed call.
    auto slotsFor = [&](BenchLayout::Measurement m) {
      return OutputSlots(size_t(m == BenchLayout::kDecodeStep ? 1 : length) * shape.model * sizeof(float));
    };
    std::array<BufferSize, BenchLayout::kBufferCount> sizes{};
    sizes[BenchLayout::kW] = {weights.values.size(), shm::kReadOnly};
    sizes[BenchLayout::kX] = {static_cast<size_t>(length) * shape.model, shm::kWritable};
    sizes[BenchLayout::kRopeCos] = {ropeCos.size(), shm::kReadOnly};
    sizes[BenchLayout::kRopeSin] = {ropeSin.size(), shm::kReadOnly};
    sizes[BenchLayout::kKCache] = {kCache.size(), shm::kWritable};
    sizes[BenchLayout::kVCache] = {vCache.size(), shm::kWritable};
    for (ref::Checkpoint c : ref::kCheckpointOrder) {
      sizes[BenchLayout::kNorm1 + ref::Index(c)] = {static_cast<size_t>(length) * ref::CheckpointWidth(c, shape),
                                                    shm::kWritable};
    }
    sizes[BenchLayout::kOutput].floats =
        std::max(size_t(slotsFor(BenchLayout::kDecodeStep) + 1) * shape.model,
                 size_t(slotsFor(BenchLayout::kRecompute) + 1) * size_t(length) * shape.model);
    auto created = SharedRegion::Create<BenchLayout>(sizes);
    if (!created.ok()) return created.error();
    SharedRegion& region = *created;
    std::copy(weights.values.begin(), weights.values.end(), region.Floats<BenchLayout>(BenchLayout::kW).begin());
    std::ranges::copy(ropeCos, region.Floats<BenchLayout>(BenchLayout::kRopeCos).begin());
    std::ranges::copy(ropeSin, region.Floats<BenchLayout>(BenchLayout::kRopeSin).begin());

    ChildLimits limits = context.limits;
    limits.wallSeconds = BatchWallSeconds(budget);
    CallTiming timings[2];
    for (const BenchLayout::Measurement m : {BenchLayout::kDecodeStep, BenchLayout::kRecompute}) {
      const char* what = m == BenchLayout::kDecodeStep ? "decode step" : "recompute";
      const int slotCount = slotsFor(m);
      RunBatch batch = [&](int calls, bool callsSkipped) -> Expected<BatchRun> {
        const BenchLayout::Params params{.context = length, .measurement = m, .calls = calls,
                                         .callsSkipped = callsSkipped ? 1 : 0, .slots = slotCount};
        region.PoisonOutputs();
        // The cache as the runner made it: a step writes its own row, and any code could write
        // the others.
        std::ranges::copy(kCache, region.Floats<BenchLayout>(BenchLayout::kKCache).begin());
        std::ranges::copy(vCache, region.Floats<BenchLayout>(BenchLayout::kVCache).begin());
        region.SetParams<BenchLayout>(params);
        auto r = RunBatchChild(context.harness, region, limits, context.stage->function);
        if (!r.ok() || !r->failure.empty() || callsSkipped) return r;
        const size_t perCall = static_cast<size_t>(BenchLayout::OutputRows(params)) * shape.model;
        const OutputSlotRing wrote{
            .floats = region.Floats<BenchLayout>(BenchLayout::kOutput).first(size_t(slotCount) * perCall),
            .count = slotCount, .perCall = perCall, .calls = calls};
        if (const std::string unwritten = UnwrittenOutputText(wrote, shape.model); !unwritten.empty()) {
          r->failure = fmt::format("{}: {}.", what, unwritten);
        } else if (const std::string wrong = CheckDrawnCall(reference, wrote, r->seed, length, m);
                   !wrong.empty()) {
          r->failure = fmt::format("{}: {}.", what, wrong);
        }
        return r;
      };
      auto timed = TimeCallsFromOutside(batch, budget);
      if (!timed.ok()) return timed.error();
      if (!timed->failure.empty()) {
        std::printf("%8d  %s\n", length, timed->failure.c_str());
        return 1;
      }
      timings[m] = timed->timing;
    }
    const CallTiming& step = timings[BenchLayout::kDecodeStep];
    const CallTiming& again = timings[BenchLayout::kRecompute];
    std::printf("%8d  %12s %5d  %12s %5d  %9.0fx\n", length, Duration(step.median).c_str(), step.runs,
                Duration(again.median).c_str(), again.runs, again.median / step.median);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace wb::stage02
