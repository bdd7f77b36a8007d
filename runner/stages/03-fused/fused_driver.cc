// Stage 3's driver: a kernel case checks one kernel on its own (kernel_checks.h); a block
// case runs fused_block in a child and checks its ten checkpoints in dependency order:
// stage 1's nine, with q, k and v read as column slices of qkv and ffnOut derived as
// output - residual1 (the contract has no ffnOut buffer), plus hidden before Wdown.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "fused_call.h"
#include "bench_driver.h"
#include "bench_timing.h"
#include "kernel_checks.h"
#include "reference/block/block.h"
#include "reference/block/ops.h"
#include "reference/gen/block_data.h"
#include "runner/blocks/block_buffers.h"
#include "runner/blocks/block_weights.h"
#include "runner/compare/block_tolerances.h"
#include "runner/diagnose/misconceptions.h"
#include "runner/engine/case_verdict.h"
#include "runner/engine/checkpoint_engine.h"
#include "runner/engine/crash_description.h"
#include "runner/isolation/shared_region.h"
#include "runner/stages/leaderboard_timing.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage03 {
namespace {

using B = FusedBlockCall;
using ref::Checkpoint;

// The block's own mistakes are explained in stage 1's lesson, whichever stage finds them.
constexpr const char* kBlockLesson = "docs/stages/01-block.md";

// The ten checkpoints, in the order they are checked. kHiddenStep is not one of stage 1's.
enum class Step { kNorm1, kQ, kK, kV, kAttnOut, kResidual1, kNorm2, kHidden, kFfnOut, kOutput };
constexpr std::array<Step, 10> kSteps = {Step::kNorm1, Step::kQ,     Step::kK,      Step::kV,      Step::kAttnOut,
                                         Step::kResidual1, Step::kNorm2, Step::kHidden, Step::kFfnOut, Step::kOutput};
constexpr std::array<Checkpoint, 10> kBlockCheckpointOf = {
    Checkpoint::kNorm1, Checkpoint::kQ,     Checkpoint::kK,      Checkpoint::kV,      Checkpoint::kAttnOut,
    Checkpoint::kResidual1, Checkpoint::kNorm2, Checkpoint::kNorm2 /* unused */, Checkpoint::kFfnOut,
    Checkpoint::kOutput};
size_t IndexOf(Step s) { return static_cast<size_t>(s); }
size_t IndexOf(Checkpoint c) {
  switch (c) {
    case Checkpoint::kFfnOut:
      return IndexOf(Step::kFfnOut);
    case Checkpoint::kOutput:
      return IndexOf(Step::kOutput);
    default:
      return static_cast<size_t>(ref::Index(c));
  }
}

std::vector<double> ToDouble(std::span<const float> values) { return {values.begin(), values.end()}; }

std::string Parameters(const CaseSpec& spec) {
  std::string text = fmt::format("fused_block T={}, threads {}, seed {}", spec.T, spec.threads, spec.seed);
  if (spec.xScale != 1.0) text += fmt::format(", x_scale {}", spec.xScale);
  if (spec.wScale != 1.0) text += fmt::format(", w_scale {}", spec.wScale);
  return text;
}

class FusedDriver final : public BlockWeightsDriver {
 public:
  double DefaultTimeLimit(const CaseSpec& spec) const override {
    return std::max(10.0, 0.02 * spec.T + 1e-8 * static_cast<double>(spec.T) * spec.out * spec.in);
  }

  Expected<CaseReport> RunCase(const CaseSpec& spec, const StageContext& context) const override {
    if (!spec.kernel.empty()) return RunKernelCase(spec, context);
    return RunBlockCase(spec, context);
  }

  bool HasBench() const override { return true; }
  Status CheckBenchOptions(const BenchOptions& options) const override { return CheckFusedBenchOptions(options); }
  Expected<int> Bench(const BenchOptions& options, const StageContext& context) const override {
    return RunFusedBench(weights_, options, context);
  }

