// Stage 1's driver: one case = generate the inputs, run decoder_block in a child, describe
// the nine buffers to the checkpoint engine, conclude.
#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "block_call.h"
#include "reference/block/block.h"
#include "reference/gen/block_data.h"
#include "runner/blocks/block_weights.h"
#include "runner/compare/block_tolerances.h"
#include "runner/diagnose/misconceptions.h"
#include "runner/engine/case_verdict.h"
#include "runner/engine/checkpoint_engine.h"
#include "runner/engine/crash_description.h"
#include "runner/isolation/shared_region.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage01 {
namespace {

using L = BlockCall;
using ref::Checkpoint;

L::Buffer BufferOf(Checkpoint c) { return static_cast<L::Buffer>(L::kFirstOutput + ref::Index(c)); }

std::vector<double> ToDouble(std::span<const float> values) { return {values.begin(), values.end()}; }

std::string Parameters(const CaseSpec& spec) {
  std::string text = fmt::format("T={}, seed {}", spec.T, spec.seed);
  if (spec.xScale != 1.0) text += fmt::format(", x_scale {}", spec.xScale);
  if (spec.wScale != 1.0) text += fmt::format(", w_scale {}", spec.wScale);
  return text;
}

class BlockDriver final : public BlockWeightsDriver {
 public:
  // 10 s, more for long sequences.
  double DefaultTimeLimit(const CaseSpec& spec) const override { return std::max(10.0, 0.02 * spec.T); }

  Expected<CaseReport> RunCase(const CaseSpec& spec, const StageContext& context) const override;
};

Expected<CaseReport> BlockDriver::RunCase(const CaseSpec& spec, const StageContext& context) const {
  const ref::BlockShape shape = ref::Stage1Shape();
  const int T = spec.T;
  CaseReport report;
  report.parameters = Parameters(spec);

  // Inputs, exactly as the student's code will see them.
  std::vector<float> weights = weights_.values;
  ref::ScaleBlockMatrices(shape, weights, spec.wScale);
  const std::vector<float> x = ref::GenerateInputRows(spec.seed, T, shape.model, spec.xScale);
  std::vector<float> ropeCos;
  std::vector<float> ropeSin;
  ref::MakeFloatRopeTables(T, shape.headDim, ref::kRopeBase, ropeCos, ropeSin);

  // The shared region: inputs read-only, the nine outputs poisoned and fenced.
  std::array<BufferSize, L::kBufferCount> sizes{};
  sizes[L::kW] = {weights.size(), shm::kReadOnly};
  sizes[L::kX] = {x.size(), shm::kReadOnly};
  sizes[L::kRopeCos] = {ropeCos.size(), shm::kReadOnly};
  sizes[L::kRopeSin] = {ropeSin.size(), shm::kReadOnly};
  for (Checkpoint c : ref::kCheckpointOrder) {
    sizes[BufferOf(c)] = {static_cast<size_t>(T) * ref::CheckpointWidth(c, shape), shm::kWritable};
  }
  auto created = SharedRegion::Create<L>(sizes);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  std::ranges::copy(weights, region.Floats<L>(L::kW).begin());
  std::ranges::copy(x, region.Floats<L>(L::kX).begin());
  std::ranges::copy(ropeCos, region.Floats<L>(L::kRopeCos).begin());
  std::ranges::copy(ropeSin, region.Floats<L>(L::kRopeSin).begin());
  region.PoisonOutputs();
  region.SetParams<L>({.tokens = T});

  auto ran = RunInChild(context.harness, region, context.limits);
  if (!ran.ok()) return ran.error();
  const ChildOutcome& outcome = *ran;
  report.callSeconds = outcome.callSeconds;
  report.childOutput = ChildOutputText(outcome);

  // The reference chain, from the same float inputs.
  const std::vector<double> xd = ToDouble(x);
  const std::vector<double> cosd = ToDouble(ropeCos);
  const std::vector<double> sind = ToDouble(ropeSin);
  const ref::BlockInputs inputs{.rows = T, .x = xd, .ropeCos = cosd, .ropeSin = sind};
  const ref::BlockWeights w = ref::ViewPacked(shape, weights);
  const ref::BlockState expected = ref::RunBlock(shape, ref::BlockRecipe{}, w, inputs);
  for (Checkpoint c : ref::kCheckpointOrder) {
    if (auto finite = RequireFiniteReference(spec.name, ref::CheckpointName(c), expected[ref::Index(c)]); !finite.ok()) {
      return finite.error();
    }
  }

  // The student's buffers, as doubles for the local checks.
  ref::BlockState student;
  for (Checkpoint c : ref::kCheckpointOrder) student[ref::Index(c)] = ToDouble(region.Floats<L>(BufferOf(c)));

  std::vector<CheckpointDescriptor> descriptors;
  for (Checkpoint c : ref::kCheckpointOrder) {
    const int i = ref::Index(c);
    CheckpointDescriptor d;
    d.name = std::string(ref::CheckpointName(c));
    d.shape = fmt::format("{} x {}", T, ref::CheckpointWidth(c, shape));
    d.got = region.Floats<L>(BufferOf(c));
    d.expected = expected[i];
    d.tolerance = BlockTolerance(c);
    d.where = [c, shape](size_t index) { return BlockElement(c, index, shape); };
    d.geometry = BlockGeometry(c, T, shape);
    for (Checkpoint u : ref::Upstream(c)) d.upstream.push_back(static_cast<size_t>(ref::Index(u)));
    d.local = [&, c] { return ref::ComputeCheckpoint(c, shape, ref::BlockRecipe{}, w, inputs, student); };
    d.recognise = [&, c, got = d.got, tolerance = d.tolerance](bool onStudent) {
      const ref::BlockState& upstream = onStudent ? student : expected;
      return Diagnose(c, got, tolerance, context.stage->lesson, [&](const ref::BlockRecipe& r) {
        return ref::ComputeCheckpoint(c, shape, r, w, inputs, upstream);
      });
    };
    descriptors.push_back(std::move(d));
  }
  ChainResult chain = CheckChain(descriptors, spec.points);
  report.checkpoints = std::move(chain.checkpoints);

  // How the child ended decides the case's status before the buffers do.
  std::vector<uint32_t> outputs;
  for (Checkpoint c : ref::kCheckpointOrder) outputs.push_back(BufferOf(c));
  const CaseFindings findings =
      FindingsOfChild(outcome, region, context.stage->function, context.limits, outputs, chain.allUnwritten);
  Conclude(findings, report);
  return report;
}

}  // namespace

std::unique_ptr<StageDriver> MakeDriver() { return std::make_unique<BlockDriver>(); }

}  // namespace wb::stage01
