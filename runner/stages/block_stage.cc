#include "block_stage.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "../../reference/block/block.h"
#include "../../reference/gen/block_data.h"
#include "../compare/block_tolerances.h"
#include "../compare/compare.h"
#include "../diagnose/misconceptions.h"
#include "../diagnose/observations.h"
#include "../isolation/shared_region.h"
#include "case_outcome.h"
#include "crash_description.h"

namespace wb {
namespace {

using ref::Checkpoint;

constexpr size_t kSamplesShown = 3;

std::string DescribeElement(Checkpoint c, size_t index, const ref::BlockShape& s) {
  const int width = ref::CheckpointWidth(c, s);
  const size_t row = index / width;
  const int col = static_cast<int>(index % width);
  switch (c) {
    case Checkpoint::kQ:
    case Checkpoint::kAttnOut:
      return fmt::format("token {}, head {}, channel {}", row, col / s.headDim, col % s.headDim);
    case Checkpoint::kK:
    case Checkpoint::kV:
      return fmt::format("token {}, KV head {}, channel {}", row, col / s.headDim, col % s.headDim);
    default:
      return fmt::format("token {}, channel {}", row, col);
  }
}

ElementDetail Detail(Checkpoint c, size_t index, double expected, float got, const ref::BlockShape& s) {
  ElementDetail d;
  d.where = DescribeElement(c, index, s);
  d.expected = expected;
  d.got = got;
  switch (StateOf(got)) {
    case ElementState::kUnwritten: d.gotNote = "never written"; break;
    case ElementState::kFromUnwritten: d.gotNote = "NaN computed from an element that was never written"; break;
    case ElementState::kWritten:
      if (std::isnan(got)) d.gotNote = "NaN";
      break;
  }
  return d;
}

// Usable as upstream for a local check: every element written and finite.
bool Usable(std::span<const float> values) {
  return std::all_of(values.begin(), values.end(), [](float v) {
    return StateOf(v) == ElementState::kWritten && std::isfinite(v);
  });
}

std::vector<double> ToDouble(std::span<const float> values) { return {values.begin(), values.end()}; }

}  // namespace

Expected<PackedWeights> LoadBlockWeights(const std::string& path) {
  const std::string hint = "The build makes this file: run ./workbook again to regenerate it "
                           "(delete it first if it keeps failing).";
  auto loaded = ReadPackedWeights(path, hint);
  if (!loaded.ok()) return loaded.error();
  const ref::BlockShape shape = ref::Stage1Shape();
  const PackedShape expected{static_cast<uint32_t>(shape.model), static_cast<uint32_t>(shape.qHeads),
                             static_cast<uint32_t>(shape.kvHeads), static_cast<uint32_t>(shape.headDim),
                             static_cast<uint32_t>(shape.ffn)};
  if (!(loaded->shape == expected)) {
    return BadData(fmt::format("{}: field 'shape' is {}x{}x{}x{}x{} (model, q heads, kv heads, head dim, ffn); "
                               "the stage-1 contract is 512x8x2x64x1408. {}",
                               path, loaded->shape.model, loaded->shape.qHeads, loaded->shape.kvHeads,
                               loaded->shape.headDim, loaded->shape.ffn, hint));
  }
  const auto offsets = ref::PackedOffsets(shape);
  if (loaded->offsets.size() != offsets.size() || loaded->values.size() != ref::PackedFloats(shape)) {
    return BadData(fmt::format("{}: it holds {} tensors in {} floats; the contract has 9 tensors in {}. {}", path,
                               loaded->offsets.size(), loaded->values.size(), ref::PackedFloats(shape), hint));
  }
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (loaded->offsets[i] != offsets[i]) {
      return BadData(fmt::format("{}: field 'offsets[{}]' is {}; the contract's offset is {}. {}", path, i,
                                 loaded->offsets[i], offsets[i], hint));
    }
  }
  return loaded;
}

double DefaultBlockTimeLimit(int T) { return std::max(10.0, 0.02 * T); }

