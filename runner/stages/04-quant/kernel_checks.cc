#include "kernel_checks.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_driver.h"
#include "model/files/tensor_types.h"
#include "quant_call.h"
#include "quant_checks.h"
#include "quant_weights.h"
#include "reference/gen/block_data.h"
#include "runner/diagnose/misconceptions.h"
#include "runner/engine/case_verdict.h"
#include "runner/engine/checkpoint_engine.h"
#include "runner/engine/crash_description.h"
#include "runner/isolation/shared_region.h"

namespace wb::stage04 {
namespace {

using L = KernelCall;

constexpr uint64_t kMatrixStream = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kStartStream = 0x94d049bb133111ebull;

// The last is named at the block's checkpoints after a matmul (quant_driver.cc).
constexpr std::array<std::string_view, 5> kMatmulIds = {"q4-nibbles-interleaved", "q4-offset-forgotten",
                                                        "scale-per-row", "int16-overflow",
                                                        "activation-scale-not-half"};

Kernel KernelOf(const std::string& name) { return name == "matmul_q" ? Kernel::kMatmulQ : Kernel::kQuantize; }

// The special blocks of kernel_checks.h, written over the first blocks of `x`.
void PlantSpecialBlocks(std::vector<float>& x, uint64_t seed) {
  const size_t blocks = x.size() / kQK;
  std::vector<float> noise = ref::GenerateInputRows(seed ^ 0x5bd1e995u, 1, 5 * kQK, 1.0);
  auto block = [&](size_t b) { return std::span(x).subspan(b * kQK, kQK); };
  auto random = [&](size_t b) { return std::span(noise).subspan(b * kQK, kQK); };
  if (blocks > 0) std::ranges::fill(block(0), 0.0f);
  if (blocks > 1) {
    std::ranges::copy(random(1), block(1).begin());
    block(1)[7] = -3.0f;  // every other value is within (-1, 1)
  }
  if (blocks > 2) {
    // d = 127 / 127 = 1 exactly, so x * id is x: the halves are exact ties.
    for (int j = 0; j < kQK; ++j) block(2)[j] = static_cast<float>(j - 16) + 0.5f;
    block(2)[0] = 127.0f;
  }
  if (blocks > 3) {
    for (int j = 0; j < kQK; ++j) block(3)[j] = random(3)[j] * 1e-5f;
    block(3)[5] = 1e-40f;  // a float subnormal, quantized to 0
  }
  if (blocks > 4) {
    for (int j = 0; j < kQK; ++j) block(4)[j] = random(4)[j] * 1e5f;
  }
}

// A quantized matrix's codes as signed integers (value j of block b of row r at
// r * cols + b * 32 + j), and its block scales (row-major, rows x cols / 32).
struct Codes {
  std::vector<int> q;
  std::vector<double> d;
};

// Q4_0 codes in the contract's order, or in one of two mistaken orders.
enum class Nibbles { kContract, kInterleaved, kNoOffset };

Codes CodesOf(std::span<const unsigned char> bytes, Weight type, int rows, int cols, Nibbles nibbles = Nibbles::kContract) {
  Codes c;
  const int perRow = cols / kQK;
  const size_t blockBytes = BlockBytes(type);
  c.q.resize(static_cast<size_t>(rows) * cols);
  c.d.resize(static_cast<size_t>(rows) * perRow);
  for (size_t b = 0; b < c.d.size(); ++b) {
    const unsigned char* block = bytes.data() + b * blockBytes;
    uint16_t d;
    std::memcpy(&d, block, 2);
    c.d[b] = HalfToFloat(d);
    int* q = c.q.data() + b * kQK;
    for (int j = 0; j < kQK; ++j) {
      if (type == Weight::kQ8_0) {
        q[j] = static_cast<int8_t>(block[2 + j]);
        continue;
      }
      const int offset = nibbles == Nibbles::kNoOffset ? 0 : 8;
      if (nibbles == Nibbles::kInterleaved) {
        const unsigned char byte = block[2 + j / 2];
        q[j] = (j % 2 == 0 ? (byte & 15) : (byte >> 4)) - offset;
      } else {
        const unsigned char byte = block[2 + j % 16];
        q[j] = (j < 16 ? (byte & 15) : (byte >> 4)) - offset;
      }
    }
  }
  return c;
}

// How a mistaken matmul_q sums a block pair.
enum class Sum { kExact, kInt16, kInt8, kFirstScales };

std::vector<double> Product(const Codes& x, const Codes& w, int T, int out, int in, Sum sum) {
  const int perRow = in / kQK;
  std::vector<double> y(static_cast<size_t>(T) * out, 0.0);
  for (int t = 0; t < T; ++t) {
    for (int o = 0; o < out; ++o) {
      double total = 0;
      for (int b = 0; b < perRow; ++b) {
        const int* xq = x.q.data() + static_cast<size_t>(t) * in + b * kQK;
        const int* wq = w.q.data() + static_cast<size_t>(o) * in + b * kQK;
        int64_t isum = 0;
        for (int j = 0; j < kQK; ++j) isum += int64_t{xq[j]} * wq[j];
        if (sum == Sum::kInt16) isum = static_cast<int16_t>(static_cast<uint16_t>(isum & 0xFFFF));
        if (sum == Sum::kInt8) isum = static_cast<int8_t>(static_cast<uint8_t>(isum & 0xFF));
        const size_t xb = static_cast<size_t>(t) * perRow + (sum == Sum::kFirstScales ? 0 : b);
        const size_t wb = static_cast<size_t>(o) * perRow + (sum == Sum::kFirstScales ? 0 : b);
        total += x.d[xb] * w.d[wb] * static_cast<double>(isum);
      }
      y[static_cast<size_t>(t) * out + o] = total;
    }
  }
  return y;
}

// The float sum over blocks may round in any order: up to about (blocks + 2) u of the sum of
// the blocks' magnitudes (Higham, eq. 3.5), typically its square root. 1e-4 of the RMS, more
// for long rows, is above that for every shape a case may have and far below any mistake.
Tolerance MatmulTolerance(int in) {
  const double blocks = in / static_cast<double>(kQK);
  return {.absoluteOfRms = 1e-4 * std::max(1.0, std::sqrt(blocks / 16.0)), .relative = 1e-5};
}

struct MatmulCase {
  Weight type = Weight::kQ8_0;
  std::vector<float> x;                  // T x in, before quantization
  std::vector<unsigned char> xq, wq;     // blocks
  std::vector<float> start;              // y's values before an accumulating call
  Codes xc, wc;
  std::vector<double> product, expected;
};

Expected<MatmulCase> MakeMatmulCase(const CaseSpec& spec) {
  MatmulCase m;
  m.type = spec.weights == "q4_0" ? Weight::kQ4_0 : Weight::kQ8_0;
  const double matrixScale = spec.wScale * 2.0 / std::sqrt(static_cast<double>(spec.in));
  m.x = ref::GenerateInputRows(spec.seed, spec.T, spec.in, spec.xScale);
  std::vector<float> w = ref::GenerateInputRows(spec.seed ^ kMatrixStream, spec.out, spec.in, matrixScale);
  // The extreme block pair: every code 127 (Q8_0) or -8 (Q4_0) against 127s.
  std::fill(m.x.begin(), m.x.begin() + kQK, 1.0f);
  std::fill(w.begin(), w.begin() + kQK, static_cast<float>(m.type == Weight::kQ8_0 ? matrixScale : -matrixScale));
  auto quantized = ReferenceQ8_0(m.x);
  if (!quantized) return BadData(fmt::format("case {}: x_scale makes values that are not finite", spec.name));
  m.xq = std::move(*quantized);
  const TensorType type = m.type == Weight::kQ4_0 ? TensorType::kQ4_0 : TensorType::kQ8_0;
  const size_t rowBytes = static_cast<size_t>(spec.in / kQK) * BlockBytes(m.type);
  m.wq.resize(rowBytes * spec.out);
  for (int o = 0; o < spec.out; ++o) {
    const auto row = std::span<const float>(w).subspan(static_cast<size_t>(o) * spec.in, spec.in);
    const auto target = std::as_writable_bytes(std::span(m.wq)).subspan(rowBytes * o, rowBytes);
    const Status s = type == TensorType::kQ8_0 ? QuantizeRowQ8_0(row, target) : QuantizeRowQ4_0(row, target);
    if (!s.ok()) return BadData(fmt::format("case {}: {}", spec.name, s.error().message));
  }
  m.xc = CodesOf(m.xq, Weight::kQ8_0, spec.T, spec.in);
  m.wc = CodesOf(m.wq, m.type, spec.out, spec.in);
  m.product = Product(m.xc, m.wc, spec.T, spec.out, spec.in, Sum::kExact);
  m.expected = m.product;
  if (spec.accumulate) {
    m.start = ref::GenerateInputRows(spec.seed ^ kStartStream, spec.T, spec.out, 1.0);
    for (size_t i = 0; i < m.expected.size(); ++i) m.expected[i] += m.start[i];
  }
  return m;
}

Recognition RecogniseMatmul(const MatmulCase& m, const CaseSpec& spec, std::span<const float> got,
                            const Tolerance& tolerance, const std::string& lesson) {
  std::vector<Candidate> candidates;
  auto consider = [&](size_t id, std::string sentence, std::string anchor, std::vector<double> predicted) {
    for (size_t i = 0; i < predicted.size() && spec.accumulate; ++i) predicted[i] += m.start[i];
    const double fit = FitOf(got, predicted, tolerance);
    if (fit <= 1.0) {
      candidates.push_back(
          {MisconceptionHit{std::string(kMatmulIds[id]), std::move(sentence), lesson + "#" + anchor}, fit});
    }
  };
  if (m.type == Weight::kQ4_0) {
    consider(0,
             "The result matches Q4_0 codes read as neighbours, value 2j from the low nibble of byte j and 2j + 1 "
             "from its high nibble. ggml's layout keeps values 0-15 in the low nibbles and 16-31 in the high ones.",
             "the-q4_0-block",
             Product(m.xc, CodesOf(m.wq, m.type, spec.out, spec.in, Nibbles::kInterleaved), spec.T, spec.out, spec.in,
                     Sum::kExact));
    consider(1,
             "The result matches Q4_0 codes used as they are stored, 0 .. 15: a code stands for (q - 8) x d.",
             "the-q4_0-block",
             Product(m.xc, CodesOf(m.wq, m.type, spec.out, spec.in, Nibbles::kNoOffset), spec.T, spec.out, spec.in,
                     Sum::kExact));
  }
  consider(2,
           "The result matches every block multiplied by the scales of its row's first block: each block pair has "
           "its own two scales, applied to that block's integer sum.",
           "the-integer-dot-product", Product(m.xc, m.wc, spec.T, spec.out, spec.in, Sum::kFirstScales));
  for (Sum narrow : {Sum::kInt16, Sum::kInt8}) {
    consider(3,
             fmt::format("The result matches each block's integer sum kept in {} bits, which wraps: 32 products of "
                         "up to 127 x 127 sum to as much as 516,128. Accumulate a block's products in 32-bit integers.",
                         narrow == Sum::kInt16 ? 16 : 8),
             "the-integer-dot-product", Product(m.xc, m.wc, spec.T, spec.out, spec.in, narrow));
  }
  return Choose(std::move(candidates));
}

struct RunDifference {
  size_t count = 0;
  size_t first = 0;
};
RunDifference CompareRuns(std::span<const unsigned char> a, std::span<const unsigned char> b, size_t unit) {
  RunDifference d;
  for (size_t i = 0; i < a.size() / unit; ++i) {
    if (std::memcmp(a.data() + i * unit, b.data() + i * unit, unit) != 0) {
      if (d.count == 0) d.first = i;
      ++d.count;
    }
  }
  return d;
}

std::string Parameters(const CaseSpec& spec, Kernel kernel) {
  std::string text =
      kernel == Kernel::kQuantize
          ? fmt::format("quantize_q8_0 T={} in={}, seed {}", spec.T, spec.in, spec.seed)
          : fmt::format("matmul_q {} T={} out={} in={}{}, threads {}, seed {}", spec.weights, spec.T, spec.out, spec.in,
                        spec.accumulate ? " accumulate" : "", spec.threads, spec.seed);
  if (spec.xScale != 1.0) text += fmt::format(", x_scale {}", spec.xScale);
  if (spec.wScale != 1.0) text += fmt::format(", w_scale {}", spec.wScale);
  return text;
}

}  // namespace

std::span<const std::string_view> MatmulMisconceptionIds() { return kMatmulIds; }

Expected<CaseReport> RunKernelCase(const CaseSpec& spec, const StageContext& context) {
  const Kernel kernel = KernelOf(spec.kernel);
  if (spec.in % kQK != 0) {
    return BadData(fmt::format("case {}: in = {} is not a multiple of {}: quantized rows are whole blocks", spec.name,
                               spec.in, kQK));
  }
  CaseReport report;
  report.parameters = Parameters(spec, kernel);
  const size_t blocks = static_cast<size_t>(spec.T) * spec.in / kQK;

  std::vector<float> x;
  MatmulCase m;
  std::array<BufferSize, L::kBufferCount> sizes{};
  if (kernel == Kernel::kQuantize) {
    x = ref::GenerateInputRows(spec.seed, spec.T, spec.in, spec.xScale);
    PlantSpecialBlocks(x, spec.seed);
    sizes[L::kInput] = {x.size(), shm::kReadOnly};
    sizes[L::kWeights] = BufferSize::Bytes(1, shm::kReadOnly);
    sizes[L::kResult] = sizes[L::kSecondRun] = BufferSize::Bytes(blocks * kQ8Bytes, shm::kWritable);
    sizes[L::kPackedRun] = BufferSize::Bytes(1, shm::kWritable);
  } else {
    auto made = MakeMatmulCase(spec);
    if (!made.ok()) return made.error();
    m = std::move(*made);
    if (auto finite = RequireFiniteReference(spec.name, spec.kernel, m.expected); !finite.ok()) return finite.error();
    sizes[L::kInput] = BufferSize::Bytes(m.xq.size(), shm::kReadOnly);
    sizes[L::kWeights] = BufferSize::Bytes(m.wq.size(), shm::kReadOnly);
    sizes[L::kResult] = sizes[L::kSecondRun] = sizes[L::kPackedRun] = {m.expected.size(), shm::kWritable};
  }
  sizes[L::kPacking] = BufferSize::Bytes(sizeof(int32_t), shm::kWritable);
  auto created = SharedRegion::Create<L>(sizes);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  if (kernel == Kernel::kQuantize) {
    std::ranges::copy(x, region.Floats<L>(L::kInput).begin());
  } else {
    std::ranges::copy(m.xq, region.Bytes<L>(L::kInput).begin());
    std::ranges::copy(m.wq, region.Bytes<L>(L::kWeights).begin());
  }
  region.PoisonOutputs();
  if (!m.start.empty()) {
    std::ranges::copy(m.start, region.Floats<L>(L::kResult).begin());
    std::ranges::copy(m.start, region.Floats<L>(L::kSecondRun).begin());
    std::ranges::copy(m.start, region.Floats<L>(L::kPackedRun).begin());
  }
  region.SetParams<L>({.kernel = kernel, .tokens = spec.T, .out = spec.out, .in = spec.in, .weight = m.type,
                       .accumulate = spec.accumulate ? 1 : 0, .threads = spec.threads});

  auto ran = RunInChild(context.harness, region, context.limits);
  if (!ran.ok()) return ran.error();
  const ChildOutcome& outcome = *ran;
  report.callSeconds = outcome.callSeconds;
  report.childOutput = ChildOutputText(outcome);

  const std::span<const unsigned char> first = region.Bytes<L>(L::kResult);
  const std::span<const unsigned char> second = region.Bytes<L>(L::kSecondRun);
  // The harness sets this to 1 when the student's file packs the weights (the optional step of
  // stage04_quant.h) and it made the third run with them.
  int32_t packing = 0;
  std::memcpy(&packing, region.Bytes<L>(L::kPacking).data(), sizeof packing);
  const bool packed = kernel == Kernel::kMatmulQ && packing == 1;
  ChainResult chain;
  std::string where;
  RunDifference diff;
  if (kernel == Kernel::kQuantize) {
    const CheckpointReport cp = CheckQuantizedBlocks({.name = spec.kernel,
                                                      .shape = fmt::format("{} x {} blocks", spec.T, spec.in / kQK),
                                                      .got = first,
                                                      .source = x,
                                                      .rows = spec.T,
                                                      .blocksPerRow = spec.in / kQK,
                                                      .rowName = "row",
                                                      .lesson = context.stage->lesson,
                                                      .sourceNote = "",
                                                      .points = spec.points});
    chain.allUnwritten = cp.unwritten == cp.total;
    chain.checkpoints.push_back(cp);
    diff = CompareRuns(first, second, kQ8Bytes);
    where = fmt::format("row {}, block {}", diff.first / (spec.in / kQK), diff.first % (spec.in / kQK));
  } else {
    std::span<const float> got = region.Floats<L>(L::kResult);
    // An accumulating case starts from values, not poison: a result still bit for bit those
    // values is a kernel that wrote nothing, and is reported as never written.
    std::vector<float> untouched;
    if (!m.start.empty() && std::memcmp(got.data(), m.start.data(), got.size_bytes()) == 0) {
      untouched.assign(got.size(), std::bit_cast<float>(shm::kPoisonWord));
      got = untouched;
    }
    CheckpointDescriptor d;
    d.name = spec.kernel;
    d.shape = fmt::format("{} x {}", spec.T, spec.out);
    d.got = got;
    d.expected = m.expected;
    d.tolerance = MatmulTolerance(spec.in);
    d.where = [&spec](size_t index) { return fmt::format("row {}, column {}", index / spec.out, index % spec.out); };
    d.geometry = BufferGeometry{.rows = spec.T, .width = spec.out, .headDim = 0, .rowName = "row", .firstRow = 0};
    d.recognise = [&, got, tolerance = d.tolerance](bool) {
      return RecogniseMatmul(m, spec, got, tolerance, context.stage->lesson);
    };
    // With packed weights, the third run is checked after the first, as a checkpoint of its own.
    std::span<const float> gotPacked = region.Floats<L>(L::kPackedRun);
    std::vector<float> untouchedPacked;
    if (!m.start.empty() && std::memcmp(gotPacked.data(), m.start.data(), gotPacked.size_bytes()) == 0) {
      untouchedPacked.assign(gotPacked.size(), std::bit_cast<float>(shm::kPoisonWord));
      gotPacked = untouchedPacked;
    }
    CheckpointDescriptor p = d;
    p.name = spec.kernel + kPackedRunSuffix;
    p.got = gotPacked;
    p.recognise = [&, gotPacked, tolerance = d.tolerance](bool) {
      return RecogniseMatmul(m, spec, gotPacked, tolerance, context.stage->lesson);
    };
    const CheckpointDescriptor both[] = {d, p};
    chain = CheckChain(std::span(both, packed ? 2 : 1), spec.points);
    diff = CompareRuns(first, second, sizeof(float));
    where = d.where(diff.first);
  }

  // A second run that differs is a race, whatever the first run got.
  const bool returned = outcome.ending == ChildOutcome::Ending::kReturned;
  if (returned && diff.count > 0 && !chain.allUnwritten) {
    RecordRace(diff.count, kernel == Kernel::kQuantize ? blocks : m.expected.size(),
               kernel == Kernel::kQuantize ? "blocks" : "elements", where, chain.checkpoints.front(), report);
  }
  report.checkpoints = std::move(chain.checkpoints);
  std::vector<uint32_t> outputs = {L::kResult, L::kSecondRun};
  if (packed) outputs.push_back(L::kPackedRun);
  const CaseFindings findings =
      FindingsOfChild(outcome, region, spec.kernel, context.limits, outputs, chain.allUnwritten);
  Conclude(findings, report);
  return report;
}

Expected<CaseReport> RunMatmulLeaderboard(const MatmulLeaderboardRun& run, const StageContext& context) {
  using LB = LeaderboardCall;
  const int perRow = run.in / kQK;
  const size_t rowBytes = static_cast<size_t>(perRow) * BlockBytes(run.type);
  const size_t matrixBytes = rowBytes * run.out;
  const size_t inputBytes = static_cast<size_t>(perRow) * kQ8Bytes;
  CaseReport report;
  report.name = "leaderboard";
  report.parameters = fmt::format("matmul_q {} x {} {}, T=1, {} calls, 1 thread", run.out, run.in,
                                  run.type == Weight::kQ4_0 ? "Q4_0" : "Q8_0", run.calls);

  // A new row of activations for every call: the reference quantizer's blocks of random rows.
  const std::vector<float> x = ref::GenerateInputRows(run.seed, run.calls, run.in, 1.0);
  auto xq = ReferenceQ8_0(x);
  if (!xq) return InternalError("the leaderboard's activations did not quantize");
  std::array<BufferSize, LB::kBufferCount> sizes{};
  sizes[LB::kInputs] = BufferSize::Bytes(xq->size(), shm::kReadOnly);
  sizes[LB::kWeights] = BufferSize::Bytes(matrixBytes * run.copies, shm::kReadOnly);
  sizes[LB::kResults] = {static_cast<size_t>(run.calls) * run.out, shm::kWritable};
  auto created = SharedRegion::Create<LB>(sizes);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  std::ranges::copy(*xq, region.Bytes<LB>(LB::kInputs).begin());
  // The copies need not differ, only live at different addresses.
  const std::span<unsigned char> weights = region.Bytes<LB>(LB::kWeights);
  FillRandomBlocks(run.type, matrixBytes / BlockBytes(run.type), weights.data(), run.seed ^ kMatrixStream);
  for (int c = 1; c < run.copies; ++c) std::memcpy(weights.data() + c * matrixBytes, weights.data(), matrixBytes);
  region.PoisonOutputs();
  region.SetParams<LB>({.calls = run.calls, .copies = run.copies, .out = run.out, .in = run.in, .weight = run.type});

  // Room for the copies packed, when the student's file takes the optional step (each copy is
  // packed once, before the calls: part of the child's time, as its start-up is).
  ChildLimits limits = context.limits;
  if (limits.memoryBytes > 0) limits.memoryBytes += run.copies * MostPackedBytes(matrixBytes);
  auto ran = RunInChild(context.harness, region, limits);
  if (!ran.ok()) return ran.error();
  const ChildOutcome& outcome = *ran;
  report.callSeconds = outcome.callSeconds;
  report.wallSeconds = outcome.wallSeconds;
  report.childOutput = ChildOutputText(outcome);
  const std::span<const float> results = region.Floats<LB>(LB::kResults);

  // Every call's row written and finite: a run that skips calls leaves poison behind.
  CheckpointReport every;
  every.name = "matmul_q, every call";
  every.shape = fmt::format("{} x {}", run.calls, run.out);
  every.total = results.size();
  every.points = every.maxPoints = 1;
  for (float v : results) {
    if (std::bit_cast<uint32_t>(v) == shm::kPoisonWord) {
      ++every.unwritten;
    } else if (std::isnan(v)) {
      ++every.nanCount;
    } else if (std::isinf(v)) {
      ++every.infCount;
    }
  }
  every.failing = every.unwritten + every.nanCount + every.infCount;
  if (every.failing > 0) {
    every.status = CheckStatus::kFail;
    every.points = 0;
    every.observation = fmt::format("{} of the {} values the calls return were never written or are not finite",
                                    every.failing, every.total);
  }

  // Calls drawn now, after the child has returned, checked against the exact product.
  std::vector<int> drawn(run.calls);
  for (int c = 0; c < run.calls; ++c) drawn[c] = c;
  std::shuffle(drawn.begin(), drawn.end(), std::mt19937_64(std::random_device{}()));
  drawn.resize(std::min(run.sampled, run.calls));
  std::sort(drawn.begin(), drawn.end());
  const Codes wc = CodesOf(std::span<const unsigned char>(weights.data(), matrixBytes), run.type, run.out, run.in);
  std::vector<float> got;
  std::vector<double> expected;
  for (int c : drawn) {
    const std::span<const unsigned char> row(xq->data() + inputBytes * c, inputBytes);
    const Codes xc = CodesOf(row, Weight::kQ8_0, 1, run.in);
    const std::vector<double> product = Product(xc, wc, 1, run.out, run.in, Sum::kExact);
    expected.insert(expected.end(), product.begin(), product.end());
    const auto written = results.subspan(static_cast<size_t>(c) * run.out, run.out);
    got.insert(got.end(), written.begin(), written.end());
  }
  CheckpointDescriptor d;
  d.name = "matmul_q, sampled calls";
  d.shape = fmt::format("{} x {}", drawn.size(), run.out);
  d.got = got;
  d.expected = std::move(expected);
  d.tolerance = MatmulTolerance(run.in);
  d.where = [&drawn, &run](size_t index) {
    return fmt::format("call {}, column {}", drawn[index / run.out] + 1, index % run.out);
  };
  d.geometry = BufferGeometry{.rows = static_cast<int>(drawn.size()), .width = run.out, .headDim = 0,
                              .rowName = "call", .firstRow = 0};
  ChainResult chain = CheckChain(std::span(&d, 1), 1);
  report.checkpoints = std::move(chain.checkpoints);
  report.checkpoints.push_back(every);
  const std::vector<uint32_t> outputs = {LB::kResults};
  const CaseFindings findings = FindingsOfChild(outcome, region, "matmul_q", limits, outputs,
                                                chain.allUnwritten && every.unwritten == every.total);
  Conclude(findings, report);
  return report;
}

}  // namespace wb::stage04
