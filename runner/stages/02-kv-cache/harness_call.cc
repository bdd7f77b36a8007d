// Stage 2's call: one decoder_step of n tokens at position pos (decode_call.h). The runner
// starts one child per call of a case and keeps the cache in the shared region between them.
#include "decode_call.h"
#include "runner/harness/harness.h"
#include "stage02_decode.h"

static_assert(MAX_T == wb::stage02::kCacheRows && KV == wb::stage02::kCacheWidth,
              "decode_call.h sizes the cache as MAX_T x KV");

namespace wb::harness {

void CallStage(Region& region) {
  using L = stage02::DecodeCall;
  region.Bind<L>();
  const L::Params params = region.Params<L>();
  auto in = [&region](L::Buffer b) -> const float* { return region.Floats<L>(b); };
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  region.BeginCall(params.callIndex);
  decoder_step(params.tokens, params.position, in(L::kW), in(L::kX), in(L::kRopeCos), in(L::kRopeSin),
               out(L::kKCache), out(L::kVCache), out(L::kNorm1), out(L::kQ), out(L::kK), out(L::kV),
               out(L::kAttnOut), out(L::kResidual1), out(L::kNorm2), out(L::kFfnOut), out(L::kOutput));
  region.EndCall();
}

}  // namespace wb::harness