  // fused_block at T = 512 on one thread: the fastest of three whole children, each checked
  // like a case, by the runner's clock, less the start-up time of a child (the solution's,
  // on one token, so no submission can lengthen it).
  Expected<std::vector<LeaderboardEntry>> Leaderboard(const StageContext& context, bool measure) const override {
    constexpr int kRuns = 3;
    LeaderboardEntry entry{.name = fmt::format("fused_block GFLOP/s (T={}, 1 thread)", kBenchLargestT), .value = 0,
                           .ascending = false};
    if (!measure) return std::vector<LeaderboardEntry>{entry};
    CaseSpec spec;
    spec.name = "leaderboard";
    spec.T = kBenchLargestT;
    spec.seed = 20261202;
    spec.threads = 1;
    const StageBuild* build = FindStageBuild(3);
    if (build == nullptr) return InternalError("the leaderboard needs stage 3's build");
    StageContext solution = context;
    solution.harness = build->solutionHarness;
    CaseSpec tiny = spec;
    tiny.T = 1;
    auto seconds = TimeFromOutside(
        kRuns, [&] { return RunBlockCase(spec, context); }, [&] { return RunBlockCase(tiny, solution); });
    if (!seconds.ok()) return seconds.error();
    if (!seconds->has_value()) return std::vector<LeaderboardEntry>{entry};
    entry.value = FusedBlockFlops(kBenchLargestT) / **seconds / 1e9;
    return std::vector<LeaderboardEntry>{entry};
  }

