// Stage 4's driver: a kernel case checks quantize_q8_0 or matmul_q on its own
// (kernel_checks.h); a block case runs quant_block on one of the three weight files and
// checks its fourteen checkpoints in dependency order:
//   norm1, norm1q, q, k, v, attnOut, attnOutq, residual1, norm2, norm2q, hidden, hiddenq,
//   ffnOut, output
// with q, k and v read as column slices of qkv and ffnOut derived as output - residual1, as
// in stage 3. Each *q buffer is checked bit for bit against ggml's reference quantizer
// applied to the student's own float buffer upstream (quant_checks.h): a one-ulp difference
// upstream may flip a rounding, so the reference's own chain is never the yardstick there.
// Each float checkpoint has the chain view (against the float64 reference of the quantized
// model: the reference quantizes its own float-rounded activations the same way) and the
// local view (this step on the student's own buffers, where every integer product is exact
// and only float sums may round); here both decide, with the local view's tighter tolerance.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "bench_call.h"
#include "bench_driver.h"
#include "kernel_checks.h"
#include "quant_call.h"
#include "quant_checks.h"
#include "quant_reference.h"
#include "quant_weights.h"
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

namespace wb::stage04 {
namespace {

using B = QuantBlockCall;
using ref::Checkpoint;

constexpr const char* kBlockLesson = "docs/stages/01-block.md";

std::vector<double> ToDouble(std::span<const float> values) { return {values.begin(), values.end()}; }
std::vector<float> ToFloat(std::span<const double> values) { return {values.begin(), values.end()}; }

// The chain view's tolerances are ChainTolerance (quant_reference.h). The local view's are float
// sums alone (block_tolerances.cc's reasoning): 1e-4 of the RMS.
constexpr Tolerance kLocalProjection = {.absoluteOfRms = 1e-4, .relative = 1e-4};
constexpr Tolerance kLocalSwiglu = {.absoluteOfRms = 2e-4, .relative = 2e-4};

class QuantDriver final : public StageDriver {
 public:
  Status Prepare(const StageContext& context) override {
    const std::string folder = context.weightsPath.empty() ? DefaultQuantWeightsFolder(context.paths.buildRoot)
                                                            : context.weightsPath;
    for (ref::quant::WeightSet set : ref::quant::kWeightSets) {
      auto loaded = LoadQuantWeightSet((std::filesystem::path(folder) / ref::quant::FileName(set)).string(), set);
      if (!loaded.ok()) return loaded.error();
      sets_.emplace(std::string(ref::quant::SetName(set)), std::move(*loaded));
    }
    return Status::Ok();
  }

  double DefaultTimeLimit(const CaseSpec& spec) const override {
    return std::max(10.0, 0.02 * spec.T + 1e-8 * static_cast<double>(spec.T) * spec.out * spec.in);
  }

  Expected<CaseReport> RunCase(const CaseSpec& spec, const StageContext& context) const override {
    if (!spec.kernel.empty()) return RunKernelCase(spec, context);
    return RunBlockCase(spec, context);
  }

  bool HasBench() const override { return true; }
  Status CheckBenchOptions(const BenchOptions& options) const override { return CheckQuantBenchOptions(options); }
  Expected<int> Bench(const BenchOptions& options, const StageContext& context) const override {
    return RunQuantBench(sets_, options, context);
  }

  // matmul_q at T = 1 on bench 4's decode matrix (Llama-3-8B's FFN, 14336 x 4096), one thread,
  // in Q4_0 and in Q8_0: GOP/s (2 integer operations per multiply-add) of a run of calls, each
  // on new activations, the copies of the matrix taken in turn so that it streams from memory
  // (kernel_checks.h); timed by the runner's clock (leaderboard_timing.h) less the solution's
  // child on one call per copy, which pays the same start-up and first touch of every copy.
  Expected<std::vector<LeaderboardEntry>> Leaderboard(const StageContext& context, bool measure) const override {
    constexpr int kRuns = 3;
    constexpr int kCopies = 4;  // 118 MiB of Q4_0, 223 MiB of Q8_0: more than a server's L3
    constexpr int kCalls = 200;
    std::vector<LeaderboardEntry> entries;
    const StageBuild* build = FindStageBuild(context.stage->number);
    if (build == nullptr) return InternalError("the leaderboard needs stage 4's build");
    StageContext solution = context;
    solution.harness = build->solutionHarness;
    for (Weight type : {Weight::kQ4_0, Weight::kQ8_0}) {
      LeaderboardEntry entry{.name = fmt::format("matmul_q GOP/s ({}, T=1, {} x {}, 1 thread)",
                                                 type == Weight::kQ4_0 ? "Q4_0" : "Q8_0", kDecodeRows, kDecodeCols),
                             .value = 0,
                             .ascending = false};
      if (measure) {
        const MatmulLeaderboardRun timed{.type = type, .out = kDecodeRows, .in = kDecodeCols,
                                         .calls = kCopies + kCalls, .copies = kCopies, .sampled = 4,
                                         .seed = 20261206};
        MatmulLeaderboardRun startup = timed;
        startup.calls = kCopies;
        auto seconds = TimeFromOutside(
            kRuns, [&] { return RunMatmulLeaderboard(timed, context); },
            [&] { return RunMatmulLeaderboard(startup, solution); });
        if (!seconds.ok()) return seconds.error();
        if (seconds->has_value()) entry.value = 2.0 * kDecodeRows * kDecodeCols * kCalls / **seconds / 1e9;
      }
      entries.push_back(entry);
    }
    return entries;
  }

