// Stage 1's call: one decoder_block over T tokens (block_call.h).
#include "block_call.h"
#include "runner/harness/harness.h"
#include "stage01_block.h"

namespace wb::harness {

void CallStage(Region& region) {
  using L = stage01::BlockCall;
  region.Bind<L>();
  const L::Params params = region.Params<L>();
  auto in = [&region](L::Buffer b) -> const float* { return region.Floats<L>(b); };
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  region.BeginCall(0);
  decoder_block(params.tokens, in(L::kW), in(L::kX), in(L::kRopeCos), in(L::kRopeSin), out(L::kNorm1), out(L::kQ),
                out(L::kK), out(L::kV), out(L::kAttnOut), out(L::kResidual1), out(L::kNorm2), out(L::kFfnOut),
                out(L::kOutput));
  region.EndCall();
}

}  // namespace wb::harness