 private:
  Expected<CaseReport> RunBlockCase(const CaseSpec& spec, const StageContext& context) const;
};

Expected<CaseReport> FusedDriver::RunBlockCase(const CaseSpec& spec, const StageContext& context) const {
  const ref::BlockShape shape = ref::Stage1Shape();
  const int T = spec.T;
  const int D = shape.model;
  const int KV = shape.kvWidth();
  const int QKV = D + 2 * KV;
  const int F = shape.ffn;
  CaseReport report;
  report.parameters = Parameters(spec);

  std::vector<float> weights = weights_.values;
  ref::ScaleBlockMatrices(shape, weights, spec.wScale);
  const std::vector<float> x = ref::GenerateInputRows(spec.seed, T, D, spec.xScale);
  std::vector<float> ropeCos;
  std::vector<float> ropeSin;
  ref::MakeFloatRopeTables(T, shape.headDim, ref::kRopeBase, ropeCos, ropeSin);

  const size_t rows = static_cast<size_t>(T);
  std::array<BufferSize, B::kBufferCount> sizes{};
  sizes[B::kW] = {weights.size(), shm::kReadOnly};
  sizes[B::kX] = {x.size(), shm::kReadOnly};
  sizes[B::kRopeCos] = {ropeCos.size(), shm::kReadOnly};
  sizes[B::kRopeSin] = {ropeSin.size(), shm::kReadOnly};
  for (B::Buffer b : {B::kNorm1, B::kAttnOut, B::kResidual1, B::kNorm2, B::kOutput}) sizes[b] = {rows * D, shm::kWritable};
  sizes[B::kQkv] = {rows * QKV, shm::kWritable};
  sizes[B::kHidden] = {rows * F, shm::kWritable};
  auto created = SharedRegion::Create<B>(sizes);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  std::ranges::copy(weights, region.Floats<B>(B::kW).begin());
  std::ranges::copy(x, region.Floats<B>(B::kX).begin());
  std::ranges::copy(ropeCos, region.Floats<B>(B::kRopeCos).begin());
  std::ranges::copy(ropeSin, region.Floats<B>(B::kRopeSin).begin());
  region.PoisonOutputs();
  region.SetParams<B>({.tokens = T, .threads = spec.threads});

  auto ran = RunInChild(context.harness, region, context.limits);
  if (!ran.ok()) return ran.error();
  const ChildOutcome& outcome = *ran;
  report.callSeconds = outcome.callSeconds;
  report.wallSeconds = outcome.wallSeconds;
  report.childOutput = ChildOutputText(outcome);

  // The reference chain, from the same float inputs: stage 1's nine, and hidden.
  const std::vector<double> xd = ToDouble(x);
  const std::vector<double> cosd = ToDouble(ropeCos);
  const std::vector<double> sind = ToDouble(ropeSin);
  const ref::BlockInputs inputs{.rows = T, .x = xd, .ropeCos = cosd, .ropeSin = sind};
  const ref::BlockWeights w = ref::ViewPacked(shape, weights);
  const ref::BlockState expected = ref::RunBlock(shape, ref::BlockRecipe{}, w, inputs);
  const std::vector<double> expectedHidden =
      GatedHidden(expected[ref::Index(Checkpoint::kNorm2)], T, shape, w, ref::GatedBranch::kGate);
  for (Checkpoint c : ref::kCheckpointOrder) {
    if (auto finite = RequireFiniteReference(spec.name, ref::CheckpointName(c), expected[ref::Index(c)]); !finite.ok()) {
      return finite.error();
    }
  }
  if (auto finite = RequireFiniteReference(spec.name, "hidden", expectedHidden); !finite.ok()) return finite.error();

  // The student's ten buffers as the checks see them.
  const std::span<const float> qkv = region.Floats<B>(B::kQkv);
  std::array<std::vector<float>, 10> got;
  got[IndexOf(Step::kNorm1)] = {region.Floats<B>(B::kNorm1).begin(), region.Floats<B>(B::kNorm1).end()};
  got[IndexOf(Step::kQ)] = ColumnSlice(qkv, T, QKV, 0, D);
  got[IndexOf(Step::kK)] = ColumnSlice(qkv, T, QKV, D, KV);
  got[IndexOf(Step::kV)] = ColumnSlice(qkv, T, QKV, D + KV, KV);
  for (auto [step, buffer] : {std::pair{Step::kAttnOut, B::kAttnOut}, std::pair{Step::kResidual1, B::kResidual1},
                              std::pair{Step::kNorm2, B::kNorm2}, std::pair{Step::kHidden, B::kHidden},
                              std::pair{Step::kOutput, B::kOutput}}) {
    const auto values = region.Floats<B>(buffer);
    got[IndexOf(step)] = {values.begin(), values.end()};
  }
  got[IndexOf(Step::kFfnOut)] = DeriveFfnOut(got[IndexOf(Step::kOutput)], got[IndexOf(Step::kResidual1)]);

  ref::BlockState student;
  for (Checkpoint c : ref::kCheckpointOrder) student[ref::Index(c)] = ToDouble(got[IndexOf(c)]);
  const std::vector<double> studentHidden = ToDouble(got[IndexOf(Step::kHidden)]);

  std::vector<CheckpointDescriptor> descriptors;
  for (Step step : kSteps) {
    CheckpointDescriptor d;
    d.got = got[IndexOf(step)];
    if (step == Step::kHidden) {
      d.name = "hidden";
      d.shape = fmt::format("{} x {}", T, F);
      d.expected = expectedHidden;
      d.tolerance = BlockTolerance(Checkpoint::kFfnOut);
      d.where = [F](size_t index) { return fmt::format("token {}, channel {}", index / F, index % F); };
      d.geometry = BufferGeometry{.rows = T, .width = F, .headDim = 0, .rowName = "token", .firstRow = 0};
      d.upstream = {IndexOf(Step::kNorm2)};
      d.local = [&] { return GatedHidden(student[ref::Index(Checkpoint::kNorm2)], T, shape, w, ref::GatedBranch::kGate); };
      d.recognise = [&, got = d.got, tolerance = d.tolerance](bool onStudent) {
        const ref::BlockState& upstream = onStudent ? student : expected;
        const std::vector<double> swapped =
            GatedHidden(upstream[ref::Index(Checkpoint::kNorm2)], T, shape, w, ref::GatedBranch::kUp);
        std::vector<Candidate> candidates;
        if (const double fit = FitOf(got, swapped, tolerance); fit <= 1.0) {
          candidates.push_back({MisconceptionHit{"silu-on-up",
                                                 "hidden matches SiLU(norm2 . Wup^T) * (norm2 . Wgate^T): SiLU went "
                                                 "on the up product, or Wgate and Wup were swapped.",
                                                 fmt::format("{}#the-gated-ffn", kBlockLesson)},
                                fit});
        }
        return Choose(std::move(candidates));
      };
      descriptors.push_back(std::move(d));
      continue;
    }
    const Checkpoint c = kBlockCheckpointOf[IndexOf(step)];
    d.name = std::string(ref::CheckpointName(c));
    d.shape = fmt::format("{} x {}", T, ref::CheckpointWidth(c, shape));
    d.expected = expected[ref::Index(c)];
    d.tolerance = BlockTolerance(c);
    d.where = [c, shape](size_t index) { return BlockElement(c, index, shape); };
    d.geometry = BlockGeometry(c, T, shape);
    if (step == Step::kFfnOut) {
      // Derived from two buffers, each within its own tolerance of the stream: two float
      // roundings of the stream's size (the code's add, the runner's subtraction) come on
      // top of the FFN's own error, 1e-6 of the stream's RMS (about 8x 2u) covers them.
      const double stream = Rms(expected[ref::Index(Checkpoint::kOutput)]);
      const double own = std::max(Rms(d.expected), 1e-300);
      d.tolerance.absoluteOfRms += 1e-6 * stream / own;
      d.upstream = {IndexOf(Step::kHidden)};
      d.local = [&] { return DownProjection(studentHidden, T, shape, w); };
      d.recognise = [&, got = d.got, tolerance = d.tolerance](bool onStudent) {
        // What the derived ffnOut holds when output did not start as a copy of residual1.
        const std::vector<double>& hiddenUsed = onStudent ? studentHidden : expectedHidden;
        const std::vector<double>& residual = onStudent ? student[ref::Index(Checkpoint::kResidual1)]
                                                        : expected[ref::Index(Checkpoint::kResidual1)];
        const std::vector<double> ffn = DownProjection(hiddenUsed, T, shape, w);
        std::vector<double> fromInput(ffn.size()), alone(ffn.size());
        for (size_t i = 0; i < ffn.size(); ++i) {
          fromInput[i] = xd[i] + ffn[i] - residual[i];
          alone[i] = ffn[i] - residual[i];
        }
        std::vector<Candidate> candidates;
        const std::string lesson = fmt::format("{}#the-residual-as-accumulate", context.stage->lesson);
        if (const double fit = FitOf(got, fromInput, tolerance); fit <= 1.0) {
          candidates.push_back({MisconceptionHit{"output-from-input",
                                                 "output - residual1 matches x + ffnOut - residual1: output started "
                                                 "as a copy of x, not of residual1, before Wdown was added into it.",
                                                 lesson},
                                fit});
        }
        if (const double fit = FitOf(got, alone, tolerance); fit <= 1.0) {
          candidates.push_back({MisconceptionHit{"output-without-residual1",
                                                 "output - residual1 matches ffnOut - residual1: output holds the "
                                                 "FFN's product alone, written over the copy of residual1 "
                                                 "(Accumulate::kOverwrite where the contract says kAdd).",
                                                 lesson},
                                fit});
        }
        return Choose(std::move(candidates));
      };
      descriptors.push_back(std::move(d));
      continue;
    }
    for (Checkpoint u : ref::Upstream(c)) d.upstream.push_back(IndexOf(u));
    if (step == Step::kOutput) {
      // output - residual1 is what ffnOut is, so the local check of output would compare
      // output with itself: only the chain view says anything here.
      d.upstream = {IndexOf(Step::kResidual1), IndexOf(Step::kFfnOut)};
    } else {
      d.local = [&, c] { return ref::ComputeCheckpoint(c, shape, ref::BlockRecipe{}, w, inputs, student); };
    }
    d.recognise = [&, c, got = d.got, tolerance = d.tolerance](bool onStudent) {
      const ref::BlockState& upstream = onStudent ? student : expected;
      return Diagnose(c, got, tolerance, kBlockLesson, [&](const ref::BlockRecipe& r) {
        return ref::ComputeCheckpoint(c, shape, r, w, inputs, upstream);
      });
    };
    descriptors.push_back(std::move(d));
  }
  ChainResult chain = CheckChain(descriptors, spec.points);
  for (CheckpointReport& cp : chain.checkpoints) {
    if (cp.name != "ffnOut" || cp.status == CheckStatus::kPass) continue;
    const std::string derived = "ffnOut is not a buffer of stage 3: the runner derives it as output - residual1, "
                                "from the two buffers your code wrote.";
    cp.observation = cp.observation.empty() ? derived : derived + " " + cp.observation;
  }
  report.checkpoints = std::move(chain.checkpoints);

  const std::vector<uint32_t> outputs = {B::kNorm1, B::kQkv, B::kAttnOut, B::kResidual1, B::kNorm2, B::kHidden,
                                         B::kOutput};
  const CaseFindings findings =
      FindingsOfChild(outcome, region, context.stage->function, context.limits, outputs, chain.allUnwritten);
  Conclude(findings, report);
  return report;
}

}  // namespace

std::unique_ptr<StageDriver> MakeDriver() { return std::make_unique<FusedDriver>(); }

}  // namespace wb::stage03
