// Stage 4's call: one kernel, twice (matmul_q a third time on packed weights when the student's
// file packs them), one quant_block, or the leaderboard's run of matmul_q (quant_call.h). Which
// one the runner laid out decides. Weights are packed outside the calls (packed_weights.h).
#include <vector>

#include "packed_weights.h"
#include "quant_call.h"
#include "runner/harness/harness.h"
#include "stage04_quant.h"

namespace wb::harness {
namespace {

WeightType TypeOf(stage04::Weight weight) {
  return weight == stage04::Weight::kQ4_0 ? WeightType::kQ4_0 : WeightType::kQ8_0;
}

void CallKernel(Region& region) {
  using L = stage04::KernelCall;
  region.Bind<L>();
  const L::Params p = region.Params<L>();
  const Accumulate mode = p.accumulate != 0 ? Accumulate::kAdd : Accumulate::kOverwrite;
  const L::Buffer outputs[] = {L::kResult, L::kSecondRun};
  for (unsigned run = 0; run < 2; ++run) {
    region.BeginCall(run);
    switch (p.kernel) {
      case stage04::Kernel::kQuantize:
        quantize_q8_0(p.tokens * p.in, region.As<L, const float>(L::kInput), region.As<L, BlockQ8_0>(outputs[run]));
        break;
      case stage04::Kernel::kMatmulQ: {
        const QuantMatrix W{.type = TypeOf(p.weight), .blocks = region.As<L, const void>(L::kWeights),
                            .rows = p.out, .cols = p.in};
        matmul_q(p.tokens, region.As<L, const BlockQ8_0>(L::kInput), W, region.As<L, float>(outputs[run]), mode,
                 p.threads);
        break;
      }
      default:
        Fail("the runner asked for a kernel this harness does not know: rebuild the workbook");
    }
    region.EndCall();
  }
  // The optional step: the same product once more, W packed (outside the calls above).
  int32_t* packing = region.As<L, int32_t>(L::kPacking);
  *packing = 0;
  if (p.kernel != stage04::Kernel::kMatmulQ || !PackedWeights::Defined()) return;
  PackedWeights packed;
  const QuantMatrix W = packed.Pack({.type = TypeOf(p.weight), .blocks = region.As<L, const void>(L::kWeights),
                                     .rows = p.out, .cols = p.in});
  *packing = 1;
  region.BeginCall(2);
  matmul_q(p.tokens, region.As<L, const BlockQ8_0>(L::kInput), W, region.As<L, float>(L::kPackedRun), mode,
           p.threads);
  region.EndCall();
}

void CallLeaderboard(Region& region) {
  using L = stage04::LeaderboardCall;
  region.Bind<L>();
  const L::Params p = region.Params<L>();
  const size_t inputBytes = static_cast<size_t>(p.in / 32) * sizeof(BlockQ8_0);
  const size_t blockBytes = p.weight == stage04::Weight::kQ4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  const size_t matrixBytes = static_cast<size_t>(p.out) * static_cast<size_t>(p.in / 32) * blockBytes;
  const auto* inputs = region.As<L, const unsigned char>(L::kInputs);
  const auto* weights = region.As<L, const unsigned char>(L::kWeights);
  float* results = region.As<L, float>(L::kResults);
  // Each copy packed once, before the timed call (the optional step of stage04_quant.h).
  PackedWeights packed;
  std::vector<QuantMatrix> copies;
  for (int c = 0; c < p.copies; ++c) {
    copies.push_back(packed.Pack({.type = TypeOf(p.weight), .blocks = weights + matrixBytes * static_cast<size_t>(c),
                                  .rows = p.out, .cols = p.in}));
  }
  region.BeginCall(0);
  for (int c = 0; c < p.calls; ++c) {
    matmul_q(1, reinterpret_cast<const BlockQ8_0*>(inputs + inputBytes * static_cast<size_t>(c)),
             copies[static_cast<size_t>(c % p.copies)], results + static_cast<size_t>(p.out) * c,
             Accumulate::kOverwrite, 1);
  }
  region.EndCall();
}

void CallBlock(Region& region) {
  using L = stage04::QuantBlockCall;
  region.Bind<L>();
  const L::Params p = region.Params<L>();
  // Each matrix packed once, before the call, when the student's file takes the optional step.
  PackedWeights packed;
  auto matrix = [&](size_t i, int rows, int cols) {
    return packed.Pack({.type = TypeOf(p.types[i]), .blocks = region.As<L, const void>(L::kMatrices[i]),
                        .rows = rows, .cols = cols});
  };
  const QuantWeights w{.rms1 = region.Floats<L>(L::kRms1),
                       .wqkv = matrix(0, QKV, D),
                       .wo = matrix(1, D, D),
                       .rms2 = region.Floats<L>(L::kRms2),
                       .wgate = matrix(2, F, D),
                       .wup = matrix(3, F, D),
                       .wdown = matrix(4, D, F)};
  auto in = [&region](L::Buffer b) -> const float* { return region.Floats<L>(b); };
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  auto blocks = [&region](L::Buffer b) { return region.As<L, BlockQ8_0>(b); };
  region.BeginCall(0);
  quant_block(p.tokens, p.threads, w, in(L::kX), in(L::kRopeCos), in(L::kRopeSin), out(L::kNorm1),
              blocks(L::kNorm1q), out(L::kQkv), out(L::kAttnOut), blocks(L::kAttnOutq), out(L::kResidual1),
              out(L::kNorm2), blocks(L::kNorm2q), out(L::kHidden), blocks(L::kHiddenq), out(L::kOutput));
  region.EndCall();
}

}  // namespace

void CallStage(Region& region) {
  if (region.Holds<stage04::KernelCall>()) return CallKernel(region);
  if (region.Holds<stage04::LeaderboardCall>()) return CallLeaderboard(region);
  CallBlock(region);
}

}  // namespace wb::harness
