// Stage 4's bench child: one measurement (bench_call.h), the student's matmul_q at T = 1 over
// matrices larger than the last-level cache or at T = 128, or their quant_block on a weight set
// at T = 1 or T = 128, on one thread count: an untimed call, then the timed calls, each on
// inputs of its own and into the next output slot. It times nothing itself: the runner
// times the child from outside and checks calls it draws (runner/stages/bench_engine.h). The
// kernels were validated on the visible suite before this runs.
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

// The untimed call, then `calls` calls, call c after makeInputs(seed, c), each into its output
// slot (Region::RunBenchCalls).
template <typename MakeInputs, typename Call>
void RunCalls(Region& region, const L::Params& p, const MakeInputs& makeInputs, const Call& call, float* slots,
              size_t slotCount) {
  region.RunBenchCalls(p.calls, p.slots, p.callsSkipped != 0, makeInputs,
                       [&](int slot) { call(slots + static_cast<size_t>(slot) * slotCount); });
}

// matmul_q on rows x kDecodeCols of each copy in turn, T rows of the activations.
void TimeMatmulQ(Region& region, const L::Params& p, stage04::Weight weight, int T, int rows) {
  const bool q4 = weight == stage04::Weight::kQ4_0;
  const unsigned char* copies = region.As<L, const unsigned char>(q4 ? L::kQ4Copies : L::kQ8Copies);
  // At T = 1 the weights stream from memory, so each call reads the next copy; at T = 128 the
  // products, not the reads, take the time, and one copy will do.
  const int copyCount = T > 1 ? 1 : q4 ? p.q4Copies : p.q8Copies;
  const size_t copyBytes = MatrixBytes(weight, stage04::kDecodeRows, stage04::kDecodeCols);
  BlockQ8_0* xq = region.As<L, BlockQ8_0>(L::kActivations);
  // Each copy packed once, before the timing, when the student's file takes the optional step
  // (stage04_quant.h); freed after it.
  PackedWeights packed;
  std::vector<QuantMatrix> matrices;
  for (int c = 0; c < copyCount; ++c) {
    matrices.push_back(packed.Pack({.type = ContractType(weight), .blocks = copies + static_cast<size_t>(c) * copyBytes,
                                    .rows = rows, .cols = stage04::kDecodeCols}));
  }
  int next = 0;
  const size_t activationBlocks = static_cast<size_t>(T) * (stage04::kDecodeCols / QK);
  RunCalls(
      region, p,
      [&](uint64_t seed, uint32_t c) {
        stage04::TimedActivationBytes(TimedInputs(seed, L::kTimedActivations, c), 0, activationBlocks,
                                      reinterpret_cast<unsigned char*>(xq));
      },
      [&](float* y) {
        matmul_q(T, xq, matrices[static_cast<size_t>(next)], y, Accumulate::kOverwrite, p.threads);
        next = (next + 1) % copyCount;
      },
      region.Floats<L>(L::kY), static_cast<size_t>(T) * rows);
}

void TimeBlock(Region& region, const L::Params& p, int set, int T) {
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
  float* x = region.Floats<L>(L::kX);
  RunCalls(
      region, p,
      [&](uint64_t seed, uint32_t c) { TimedInputs(seed, L::kTimedX, c).Fill(x, static_cast<size_t>(T) * D); },
      [&](float* output) {
        quant_block(T, p.threads, w, x, region.Floats<L>(L::kRopeCos), region.Floats<L>(L::kRopeSin), out(L::kNorm1),
                    blocks(L::kNorm1q), out(L::kQkv), out(L::kAttnOut), blocks(L::kAttnOutq), out(L::kResidual1),
                    out(L::kNorm2), blocks(L::kNorm2q), out(L::kHidden), blocks(L::kHiddenq), output);
      },
      out(L::kOutput), static_cast<size_t>(T) * D);
}

}  // namespace

void CallStage(Region& region) {
  region.Bind<L>();
  const L::Params p = region.Params<L>();
  if (p.q8Copies < 1 || p.q4Copies < 1 || p.threads < 1) Fail("the runner laid out no weights to time: rebuild");
  if (p.measurement < 0 || p.measurement >= stage04::kQuantMeasurementCount || p.calls < 0 || p.slots < 1) {
    Fail("the runner asked for a measurement the bench does not have: rebuild the workbook");
  }
  using stage04::Weight;
  region.BeginCall(0);
  switch (p.measurement) {
    case stage04::kDecodeQ8_0:
    case stage04::kDecodeQ4_0: {
      const Weight type = p.measurement == stage04::kDecodeQ8_0 ? Weight::kQ8_0 : Weight::kQ4_0;
      MapEveryPage(region.As<L, const unsigned char>(type == Weight::kQ8_0 ? L::kQ8Copies : L::kQ4Copies),
                   MatrixBytes(type, stage04::kDecodeRows, stage04::kDecodeCols) *
                       (type == Weight::kQ8_0 ? p.q8Copies : p.q4Copies));
      TimeMatmulQ(region, p, type, 1, stage04::kDecodeRows);
      break;
    }
    case stage04::kPrefillQ8_0:
      TimeMatmulQ(region, p, Weight::kQ8_0, stage04::kPrefillT, stage04::kPrefillRows);
      break;
    case stage04::kPrefillQ4_0:
      TimeMatmulQ(region, p, Weight::kQ4_0, stage04::kPrefillT, stage04::kPrefillRows);
      break;
    default: {
      const int block = p.measurement - stage04::kFirstBlockMeasurement;
      const int perSet = static_cast<int>(stage04::kBlockTokens.size());
      TimeBlock(region, p, block / perSet, stage04::kBlockTokens[static_cast<size_t>(block % perSet)]);
    }
  }
  region.EndCall();
}

}  // namespace wb::harness
