// Stage 4's bench child: times the student's matmul_q at T = 1 over matrices larger than the
// last-level cache and at T = 128, and their quant_block on each weight set at T = 1 and
// T = 128, all on one thread count (bench_call.h), each with stage 3's Measure. The kernels
// were validated on the visible suite before this runs; nothing here checks their results.
#include <vector>

#include "bench_call.h"
#include "packed_weights.h"
#include "runner/harness/harness.h"
#include "stage04_quant.h"

namespace wb::harness {
namespace {

using L = stage04::QuantBenchCall;

WeightType ContractType(stage04::Weight weight) {
  return weight == stage04::Weight::kQ4_0 ? WeightType::kQ4_0 : WeightType::kQ8_0;
}
size_t BytesPerBlock(stage04::Weight weight) {
  return weight == stage04::Weight::kQ4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
}
size_t MatrixBytes(stage04::Weight weight, int rows, int cols) {
  return static_cast<size_t>(rows) * static_cast<size_t>(cols / QK) * BytesPerBlock(weight);
}

// The copies' pages are the runner's, filled before the child started, but not yet mapped in
// the child: the first read of each page takes a fault. Touching one byte a page first keeps
// those faults out of the first timed pass over the copies, which would otherwise be slower
// than every later one.
void MapEveryPage(const unsigned char* bytes, size_t count) {
  constexpr size_t kPage = 4096;
  unsigned sum = 0;
  for (size_t at = 0; at < count; at += kPage) sum += bytes[at];
  volatile unsigned keep = sum;
  (void)keep;
}

void Record(float* timings, int measurement, const stage03::Timing& t) {
  float* at = timings + static_cast<size_t>(measurement) * stage03::kTimingFloats;
  at[0] = static_cast<float>(t.median);
  at[1] = static_cast<float>(t.fastest);
  at[2] = static_cast<float>(t.slowest);
  at[3] = static_cast<float>(t.runs);
}

// matmul_q on rows x kDecodeCols of each copy in turn, T rows of the activations.
stage03::Timing TimeMatmulQ(Region& region, const L::Params& p, stage04::Weight weight, int T, int rows) {
  const bool q4 = weight == stage04::Weight::kQ4_0;
  const unsigned char* copies = region.As<L, const unsigned char>(q4 ? L::kQ4Copies : L::kQ8Copies);
  const int copyCount = q4 ? p.q4Copies : p.q8Copies;
  const size_t copyBytes = MatrixBytes(weight, stage04::kDecodeRows, stage04::kDecodeCols);
  const BlockQ8_0* xq = region.As<L, const BlockQ8_0>(L::kActivations);
  float* y = region.Floats<L>(L::kY);
  // Each copy packed once, before the timing, when the student's file takes the optional step
  // (stage04_quant.h); freed after it.
  PackedWeights packed;
  std::vector<QuantMatrix> matrices;
  for (int c = 0; c < copyCount; ++c) {
    matrices.push_back(packed.Pack({.type = ContractType(weight), .blocks = copies + static_cast<size_t>(c) * copyBytes,
                                    .rows = rows, .cols = stage04::kDecodeCols}));
  }
  int next = 0;
  return stage03::Measure(
      [&] {
        matmul_q(T, xq, matrices[static_cast<size_t>(next)], y, Accumulate::kOverwrite, p.threads);
        next = (next + 1) % copyCount;
      },
      p.budgetSeconds, {.data = y, .count = static_cast<size_t>(T) * rows});
}

stage03::Timing TimeBlock(Region& region, const L::Params& p, int set, int T) {
  const unsigned char* at = region.As<L, const unsigned char>(L::kSetMatrices[set]);
  const int shapes[5][2] = {{QKV, D}, {D, D}, {F, D}, {F, D}, {D, F}};  // QuantBlockCall::kMatrices' order
  PackedWeights packed;
  QuantMatrix matrices[5];
  for (int m = 0; m < 5; ++m) {
    const stage04::Weight type = p.types[set][m];
    matrices[m] = packed.Pack({.type = ContractType(type), .blocks = at, .rows = shapes[m][0], .cols = shapes[m][1]});
    at += MatrixBytes(type, shapes[m][0], shapes[m][1]);
  }
  const float* norms = region.Floats<L>(L::kNormWeights) + static_cast<size_t>(set) * 2 * D;
  const QuantWeights w{.rms1 = norms,
                       .wqkv = matrices[0],
                       .wo = matrices[1],
                       .rms2 = norms + D,
                       .wgate = matrices[2],
                       .wup = matrices[3],
                       .wdown = matrices[4]};
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  auto blocks = [&region](L::Buffer b) { return region.As<L, BlockQ8_0>(b); };
  return stage03::Measure(
      [&] {
        quant_block(T, p.threads, w, region.Floats<L>(L::kX), region.Floats<L>(L::kRopeCos),
                    region.Floats<L>(L::kRopeSin), out(L::kNorm1), blocks(L::kNorm1q), out(L::kQkv),
                    out(L::kAttnOut), blocks(L::kAttnOutq), out(L::kResidual1), out(L::kNorm2), blocks(L::kNorm2q),
                    out(L::kHidden), blocks(L::kHiddenq), out(L::kOutput));
      },
      p.budgetSeconds, {.data = out(L::kOutput), .count = static_cast<size_t>(T) * D});
}

}  // namespace

void CallStage(Region& region) {
  region.Bind<L>();
  const L::Params p = region.Params<L>();
  if (p.q8Copies < 1 || p.q4Copies < 1 || p.threads < 1) Fail("the runner laid out no weights to time: rebuild");
  MapEveryPage(region.As<L, const unsigned char>(L::kQ8Copies),
               MatrixBytes(stage04::Weight::kQ8_0, stage04::kDecodeRows, stage04::kDecodeCols) * p.q8Copies);
  MapEveryPage(region.As<L, const unsigned char>(L::kQ4Copies),
               MatrixBytes(stage04::Weight::kQ4_0, stage04::kDecodeRows, stage04::kDecodeCols) * p.q4Copies);
  float* timings = region.Floats<L>(L::kTimings);
  region.BeginCall(0);
  using stage04::Weight;
  Record(timings, stage04::kDecodeQ8_0, TimeMatmulQ(region, p, Weight::kQ8_0, 1, stage04::kDecodeRows));
  Record(timings, stage04::kDecodeQ4_0, TimeMatmulQ(region, p, Weight::kQ4_0, 1, stage04::kDecodeRows));
  Record(timings, stage04::kPrefillQ8_0,
         TimeMatmulQ(region, p, Weight::kQ8_0, stage04::kPrefillT, stage04::kPrefillRows));
  Record(timings, stage04::kPrefillQ4_0,
         TimeMatmulQ(region, p, Weight::kQ4_0, stage04::kPrefillT, stage04::kPrefillRows));
  for (int set = 0; set < stage04::kBlockSetCount; ++set) {
    for (size_t i = 0; i < stage04::kBlockTokens.size(); ++i) {
      Record(timings, stage04::BlockMeasurement(set, static_cast<int>(i)),
             TimeBlock(region, p, set, stage04::kBlockTokens[i]));
    }
  }
  region.EndCall();
}

}  // namespace wb::harness