 private:
  Expected<CaseReport> RunBlockCase(const CaseSpec& spec, const StageContext& context) const;

  QuantWeightSets sets_;
};

// A weight set with every block scale multiplied by `scale`, a power of two, exactly.
Expected<QuantWeightSet> Scaled(const QuantWeightSet& set, double scale, const std::string& caseName) {
  QuantWeightSet out = set;
  if (scale == 1.0) return out;
  int exponent = 0;
  if (std::frexp(scale, &exponent) != 0.5) {
    return BadData(fmt::format("case {}: w_scale {} is not a power of two: stage 4 scales the quantized weights by "
                               "multiplying each block's half scale, which is exact only for a power of two",
                               caseName, scale));
  }
  for (QuantMatrixBytes& m : out.matrices) {
    const size_t blockBytes = BlockBytes(m.type);
    for (size_t at = 0; at < m.bytes.size(); at += blockBytes) {
      uint16_t d;
      std::memcpy(&d, m.bytes.data() + at, 2);
      const float wanted = static_cast<float>(HalfToFloat(d) * scale);
      const uint16_t scaled = FloatToHalf(wanted);
      if (HalfToFloat(scaled) != wanted) {
        return BadData(fmt::format("case {}: w_scale {} makes a block scale of {} that a half cannot hold exactly; "
                                   "use a smaller power of two", caseName, scale, wanted));
      }
      std::memcpy(m.bytes.data() + at, &scaled, 2);
    }
  }
  // Every matrix value is code x d, so it scales exactly too; the norm weights do not scale.
  const ref::BlockShape shape = ref::Stage1Shape();
  ref::ScaleBlockMatrices(shape, out.values, scale);
  return out;
}

Expected<CaseReport> QuantDriver::RunBlockCase(const CaseSpec& spec, const StageContext& context) const {
  const ref::BlockShape shape = ref::Stage1Shape();
  const int T = spec.T;
  const int D = shape.model;
  const int KV = shape.kvWidth();
  const int QKV = D + 2 * KV;
  const int F = shape.ffn;
  CaseReport report;
  report.parameters = fmt::format("quant_block {} weights, T={}, threads {}, seed {}", spec.weights, T, spec.threads,
                                  spec.seed);
  if (spec.xScale != 1.0) report.parameters += fmt::format(", x_scale {}", spec.xScale);
  if (spec.wScale != 1.0) report.parameters += fmt::format(", w_scale {}", spec.wScale);
  const auto found = sets_.find(spec.weights);
  if (found == sets_.end()) return InternalError(fmt::format("no weight set '{}' was loaded", spec.weights));
  auto scaled = Scaled(found->second, spec.wScale, spec.name);
  if (!scaled.ok()) return scaled.error();
  const QuantWeightSet& set = *scaled;

  const std::vector<float> x = ref::GenerateInputRows(spec.seed, T, D, spec.xScale);
  std::vector<float> ropeCos, ropeSin;
  ref::MakeFloatRopeTables(T, shape.headDim, ref::kRopeBase, ropeCos, ropeSin);

  const size_t rows = static_cast<size_t>(T);
  std::array<BufferSize, B::kBufferCount> sizes{};
  sizes[B::kRms1] = {set.rms1.size(), shm::kReadOnly};
  sizes[B::kRms2] = {set.rms2.size(), shm::kReadOnly};
  for (size_t i = 0; i < B::kMatrices.size(); ++i) {
    sizes[B::kMatrices[i]] = BufferSize::Bytes(set.matrices[i].bytes.size(), shm::kReadOnly);
  }
  sizes[B::kX] = {x.size(), shm::kReadOnly};
  sizes[B::kRopeCos] = {ropeCos.size(), shm::kReadOnly};
  sizes[B::kRopeSin] = {ropeSin.size(), shm::kReadOnly};
  for (B::Buffer b : {B::kNorm1, B::kAttnOut, B::kResidual1, B::kNorm2, B::kOutput}) sizes[b] = {rows * D, shm::kWritable};
  sizes[B::kQkv] = {rows * QKV, shm::kWritable};
  sizes[B::kHidden] = {rows * F, shm::kWritable};
  for (B::Buffer b : {B::kNorm1q, B::kAttnOutq, B::kNorm2q}) sizes[b] = BufferSize::Bytes(rows * D / kQK * kQ8Bytes, shm::kWritable);
  sizes[B::kHiddenq] = BufferSize::Bytes(rows * F / kQK * kQ8Bytes, shm::kWritable);
  auto created = SharedRegion::Create<B>(sizes);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  std::ranges::copy(set.rms1, region.Floats<B>(B::kRms1).begin());
  std::ranges::copy(set.rms2, region.Floats<B>(B::kRms2).begin());
  B::Params params{.tokens = T, .threads = spec.threads, .types = {}};
  for (size_t i = 0; i < B::kMatrices.size(); ++i) {
    std::ranges::copy(set.matrices[i].bytes, region.Bytes<B>(B::kMatrices[i]).begin());
    params.types[i] = set.matrices[i].type;
  }
  std::ranges::copy(x, region.Floats<B>(B::kX).begin());
  std::ranges::copy(ropeCos, region.Floats<B>(B::kRopeCos).begin());
  std::ranges::copy(ropeSin, region.Floats<B>(B::kRopeSin).begin());
  region.PoisonOutputs();
  region.SetParams<B>(params);

  auto ran = RunInChild(context.harness, region, context.limits);
  if (!ran.ok()) return ran.error();
  const ChildOutcome& outcome = *ran;
  report.callSeconds = outcome.callSeconds;
  report.wallSeconds = outcome.wallSeconds;
  report.childOutput = ChildOutputText(outcome);

  // The float64 reference of the quantized model: stage 1's steps on the exact weight values,
  // with each activation a matmul reads quantized as the contract says.
  const std::vector<double> xd = ToDouble(x), cosd = ToDouble(ropeCos), sind = ToDouble(ropeSin);
  const ref::BlockInputs inputs{.rows = T, .x = xd, .ropeCos = cosd, .ropeSin = sind};
  const ref::BlockWeights w = ref::ViewPacked(shape, set.values);
  const ref::BlockRecipe recipe{};
  QuantizedBlockReference reference = RunQuantizedBlock(shape, w, inputs);
  const std::array<std::vector<double>, kStepCount>& expected = reference.buffers;
  const ref::BlockState& chain = reference.chain;
  for (int s = 0; s < kStepCount; ++s) {
    if (expected[s].empty()) {
      return BadData(fmt::format("case {}: the float64 reference's {} is not finite: the case's scales are too large "
                                 "to grade anything; make w_scale or x_scale smaller", spec.name, kStepNames[s]));
    }
    if (auto finite = RequireFiniteReference(spec.name, kStepNames[s], expected[s]); !finite.ok()) return finite.error();
  }

  // The student's buffers as the checks see them: floats, and each *q as its blocks and as
  // the exact values they stand for (what the next matmul reads).
  const std::span<const float> qkv = region.Floats<B>(B::kQkv);
  auto floats = [&region](B::Buffer b) {
    const auto v = region.Floats<B>(b);
    return std::vector<float>(v.begin(), v.end());
  };
  std::array<std::vector<float>, kStepCount> got;
  got[At(Step::kNorm1)] = floats(B::kNorm1);
  got[At(Step::kQ)] = ColumnSlice(qkv, T, QKV, 0, D);
  got[At(Step::kK)] = ColumnSlice(qkv, T, QKV, D, KV);
  got[At(Step::kV)] = ColumnSlice(qkv, T, QKV, D + KV, KV);
  got[At(Step::kAttnOut)] = floats(B::kAttnOut);
  got[At(Step::kResidual1)] = floats(B::kResidual1);
  got[At(Step::kNorm2)] = floats(B::kNorm2);
  got[At(Step::kHidden)] = floats(B::kHidden);
  got[At(Step::kOutput)] = floats(B::kOutput);
  got[At(Step::kFfnOut)] = DeriveFfnOut(got[At(Step::kOutput)], got[At(Step::kResidual1)]);
  const std::map<Step, B::Buffer> blockBuffers = {{Step::kNorm1q, B::kNorm1q}, {Step::kAttnOutq, B::kAttnOutq},
                                                  {Step::kNorm2q, B::kNorm2q}, {Step::kHiddenq, B::kHiddenq}};
  for (const auto& [s, b] : blockBuffers) got[At(s)] = DequantizeQ8_0(region.Bytes<B>(b));

  // The student's state, for the local views: each step reads what the student's code gave it.
  ref::BlockState student;
  student[ref::Index(Checkpoint::kNorm1)] = ToDouble(got[At(Step::kNorm1q)]);
  for (auto [s, c] : {std::pair{Step::kQ, Checkpoint::kQ}, {Step::kK, Checkpoint::kK}, {Step::kV, Checkpoint::kV}}) {
    student[ref::Index(c)] = ToDouble(got[At(s)]);
  }
  student[ref::Index(Checkpoint::kAttnOut)] = ToDouble(got[At(Step::kAttnOutq)]);
  student[ref::Index(Checkpoint::kResidual1)] = ToDouble(got[At(Step::kResidual1)]);
  const std::vector<double> studentNorm2q = ToDouble(got[At(Step::kNorm2q)]);
  const std::vector<double> studentHiddenq = ToDouble(got[At(Step::kHiddenq)]);
  auto on = [&](Checkpoint c, const ref::BlockState& state) {
    return ref::ComputeCheckpoint(c, shape, recipe, w, inputs, state);
  };

  std::vector<CheckpointDescriptor> descriptors(kStepCount);
  auto blockCheck = [&](Step s, Step source) {
    CheckpointDescriptor& d = descriptors[At(s)];
    d.name = kStepNames[At(s)];
    const B::Buffer buffer = blockBuffers.at(s);
    const int width = s == Step::kHiddenq ? F : D;
    d.shape = fmt::format("{} x {} blocks", T, width / kQK);
    d.upstream = {At(source)};
    d.readDownstream = got[At(s)];
    d.custom = [&, s, source, buffer, width] {
      // The student's own float buffer when it is usable, else the reference chain's.
      const bool own = UsableAsUpstream(got[At(source)]);
      const std::vector<float> reference = own ? std::vector<float>{} : ToFloat(expected[At(source)]);
      return CheckQuantizedBlocks({.name = kStepNames[At(s)],
                                   .shape = fmt::format("{} x {} blocks", T, width / kQK),
                                   .got = region.Bytes<B>(buffer),
                                   .source = own ? std::span<const float>(got[At(source)]) : std::span<const float>(reference),
                                   .rows = T,
                                   .blocksPerRow = width / kQK,
                                   .rowName = "token",
                                   .lesson = context.stage->lesson,
                                   .sourceNote = own ? "" : fmt::format("Your {} has elements that are unwritten or not "
                                                                        "finite, so this compares with the quantization "
                                                                        "of the reference's {}.",
                                                                        kStepNames[At(source)], kStepNames[At(source)]),
                                   .points = spec.points});
    };
  };
  auto floatCheck = [&](Step s, Checkpoint c, std::vector<Step> upstream, std::function<std::vector<double>()> local,
                        std::optional<Tolerance> localTolerance) {
    CheckpointDescriptor& d = descriptors[At(s)];
    d.name = kStepNames[At(s)];
    d.got = got[At(s)];
    d.expected = expected[At(s)];
    d.tolerance = ChainTolerance(c);
    d.localTolerance = localTolerance;
    d.localDecides = true;
    const int width = static_cast<int>(got[At(s)].size() / std::max<size_t>(rows, 1));
    d.shape = fmt::format("{} x {}", T, width);
    if (s == Step::kHidden) {
      d.where = [width](size_t index) { return fmt::format("token {}, channel {}", index / width, index % width); };
      d.geometry = BufferGeometry{.rows = T, .width = width, .headDim = 0, .rowName = "token", .firstRow = 0};
    } else {
      d.where = [c, shape](size_t index) { return BlockElement(c, index, shape); };
      d.geometry = BlockGeometry(c, T, shape);
    }
    for (Step u : upstream) d.upstream.push_back(At(u));
    d.local = std::move(local);
  };

  floatCheck(Step::kNorm1, Checkpoint::kNorm1, {}, [&] { return on(Checkpoint::kNorm1, student); }, std::nullopt);
  blockCheck(Step::kNorm1q, Step::kNorm1);
  for (auto [s, c] : {std::pair{Step::kQ, Checkpoint::kQ}, {Step::kK, Checkpoint::kK}, {Step::kV, Checkpoint::kV}}) {
    floatCheck(s, c, {Step::kNorm1q}, [&, c] { return on(c, student); }, kLocalProjection);
  }
  floatCheck(Step::kAttnOut, Checkpoint::kAttnOut, {Step::kQ, Step::kK, Step::kV},
             [&] { return on(Checkpoint::kAttnOut, student); }, BlockTolerance(Checkpoint::kAttnOut));
  blockCheck(Step::kAttnOutq, Step::kAttnOut);
  floatCheck(Step::kResidual1, Checkpoint::kResidual1, {Step::kAttnOutq},
             [&] { return on(Checkpoint::kResidual1, student); }, kLocalProjection);
  floatCheck(Step::kNorm2, Checkpoint::kNorm2, {Step::kResidual1}, [&] { return on(Checkpoint::kNorm2, student); },
             BlockTolerance(Checkpoint::kNorm1));
  blockCheck(Step::kNorm2q, Step::kNorm2);
  floatCheck(Step::kHidden, Checkpoint::kFfnOut, {Step::kNorm2q},
             [&] { return GatedHidden(studentNorm2q, T, shape, w, ref::GatedBranch::kGate); }, kLocalSwiglu);
  blockCheck(Step::kHiddenq, Step::kHidden);
  floatCheck(Step::kFfnOut, Checkpoint::kFfnOut, {Step::kHiddenq}, [&] { return DownProjection(studentHiddenq, T, shape, w); },
             kLocalSwiglu);
  floatCheck(Step::kOutput, Checkpoint::kOutput, {Step::kResidual1, Step::kFfnOut}, nullptr, std::nullopt);
  {
    // ffnOut is derived from two buffers: two float roundings of the stream's size (the
    // code's add, the runner's subtraction) come on top of the FFN's own error.
    CheckpointDescriptor& d = descriptors[At(Step::kFfnOut)];
    const double stream = Rms(expected[At(Step::kOutput)]);
    const double own = std::max(Rms(d.expected), 1e-300);
    d.tolerance.absoluteOfRms += 1e-6 * stream / own;
    d.localTolerance->absoluteOfRms += 1e-6 * stream / own;
    // output - residual1 is what ffnOut is: output's local view would compare it with itself.
    descriptors[At(Step::kOutput)].localDecides = false;
  }
  // The mistake only the local view can see: a matmul that multiplies by the activation's
  // float scale (max|x| / 127) instead of the half its block stores. What the step makes of
  // the student's own codes times those float scales, within the local view's tolerance.
  auto floatScaleCandidate = [&](Step s, Step source, Step blocks, const std::function<std::vector<double>(
                                                                        std::span<const double>)>& compute) {
    std::vector<Candidate> candidates;
    if (!UsableAsUpstream(got[At(source)]) || !UsableAsUpstream(got[At(blocks)])) return candidates;
    const std::vector<double> floatScaled = FloatScaleView(got[At(source)], region.Bytes<B>(blockBuffers.at(blocks)));
    const CheckpointDescriptor& d = descriptors[At(s)];
    const double fit = FitOf(d.got, compute(floatScaled), *d.localTolerance);
    if (fit <= 1.0) {
      candidates.push_back(
          {MisconceptionHit{"activation-scale-not-half",
                            fmt::format("{} matches the product of {}'s codes with each block's float scale, "
                                        "max |x| / 127, instead of the half the block stores: the dot product "
                                        "reads d from the block, as HalfToFloat(d).",
                                        d.name, kStepNames[At(blocks)]),
                            fmt::format("{}#the-integer-dot-product", context.stage->lesson)},
           fit});
    }
    return candidates;
  };
  auto withNorm1 = [&](Checkpoint c) {
    return [&, c](std::span<const double> norm1q) {
      ref::BlockState state = student;
      state[ref::Index(Checkpoint::kNorm1)].assign(norm1q.begin(), norm1q.end());
      return on(c, state);
    };
  };
  // The block's own mistakes (stage 1's catalogue), on the student's upstream when it is
  // usable, else on the reference's; and the float-scale mistake after each matmul.
  for (auto [s, c] : {std::pair{Step::kNorm1, Checkpoint::kNorm1}, {Step::kQ, Checkpoint::kQ}, {Step::kK, Checkpoint::kK},
                      {Step::kV, Checkpoint::kV}, {Step::kAttnOut, Checkpoint::kAttnOut},
                      {Step::kResidual1, Checkpoint::kResidual1}, {Step::kNorm2, Checkpoint::kNorm2}}) {
    CheckpointDescriptor& d = descriptors[At(s)];
    d.recognise = [&, s, c, got = d.got, tolerance = d.tolerance](bool onStudent) {
      const ref::BlockState& upstream = onStudent ? student : chain;
      std::vector<Candidate> candidates = BlockCandidates(c, got, tolerance, kBlockLesson, [&](const ref::BlockRecipe& r) {
        return ref::ComputeCheckpoint(c, shape, r, w, inputs, upstream);
      });
      std::vector<Candidate> more;
      if (s == Step::kQ || s == Step::kK || s == Step::kV) {
        more = floatScaleCandidate(s, Step::kNorm1, Step::kNorm1q, withNorm1(c));
      } else if (s == Step::kResidual1) {
        more = floatScaleCandidate(s, Step::kAttnOut, Step::kAttnOutq, [&](std::span<const double> attnOutq) {
          ref::BlockState state = student;
          state[ref::Index(Checkpoint::kAttnOut)].assign(attnOutq.begin(), attnOutq.end());
          return on(Checkpoint::kResidual1, state);
        });
      }
      candidates.insert(candidates.end(), more.begin(), more.end());
      return Choose(std::move(candidates));
    };
  }
  descriptors[At(Step::kHidden)].recognise = [&, got = descriptors[At(Step::kHidden)].got,
                                              tolerance = descriptors[At(Step::kHidden)].tolerance](bool onStudent) {
    const std::vector<double> swapped = GatedHidden(onStudent ? studentNorm2q : expected[At(Step::kNorm2q)], T, shape, w,
                                               ref::GatedBranch::kUp);
    std::vector<Candidate> candidates;
    if (const double fit = FitOf(got, swapped, tolerance); fit <= 1.0) {
      candidates.push_back({MisconceptionHit{"silu-on-up",
                                             "hidden matches SiLU(norm2q . Wup^T) * (norm2q . Wgate^T): SiLU went on "
                                             "the up product, or wgate and wup were swapped.",
                                             fmt::format("{}#the-gated-ffn", kBlockLesson)},
                            fit});
    }
    auto more = floatScaleCandidate(Step::kHidden, Step::kNorm2, Step::kNorm2q, [&](std::span<const double> norm2q) {
      return GatedHidden(norm2q, T, shape, w, ref::GatedBranch::kGate);
    });
    candidates.insert(candidates.end(), more.begin(), more.end());
    return Choose(std::move(candidates));
  };
  descriptors[At(Step::kFfnOut)].recognise = [&](bool) {
    return Choose(floatScaleCandidate(Step::kFfnOut, Step::kHidden, Step::kHiddenq, [&](std::span<const double> hq) {
      return DownProjection(hq, T, shape, w);
    }));
  };

  ChainResult result = CheckChain(descriptors, spec.points);
  for (CheckpointReport& cp : result.checkpoints) {
    if (cp.name != "ffnOut" || cp.status == CheckStatus::kPass) continue;
    const std::string derived = "ffnOut is not a buffer of stage 4: the runner derives it as output - residual1, "
                                "from the two buffers your code wrote.";
    cp.observation = cp.observation.empty() ? derived : derived + " " + cp.observation;
  }
  report.checkpoints = std::move(result.checkpoints);

  const std::vector<uint32_t> outputs = {B::kNorm1, B::kNorm1q, B::kQkv, B::kAttnOut, B::kAttnOutq, B::kResidual1,
                                         B::kNorm2, B::kNorm2q, B::kHidden, B::kHiddenq, B::kOutput};
  const CaseFindings findings =
      FindingsOfChild(outcome, region, context.stage->function, context.limits, outputs, result.allUnwritten);
  Conclude(findings, report);
  return report;
}

}  // namespace

std::unique_ptr<StageDriver> MakeDriver() { return std::make_unique<QuantDriver>(); }

}  // namespace wb::stage04
