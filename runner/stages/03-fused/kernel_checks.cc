#include "kernel_checks.h"

#include <algorithm>
#include <bit>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fused_call.h"
#include "reference/block/ops.h"
#include "reference/gen/block_data.h"
#include "runner/compare/block_tolerances.h"
#include "runner/diagnose/misconceptions.h"
#include "runner/engine/case_verdict.h"
#include "runner/engine/checkpoint_engine.h"
#include "runner/engine/crash_description.h"
#include "runner/isolation/shared_region.h"

namespace wb::stage03 {
namespace {

using L = KernelCall;

// The block's own mistakes (attention's) are explained in stage 1's lesson.
constexpr const char* kBlockLessonPath = "docs/stages/01-block.md";
// The input streams of a case: x (or qkv) from the seed itself, each matrix from its own.
constexpr uint64_t kFirstMatrixStream = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kSecondMatrixStream = 0xbf58476d1ce4e5b9ull;
constexpr uint64_t kStartStream = 0x94d049bb133111ebull;

constexpr std::array<std::string_view, 3> kIds = {"accumulate-ignored", "accumulate-applied-twice",
                                                  "silu-on-up"};

std::vector<double> AsDoubles(std::span<const float> values) { return {values.begin(), values.end()}; }

int HeadDim() { return ref::Stage1Shape().headDim; }

Kernel KernelOf(const std::string& name) {
  if (name == "matmul_swiglu") return Kernel::kMatmulSwiglu;
  if (name == "causal_attention") return Kernel::kCausalAttention;
  return Kernel::kMatmul;
}

// Tolerances, from the reasoning in runner/compare/block_tolerances.cc: a matmul is a
// projection (in-term float dot products, here up to 8192 terms, so 4x the 512-term
// figure's headroom is kept by scaling with sqrt(in / 512)); SwiGLU multiplies two of them
// through SiLU (slope at most 1.1); attention is the block's attention.
Tolerance KernelTolerance(Kernel kernel, int in) {
  const double terms = std::max(1.0, std::sqrt(in / 512.0));
  switch (kernel) {
    case Kernel::kMatmul:
      return {.absoluteOfRms = 1e-3 * terms, .relative = 1e-4 * terms};
    case Kernel::kMatmulSwiglu:
      return {.absoluteOfRms = 2e-3 * terms, .relative = 2e-4 * terms};
    case Kernel::kCausalAttention:
      break;
  }
  return BlockTolerance(ref::Checkpoint::kAttnOut);
}

// What a case computes, as inputs and the pieces its reference and its mistakes are made of.
struct KernelCase {
  Kernel kernel = Kernel::kMatmul;
  int T = 0, out = 0, in = 0;
  std::vector<float> input, first, second, start;  // start: y's values before an accumulating matmul
  std::vector<double> product;                     // x . W^T (matmul), or gate and up below
  std::vector<double> gate, up;
  std::vector<double> expected;
  int width = 0;  // of a result row
};

KernelCase MakeCase(const CaseSpec& spec) {
  KernelCase k;
  k.kernel = KernelOf(spec.kernel);
  k.T = spec.T;
  if (k.kernel == Kernel::kCausalAttention) {
    const ref::BlockShape shape = ref::Stage1Shape();
    const int qkv = shape.qWidth() + 2 * shape.kvWidth();
    k.width = shape.qWidth();
    k.input = ref::GenerateInputRows(spec.seed, k.T, qkv, spec.xScale);
    // w_scale scales the keys (the k part of each row): scores grow with it, as with the
    // block's scaled weights.
    for (int t = 0; t < k.T; ++t) {
      float* key = k.input.data() + static_cast<size_t>(t) * qkv + shape.qWidth();
      for (int c = 0; c < shape.kvWidth(); ++c) key[c] = static_cast<float>(key[c] * spec.wScale);
    }
    std::vector<double> q, kk, v;
    for (int t = 0; t < k.T; ++t) {
      const float* row = k.input.data() + static_cast<size_t>(t) * qkv;
      q.insert(q.end(), row, row + shape.qWidth());
      kk.insert(kk.end(), row + shape.qWidth(), row + shape.qWidth() + shape.kvWidth());
      v.insert(v.end(), row + shape.qWidth() + shape.kvWidth(), row + qkv);
    }
    // The attention kernel's q, k and v, kept for the diagnosis's recipes.
    k.product = std::move(q);
    k.gate = std::move(kk);
    k.up = std::move(v);
    k.expected.assign(static_cast<size_t>(k.T) * k.width, 0.0);
    ref::Attend(k.product, k.gate, k.up, {.queries = k.T, .firstQueryPosition = 0, .keys = k.T, .window = 0}, shape,
                ref::BlockRecipe{}, k.expected);
    k.first = {0.0f};
    k.second = {0.0f};
    return k;
  }
  k.out = spec.out;
  k.in = spec.in;
  k.width = k.out;
  // Matrix entries u * 2 / sqrt(in): each output's variance stays near 4/9 whatever `in` is.
  const double matrixScale = spec.wScale * 2.0 / std::sqrt(static_cast<double>(k.in));
  k.input = ref::GenerateInputRows(spec.seed, k.T, k.in, spec.xScale);
  k.first = ref::GenerateInputRows(spec.seed ^ kFirstMatrixStream, k.out, k.in, matrixScale);
  const std::vector<double> x = AsDoubles(k.input);
  const size_t elements = static_cast<size_t>(k.T) * k.out;
  if (k.kernel == Kernel::kMatmul) {
    k.second = {0.0f};
    k.product.assign(elements, 0.0);
    ref::Project(x, k.T, k.in, k.first, k.out, k.product);
    k.expected = k.product;
    if (spec.accumulate) {
      k.start = ref::GenerateInputRows(spec.seed ^ kStartStream, k.T, k.out, 1.0);
      for (size_t i = 0; i < elements; ++i) k.expected[i] += k.start[i];
    }
    return k;
  }
  k.second = ref::GenerateInputRows(spec.seed ^ kSecondMatrixStream, k.out, k.in, matrixScale);
  k.gate.assign(elements, 0.0);
  k.up.assign(elements, 0.0);
  ref::Project(x, k.T, k.in, k.first, k.out, k.gate);
  ref::Project(x, k.T, k.in, k.second, k.out, k.up);
  k.expected.assign(elements, 0.0);
  ref::GatedProduct(k.gate, k.up, ref::Activation::kSilu, ref::GatedBranch::kGate, k.expected);
  return k;
}

std::string Shape(const KernelCase& k) { return fmt::format("{} x {}", k.T, k.width); }

std::string Where(const KernelCase& k, size_t index) {
  const size_t row = index / k.width;
  const int column = static_cast<int>(index % k.width);
  if (k.kernel == Kernel::kCausalAttention) {
    return fmt::format("token {}, head {}, channel {}", row, column / HeadDim(), column % HeadDim());
  }
  return fmt::format("row {}, column {}", row, column);
}

// The kernel mistakes a wrong result may match (misconception.h's rule picks one).
Recognition RecogniseKernel(const KernelCase& k, const CaseSpec& spec, std::span<const float> got,
                            const Tolerance& tolerance, const std::string& lesson) {
  std::vector<Candidate> candidates;
  auto consider = [&](std::string_view id, std::string sentence, std::string anchor,
                      const std::vector<double>& predicted) {
    const double fit = FitOf(got, predicted, tolerance);
    if (fit <= 1.0) {
      candidates.push_back({MisconceptionHit{std::string(id), std::move(sentence), lesson + "#" + anchor}, fit});
    }
  };
  switch (k.kernel) {
    case Kernel::kMatmul: {
      if (!spec.accumulate) break;
      consider(kIds[0],
               "The result is x . W^T alone: with Accumulate::kAdd the product must be added to what y already "
               "holds, and it was written over it.",
               "the-residual-as-accumulate", k.product);
      std::vector<double> twice = k.expected;
      for (size_t i = 0; i < twice.size(); ++i) twice[i] += k.product[i];
      consider(kIds[1],
               "The result is y + 2 x . W^T: the product was added twice, as happens when a tile's sum is "
               "added to y and then y is updated again.",
               "the-residual-as-accumulate", twice);
      break;
    }
    case Kernel::kMatmulSwiglu: {
      std::vector<double> swapped(k.expected.size(), 0.0);
      ref::GatedProduct(k.gate, k.up, ref::Activation::kSilu, ref::GatedBranch::kUp, swapped);
      consider(kIds[2],
               "The result matches SiLU(x . Wup^T) * (x . Wgate^T): SiLU went on the up product, or the two "
               "matrices were swapped.",
               "fusing-the-swiglu-epilogue", swapped);
      break;
    }
    case Kernel::kCausalAttention: {
      const ref::BlockShape shape = ref::Stage1Shape();
      auto more = BlockCandidates(ref::Checkpoint::kAttnOut, got, tolerance, kBlockLessonPath,
                                  [&](const ref::BlockRecipe& recipe) {
                                    std::vector<double> outValues(k.expected.size(), 0.0);
                                    ref::Attend(k.product, k.gate, k.up,
                                                {.queries = k.T, .firstQueryPosition = 0, .keys = k.T, .window = 0},
                                                shape, recipe, outValues);
                                    return outValues;
                                  });
      candidates.insert(candidates.end(), more.begin(), more.end());
      break;
    }
  }
  return Choose(std::move(candidates));
}

// The elements where two runs differ in any bit.
struct RunDifference {
  size_t count = 0;
  size_t first = 0;
};
RunDifference CompareRuns(std::span<const float> a, std::span<const float> b) {
  RunDifference d;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      if (d.count == 0) d.first = i;
      ++d.count;
    }
  }
  return d;
}

}  // namespace

