// Stage 1's call: one decoder_block over params[0] tokens.
#include "../../contracts/stage01_block.h"
#include "harness.h"

namespace wb::harness {

void CallStage(Region& region) {
  const int T = static_cast<int>(region.Param(0));
  const float* w = region.ConstFloats("w");
  const float* x = region.ConstFloats("x");
  const float* ropeCos = region.ConstFloats("ropeCos");
  const float* ropeSin = region.ConstFloats("ropeSin");
  float* norm1 = region.Floats("norm1");
  float* q = region.Floats("q");
  float* k = region.Floats("k");
  float* v = region.Floats("v");
  float* attnOut = region.Floats("attnOut");
  float* residual1 = region.Floats("residual1");
  float* norm2 = region.Floats("norm2");
  float* ffnOut = region.Floats("ffnOut");
  float* output = region.Floats("output");
  region.BeginCall(0);
  decoder_block(T, w, x, ropeCos, ropeSin, norm1, q, k, v, attnOut, residual1, norm2, ffnOut, output);
  region.EndCall();
}

}  // namespace wb::harness
