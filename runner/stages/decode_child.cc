#include "decode_child.h"

#include <algorithm>

#include "../isolation/shared_region.h"
#include "crash_description.h"

namespace wb {

Expected<CallRun> RunCallInChild(const DecodeCase& data, const ref::DecodeCall& call, int callIndex,
                                 const CacheState& before, const StageContext& setup) {
  const auto x = data.X(call);
  const auto bytes = [](size_t floats) { return floats * sizeof(float); };
  std::vector<BufferSpec> specs = {
      {"w", bytes(data.weights.size()), shm::kReadOnly},
      {"x", bytes(x.size()), shm::kReadOnly},
      {"ropeCos", bytes(data.ropeCos.size()), shm::kReadOnly},
      {"ropeSin", bytes(data.ropeSin.size()), shm::kReadOnly},
      {"kCache", bytes(before.keys.size()), shm::kWritable},
      {"vCache", bytes(before.values.size()), shm::kWritable},
  };
  std::vector<std::string> outputs;
  for (ref::Checkpoint c : ref::kCheckpointOrder) {
    outputs.emplace_back(ref::CheckpointName(c));
    specs.push_back({outputs.back(), bytes(static_cast<size_t>(call.n) * ref::CheckpointWidth(c, data.shape)),
                     shm::kWritable});
  }
  auto created = SharedRegion::Create(2, specs);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  std::copy(data.weights.begin(), data.weights.end(), region.Floats("w").begin());
  std::copy(x.begin(), x.end(), region.Floats("x").begin());
  std::copy(data.ropeCos.begin(), data.ropeCos.end(), region.Floats("ropeCos").begin());
  std::copy(data.ropeSin.begin(), data.ropeSin.end(), region.Floats("ropeSin").begin());
  region.PoisonOutputs();  // the caches too; what earlier calls wrote goes back in next
  std::copy(before.keys.begin(), before.keys.end(), region.Floats("kCache").begin());
  std::copy(before.values.begin(), before.values.end(), region.Floats("vCache").begin());
  region.header().params[0] = call.n;
  region.header().params[1] = call.pos;
  region.header().params[2] = callIndex;

  auto ran = RunInChild(setup.harness, region, setup.limits);
  if (!ran.ok()) return ran.error();
  CallRun run;
  run.outcome = std::move(*ran);
  for (ref::Checkpoint c : ref::kCheckpointOrder) {
    const auto values = region.Floats(ref::CheckpointName(c));
    run.buffers[ref::Index(c)].assign(values.begin(), values.end());
  }
  const auto keys = region.Floats("kCache");
  const auto values = region.Floats("vCache");
  run.cacheAfter.keys.assign(keys.begin(), keys.end());
  run.cacheAfter.values.assign(values.begin(), values.end());
  run.ending = DescribeEnding(run.outcome, region, "decoder_step", setup.limits.wallSeconds, setup.limits.memoryBytes);
  run.canaryNotes = DescribeCanaryDamage(region);
  run.written = DescribeWritten(region, outputs);
  return run;
}

}  // namespace wb
