#include "bench_driver.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "bench_call.h"
#include "reference/block/block.h"
#include "reference/gen/block_data.h"
#include "runner/isolation/shared_region.h"
#include "runner/stages/bench_engine.h"

namespace wb::stage02 {
namespace {

using BenchLayout = BenchCall;

std::string Duration(double seconds) {
  if (seconds >= 1.0) return fmt::format("{:.2f} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.1f} us", seconds * 1e6);
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
  const int longest = *std::max_element(contexts.begin(), contexts.end());
  const std::vector<float> x = ref::GenerateInputRows(1, longest, shape.model, 1.0);
  std::vector<float> ropeCos;
  std::vector<float> ropeSin;
  ref::MakeFloatRopeTables(kCacheRows, shape.headDim, ref::kRopeBase, ropeCos, ropeSin);
  const std::vector<float> kCache = ref::GenerateInputRows(2, kCacheRows, kCacheWidth, 1.0);
  const std::vector<float> vCache = ref::GenerateInputRows(3, kCacheRows, kCacheWidth, 1.0);

  std::printf("Stage 2 bench: the time to produce one more token at context length L\n");
  std::printf("  decode step: decoder_step(n=1, pos=L-1), which reads L-1 cached rows\n");
  std::printf("  recompute:   decoder_step(n=L, pos=0), the whole sequence again, as without a cache\n");
  std::printf("  each time is the median of three batches of calls, each batch a child process timed by the\n"
              "  runner's clock from outside; runs counts the timed calls\n\n");
  std::printf("%8s  %12s %5s  %12s %5s  %10s\n", "context", "decode step", "runs", "recompute", "runs", "ratio");
  std::fflush(stdout);
  for (int length : contexts) {
    std::array<BufferSize, BenchLayout::kBufferCount> sizes{};
    sizes[BenchLayout::kW] = {weights.values.size(), shm::kReadOnly};
    sizes[BenchLayout::kX] = {static_cast<size_t>(length) * shape.model, shm::kReadOnly};
    sizes[BenchLayout::kRopeCos] = {ropeCos.size(), shm::kReadOnly};
    sizes[BenchLayout::kRopeSin] = {ropeSin.size(), shm::kReadOnly};
    sizes[BenchLayout::kKCache] = {kCache.size(), shm::kWritable};
    sizes[BenchLayout::kVCache] = {vCache.size(), shm::kWritable};
    for (ref::Checkpoint c : ref::kCheckpointOrder) {
      sizes[BenchLayout::kNorm1 + ref::Index(c)] = {static_cast<size_t>(length) * ref::CheckpointWidth(c, shape),
                                          shm::kWritable};
    }
    auto created = SharedRegion::Create<BenchLayout>(sizes);
    if (!created.ok()) return created.error();
    SharedRegion& region = *created;
    region.PoisonOutputs();
    std::copy(weights.values.begin(), weights.values.end(), region.Floats<BenchLayout>(BenchLayout::kW).begin());
    std::copy(x.begin(), x.begin() + static_cast<ptrdiff_t>(length) * shape.model, region.Floats<BenchLayout>(BenchLayout::kX).begin());
    std::ranges::copy(ropeCos, region.Floats<BenchLayout>(BenchLayout::kRopeCos).begin());
    std::ranges::copy(ropeSin, region.Floats<BenchLayout>(BenchLayout::kRopeSin).begin());
    std::ranges::copy(kCache, region.Floats<BenchLayout>(BenchLayout::kKCache).begin());
    std::ranges::copy(vCache, region.Floats<BenchLayout>(BenchLayout::kVCache).begin());

    ChildLimits limits = context.limits;
    limits.wallSeconds = BatchWallSeconds(budget);
    CallTiming timings[2];
    for (const BenchLayout::Measurement m : {BenchLayout::kDecodeStep, BenchLayout::kRecompute}) {
      const char* what = m == BenchLayout::kDecodeStep ? "decode step" : "recompute";
      std::vector<float> first;  // what the first batch's last call wrote
      RunBatch batch = [&](int calls, bool callsSkipped) -> Expected<BatchRun> {
        const BenchLayout::Params params{
            .context = length, .measurement = m, .calls = calls, .callsSkipped = callsSkipped ? 1 : 0};
        region.SetParams<BenchLayout>(params);
        auto r = RunBatchChild(context.harness, region, limits, context.stage->function);
        if (!r.ok() || !r->failure.empty() || callsSkipped) return r;
        const std::span<const float> wrote = region.Floats<BenchLayout>(BenchLayout::kOutput)
                                                 .first(static_cast<size_t>(BenchLayout::OutputRows(params)) * shape.model);
        if (!SameAsFirstBatch(first, wrote)) r->failure = fmt::format("{}: {}.", what, kSkippedWorkText);
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