std::span<const std::string_view> KernelMisconceptionIds() { return kIds; }

Expected<CaseReport> RunKernelCase(const CaseSpec& spec, const StageContext& context) {
  const KernelCase k = MakeCase(spec);
  CaseReport report;
  report.parameters = k.kernel == Kernel::kCausalAttention
                          ? fmt::format("{} T={}, threads {}, seed {}", spec.kernel, k.T, spec.threads, spec.seed)
                          : fmt::format("{} T={} out={} in={}{}, threads {}, seed {}", spec.kernel, k.T, k.out, k.in,
                                        spec.accumulate ? " accumulate" : "", spec.threads, spec.seed);
  if (spec.xScale != 1.0) report.parameters += fmt::format(", x_scale {}", spec.xScale);
  if (spec.wScale != 1.0) report.parameters += fmt::format(", w_scale {}", spec.wScale);
  if (auto finite = RequireFiniteReference(spec.name, spec.kernel, k.expected); !finite.ok()) return finite.error();

  std::array<BufferSize, L::kBufferCount> sizes{};
  sizes[L::kInput] = {k.input.size(), shm::kReadOnly};
  sizes[L::kFirst] = {k.first.size(), shm::kReadOnly};
  sizes[L::kSecond] = {k.second.size(), shm::kReadOnly};
  sizes[L::kResult] = {k.expected.size(), shm::kWritable};
  sizes[L::kSecondRun] = {k.expected.size(), shm::kWritable};
  auto created = SharedRegion::Create<L>(sizes);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  std::ranges::copy(k.input, region.Floats<L>(L::kInput).begin());
  std::ranges::copy(k.first, region.Floats<L>(L::kFirst).begin());
  std::ranges::copy(k.second, region.Floats<L>(L::kSecond).begin());
  region.PoisonOutputs();
  if (!k.start.empty()) {
    std::ranges::copy(k.start, region.Floats<L>(L::kResult).begin());
    std::ranges::copy(k.start, region.Floats<L>(L::kSecondRun).begin());
  }
  region.SetParams<L>({.kernel = k.kernel, .tokens = k.T, .out = k.out, .in = k.in,
                       .accumulate = spec.accumulate ? 1 : 0, .threads = spec.threads});

  auto ran = RunInChild(context.harness, region, context.limits);
  if (!ran.ok()) return ran.error();
  const ChildOutcome& outcome = *ran;
  report.callSeconds = outcome.callSeconds;
  report.childOutput = ChildOutputText(outcome);

  std::span<const float> got = region.Floats<L>(L::kResult);
  const std::span<const float> again = region.Floats<L>(L::kSecondRun);
  // An accumulating case starts from values, not poison: a result still bit for bit those
  // values everywhere is a kernel that wrote nothing, and is reported as never written.
  std::vector<float> untouched;
  if (!k.start.empty() && std::memcmp(got.data(), k.start.data(), got.size_bytes()) == 0) {
    untouched.assign(got.size(), 0.0f);
    std::ranges::fill(untouched, std::bit_cast<float>(shm::kPoisonWord));
    got = untouched;
  }
  CheckpointDescriptor d;
  d.name = spec.kernel;
  d.shape = Shape(k);
  d.got = got;
  d.expected = k.expected;
  d.tolerance = KernelTolerance(k.kernel, k.in);
  d.where = [&k](size_t index) { return Where(k, index); };
  d.geometry = BufferGeometry{.rows = k.T, .width = k.width,
                              .headDim = k.kernel == Kernel::kCausalAttention ? HeadDim() : 0,
                              .rowName = k.kernel == Kernel::kCausalAttention ? "token" : "row", .firstRow = 0};
  d.recognise = [&, got, tolerance = d.tolerance](bool) {
    return RecogniseKernel(k, spec, got, tolerance, context.stage->lesson);
  };
  ChainResult chain = CheckChain(std::span(&d, 1), spec.points);

  // A second run that differs is a race, whatever the first run got.
  const bool returned = outcome.ending == ChildOutcome::Ending::kReturned;
  if (const RunDifference diff = CompareRuns(got, again); returned && diff.count > 0 && !chain.allUnwritten) {
    RecordRace(diff.count, got.size(), "elements", Where(k, diff.first), chain.checkpoints.front(), report);
  }
  report.checkpoints = std::move(chain.checkpoints);

  const std::vector<uint32_t> outputs = {L::kResult, L::kSecondRun};
  const CaseFindings findings =
      FindingsOfChild(outcome, region, spec.kernel, context.limits, outputs, chain.allUnwritten);
  Conclude(findings, report);
  return report;
}

}  // namespace wb::stage03
