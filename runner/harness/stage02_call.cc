// Stage 2's call: one decoder_step of params[0] tokens at position params[1]. The runner
// starts one child per call of a case (params[2] is the call's index, for the report) and
// keeps the cache in the shared region between them.
#include "../../contracts/stage02_decode.h"
#include "harness.h"

static_assert(MAX_T == 4096 && KV == 128, "runner/stages/decode_case.h sizes the cache as MAX_T x KV");

namespace wb::harness {

void CallStage(Region& region) {
  const int n = static_cast<int>(region.Param(0));
  const int pos = static_cast<int>(region.Param(1));
  const auto callIndex = static_cast<unsigned>(region.Param(2));
  const float* w = region.ConstFloats("w");
  const float* x = region.ConstFloats("x");
  const float* ropeCos = region.ConstFloats("ropeCos");
  const float* ropeSin = region.ConstFloats("ropeSin");
  float* kCache = region.Floats("kCache");
  float* vCache = region.Floats("vCache");
  float* norm1 = region.Floats("norm1");
  float* q = region.Floats("q");
  float* k = region.Floats("k");
  float* v = region.Floats("v");
  float* attnOut = region.Floats("attnOut");
  float* residual1 = region.Floats("residual1");
  float* norm2 = region.Floats("norm2");
  float* ffnOut = region.Floats("ffnOut");
  float* output = region.Floats("output");
  region.BeginCall(callIndex);
  decoder_step(n, pos, w, x, ropeCos, ropeSin, kCache, vCache, norm1, q, k, v, attnOut, residual1, norm2, ffnOut,
               output);
  region.EndCall();
}

}  // namespace wb::harness
