#include "decode_child.h"

#include <algorithm>

#include "runner/engine/crash_description.h"
#include "runner/isolation/shared_region.h"

namespace wb::stage02 {
namespace {

using L = DecodeCall;

L::Buffer BufferOf(ref::Checkpoint c) { return static_cast<L::Buffer>(L::kFirstOutput + ref::Index(c)); }

}  // namespace

Expected<CallRun> RunCallInChild(const DecodeCase& data, const ref::DecodeCall& call, int callIndex,
                                 const CacheState& before, const StageContext& context) {
  const auto x = data.X(call);
  std::array<BufferSize, L::kBufferCount> sizes{};
  sizes[L::kW] = {data.weights.size(), shm::kReadOnly};
  sizes[L::kX] = {x.size(), shm::kReadOnly};
  sizes[L::kRopeCos] = {data.ropeCos.size(), shm::kReadOnly};
  sizes[L::kRopeSin] = {data.ropeSin.size(), shm::kReadOnly};
  sizes[L::kKCache] = {before.keys.size(), shm::kWritable};
  sizes[L::kVCache] = {before.values.size(), shm::kWritable};
  for (ref::Checkpoint c : ref::kCheckpointOrder) {
    sizes[BufferOf(c)] = {static_cast<size_t>(call.n) * ref::CheckpointWidth(c, data.shape), shm::kWritable};
  }
  auto created = SharedRegion::Create<L>(sizes);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  std::ranges::copy(data.weights, region.Floats<L>(L::kW).begin());
  std::ranges::copy(x, region.Floats<L>(L::kX).begin());
  std::ranges::copy(data.ropeCos, region.Floats<L>(L::kRopeCos).begin());
  std::ranges::copy(data.ropeSin, region.Floats<L>(L::kRopeSin).begin());
  region.PoisonOutputs();  // the caches too; what earlier calls wrote goes back in next
  std::ranges::copy(before.keys, region.Floats<L>(L::kKCache).begin());
  std::ranges::copy(before.values, region.Floats<L>(L::kVCache).begin());
  region.SetParams<L>({.tokens = call.n, .position = call.pos, .callIndex = static_cast<uint32_t>(callIndex)});

  auto ran = RunInChild(context.harness, region, context.limits);
  if (!ran.ok()) return ran.error();
  CallRun run;
  run.outcome = std::move(*ran);
  std::vector<uint32_t> outputs;
  for (ref::Checkpoint c : ref::kCheckpointOrder) {
    const auto values = region.Floats<L>(BufferOf(c));
    run.buffers[ref::Index(c)].assign(values.begin(), values.end());
    outputs.push_back(BufferOf(c));
  }
  const auto keys = region.Floats<L>(L::kKCache);
  const auto values = region.Floats<L>(L::kVCache);
  run.cacheAfter.keys.assign(keys.begin(), keys.end());
  run.cacheAfter.values.assign(values.begin(), values.end());
  run.ending = DescribeEnding(run.outcome, region, context.stage->function, context.limits.wallSeconds,
                              context.limits.memoryBytes);
  run.canaryNotes = DescribeCanaryDamage(region);
  run.written = DescribeWritten(region, outputs);
  return run;
}

}  // namespace wb::stage02