CaseReport RunBlockCase(const CaseSpec& spec, const StageContext& setup) {
  const ref::BlockShape shape = ref::Stage1Shape();
  const int T = spec.T;
  CaseReport report;
  report.name = spec.name;
  report.hidden = spec.hidden;
  report.parameters = fmt::format("T={}, seed {}", T, spec.seed);
  if (spec.xScale != 1.0) report.parameters += fmt::format(", x_scale {}", spec.xScale);
  if (spec.wScale != 1.0) report.parameters += fmt::format(", w_scale {}", spec.wScale);

  // Inputs, exactly as the student's code will see them.
  std::vector<float> weights = setup.weights->values;
  ref::ScaleBlockMatrices(shape, weights, spec.wScale);
  const std::vector<float> x = ref::GenerateInputRows(spec.seed, T, shape.model, spec.xScale);
  std::vector<float> ropeCos;
  std::vector<float> ropeSin;
  ref::MakeFloatRopeTables(T, shape.headDim, ref::kRopeBase, ropeCos, ropeSin);

  // The shared region: inputs read-only, the nine outputs poisoned and fenced.
  std::vector<BufferSpec> specs = {
      {"w", weights.size() * sizeof(float), shm::kReadOnly},
      {"x", x.size() * sizeof(float), shm::kReadOnly},
      {"ropeCos", ropeCos.size() * sizeof(float), shm::kReadOnly},
      {"ropeSin", ropeSin.size() * sizeof(float), shm::kReadOnly},
  };
  std::vector<std::string> outputs;
  for (Checkpoint c : ref::kCheckpointOrder) {
    outputs.emplace_back(ref::CheckpointName(c));
    specs.push_back({outputs.back(), static_cast<size_t>(T) * ref::CheckpointWidth(c, shape) * sizeof(float),
                     shm::kWritable});
  }
  auto created = SharedRegion::Create(1, specs);
  if (!created.ok()) {
    report.status = CaseStatus::kCrash;
    report.headline = created.error().message;
    return report;
  }
  SharedRegion& region = *created;
  std::copy(weights.begin(), weights.end(), region.Floats("w").begin());
  std::copy(x.begin(), x.end(), region.Floats("x").begin());
  std::copy(ropeCos.begin(), ropeCos.end(), region.Floats("ropeCos").begin());
  std::copy(ropeSin.begin(), ropeSin.end(), region.Floats("ropeSin").begin());
  region.PoisonOutputs();
  region.header().params[0] = T;

  auto ran = RunInChild(setup.harness, region, setup.limits);
  if (!ran.ok()) {
    report.status = CaseStatus::kCrash;
    report.headline = ran.error().message;
    return report;
  }
  const ChildOutcome& outcome = *ran;
  report.callSeconds = outcome.callSeconds;
  const std::string out = outcome.stdoutText.Text();
  const std::string err = outcome.stderrText.Text();
  report.childOutput = out + (!out.empty() && !err.empty() && out.back() != '\n' ? "\n" : "") + err;

  // The reference chain, from the same float inputs.
  const std::vector<double> xd = ToDouble(x);
  const std::vector<double> cosd = ToDouble(ropeCos);
  const std::vector<double> sind = ToDouble(ropeSin);
  const ref::BlockInputs inputs{.rows = T, .x = xd, .ropeCos = cosd, .ropeSin = sind};
  const ref::BlockWeights w = ref::ViewPacked(shape, weights);
  const ref::BlockRecipe recipe;
  const ref::BlockState expected = ref::RunBlock(shape, recipe, w, inputs);

  // The student's buffers, as floats and as doubles for the local checks.
  std::vector<std::span<const float>> got(ref::kCheckpointCount);
  ref::BlockState student;
  std::vector<bool> usable(ref::kCheckpointCount);
  for (Checkpoint c : ref::kCheckpointOrder) {
    got[ref::Index(c)] = region.Floats(ref::CheckpointName(c));
    student[ref::Index(c)] = ToDouble(got[ref::Index(c)]);
    usable[ref::Index(c)] = Usable(got[ref::Index(c)]);
  }

  bool allUnwritten = true;
  for (Checkpoint c : ref::kCheckpointOrder) {
    const int i = ref::Index(c);
    const Tolerance tolerance = BlockTolerance(c);
    const Comparison chain = Compare(got[i], expected[i], tolerance, kSamplesShown);
    allUnwritten = allUnwritten && chain.allUnwritten();

    CheckpointReport cp;
    cp.name = std::string(ref::CheckpointName(c));
    cp.shape = fmt::format("{} x {}", T, ref::CheckpointWidth(c, shape));
    RecordComparison(chain, spec.points, cp);
    if (chain.hasWorst) cp.worst = Detail(c, chain.worstIndex, chain.worstExpected, got[i][chain.worstIndex], shape);
    for (size_t index : chain.failingSample) {
      if (chain.hasWorst && index == chain.worstIndex) continue;
      cp.samples.push_back(Detail(c, index, expected[i][index], got[i][index], shape));
    }

    // The local check: this step's operator on the student's own upstream buffers.
    bool upstreamUsable = true;
    std::vector<std::string> brokenUpstream;
    for (Checkpoint u : ref::Upstream(c)) {
      if (!usable[ref::Index(u)]) upstreamUsable = false;
    }
    for (Checkpoint u : ref::Upstream(c)) {
      if (cp.status == CheckStatus::kFail && report.checkpoints.size() > static_cast<size_t>(ref::Index(u)) &&
          report.checkpoints[ref::Index(u)].status == CheckStatus::kFail) {
        brokenUpstream.emplace_back(ref::CheckpointName(u));
      }
    }
    std::vector<double> localExpected;
    if (upstreamUsable) {
      localExpected = ref::ComputeCheckpoint(c, shape, recipe, w, inputs, student);
      cp.local = Compare(got[i], localExpected, tolerance, 0).pass() ? LocalStatus::kPass : LocalStatus::kFail;
    }

    if (cp.status == CheckStatus::kFail && !chain.allUnwritten()) {
      // Diagnose on the student's upstream when it is usable, else on the reference's.
      const ref::BlockState& upstream = upstreamUsable ? student : expected;
      if (cp.local != LocalStatus::kPass) {
        cp.misconception = Diagnose(c, got[i], tolerance, setup.lessonPath, [&](const ref::BlockRecipe& r) {
          return ref::ComputeCheckpoint(c, shape, r, w, inputs, upstream);
        });
      }
      if (!cp.misconception) {
        if (!upstreamUsable && !brokenUpstream.empty()) {
          std::string names;
          for (const auto& n : brokenUpstream) names += (names.empty() ? "" : " and ") + n;
          cp.observation = fmt::format("not checked on its own: {} has elements that are unwritten or not finite",
                                       names);
        } else if (cp.local == LocalStatus::kPass && !brokenUpstream.empty()) {
          std::string names;
          for (const auto& n : brokenUpstream) names += (names.empty() ? "" : " and ") + n;
          cp.observation = fmt::format("your {} step is right for the {} it was given; it is off only because {} is",
                                       cp.name, names, names);
        } else {
          const BufferGeometry geometry{
              .rows = T,
              .width = ref::CheckpointWidth(c, shape),
              .headDim = (c == Checkpoint::kQ || c == Checkpoint::kK || c == Checkpoint::kV ||
                          c == Checkpoint::kAttnOut) ? shape.headDim : 0};
          cp.observation = Observe(got[i], upstreamUsable ? localExpected : expected[i], tolerance, geometry);
        }
      }
    }
    if (!report.firstFailure && cp.status == CheckStatus::kFail) report.firstFailure = cp.name;
    report.checkpoints.push_back(std::move(cp));
  }

  // How the child ended decides the case's status before the buffers do.
  const std::string ending =
      DescribeEnding(outcome, region, "decoder_block", setup.limits.wallSeconds, setup.limits.memoryBytes);
  const std::vector<std::string> canary = DescribeCanaryDamage(region);
  switch (outcome.ending) {
    case ChildOutcome::Ending::kReturned: {
      if (!canary.empty()) {
        report.status = CaseStatus::kFail;
        report.headline = canary.front();
        report.notes.insert(report.notes.end(), canary.begin() + 1, canary.end());
      } else if (allUnwritten) {
        report.status = CaseStatus::kNotImplemented;
      } else {
        report.status = report.firstFailure ? CaseStatus::kFail : CaseStatus::kPass;
      }
      break;
    }
    case ChildOutcome::Ending::kTimeLimit: report.status = CaseStatus::kTimeout; break;
    case ChildOutcome::Ending::kExitedEarly: report.status = CaseStatus::kExitedEarly; break;
    case ChildOutcome::Ending::kSignal:
    case ChildOutcome::Ending::kHarnessFailed: report.status = CaseStatus::kCrash; break;
  }
  if (outcome.ending != ChildOutcome::Ending::kReturned) {
    report.headline = ending;
    report.notes.insert(report.notes.end(), canary.begin(), canary.end());
    report.notes.push_back("when it stopped: " + DescribeWritten(region, outputs));
  }
  ApplyOutputFlood(DescribeOutputFlood(outcome, setup.limits.outputLimitBytes), report);
  if (report.hidden) Redact(report);
  return report;
}

}  // namespace wb
