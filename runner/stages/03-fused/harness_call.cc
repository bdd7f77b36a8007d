// Stage 3's call: one kernel, twice, or one fused_block (fused_call.h). Which one the runner
// laid out decides.
#include "fused_call.h"
#include "runner/harness/harness.h"
#include "stage03_fused.h"

namespace wb::harness {
namespace {

void CallKernel(Region& region) {
  using L = stage03::KernelCall;
  region.Bind<L>();
  const L::Params p = region.Params<L>();
  const float* input = region.Floats<L>(L::kInput);
  const float* first = region.Floats<L>(L::kFirst);
  const float* second = region.Floats<L>(L::kSecond);
  const Accumulate mode = p.accumulate != 0 ? Accumulate::kAdd : Accumulate::kOverwrite;
  const L::Buffer outputs[] = {L::kResult, L::kSecondRun};
  for (unsigned run = 0; run < 2; ++run) {
    float* result = region.Floats<L>(outputs[run]);
    region.BeginCall(run);
    switch (p.kernel) {
      case stage03::Kernel::kMatmul:
        matmul(p.tokens, p.out, p.in, input, first, result, mode, p.threads);
        break;
      case stage03::Kernel::kMatmulSwiglu:
        matmul_swiglu(p.tokens, p.out, p.in, input, first, second, result, p.threads);
        break;
      case stage03::Kernel::kCausalAttention:
        causal_attention(p.tokens, input, result, p.threads);
        break;
      default:
        Fail("the runner asked for a kernel this harness does not know: rebuild the workbook");
    }
    region.EndCall();
  }
}

void CallBlock(Region& region) {
  using L = stage03::FusedBlockCall;
  region.Bind<L>();
  const L::Params p = region.Params<L>();
  auto in = [&region](L::Buffer b) -> const float* { return region.Floats<L>(b); };
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  region.BeginCall(0);
  fused_block(p.tokens, p.threads, in(L::kW), in(L::kX), in(L::kRopeCos), in(L::kRopeSin), out(L::kNorm1),
              out(L::kQkv), out(L::kAttnOut), out(L::kResidual1), out(L::kNorm2), out(L::kHidden), out(L::kOutput));
  region.EndCall();
}

}  // namespace

void CallStage(Region& region) {
  if (region.Holds<stage03::KernelCall>()) return CallKernel(region);
  CallBlock(region);
}

}  // namespace wb::harness
