// Stage 3's bench child: times the student's matmul at the block's four projection shapes
// and their fused_block, at one T and thread count (bench_call.h), each with Measure
// (bench_timing.h). The kernels were validated on the visible suite before this runs.
#include "bench_call.h"
#include "runner/harness/harness.h"
#include "stage03_fused.h"

static_assert(QKV == wb::stage03::kBenchShapes[0].out && F == wb::stage03::kBenchShapes[2].out,
              "bench_timing.h's shapes are the block's");

namespace wb::harness {

void CallStage(Region& region) {
  using L = stage03::BenchCall;
  region.Bind<L>();
  const L::Params p = region.Params<L>();
  const float* w = region.Floats<L>(L::kW);
  const float* input = region.Floats<L>(L::kMatmulInput);
  float* output = region.Floats<L>(L::kMatmulOutput);
  float* timings = region.Floats<L>(L::kTimings);
  const int offsets[stage03::kBenchShapeCount] = {OFF_WQ, OFF_WO, OFF_WGATE, OFF_WDOWN};
  auto record = [timings](int slot, const stage03::Timing& t) {
    float* at = timings + slot * stage03::kTimingFloats;
    at[0] = static_cast<float>(t.median);
    at[1] = static_cast<float>(t.fastest);
    at[2] = static_cast<float>(t.slowest);
    at[3] = static_cast<float>(t.runs);
  };
  region.BeginCall(0);
  for (int s = 0; s < stage03::kBenchShapeCount; ++s) {
    const stage03::BenchShape shape = stage03::kBenchShapes[s];
    record(s, stage03::Measure(
                  [&] {
                    matmul(p.tokens, shape.out, shape.in, input, w + offsets[s], output, Accumulate::kOverwrite,
                           p.threads);
                  },
                  p.budgetSeconds, {.data = output, .count = static_cast<size_t>(p.tokens) * shape.out}));
  }
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  record(stage03::kBenchShapeCount,
         stage03::Measure(
             [&] {
               fused_block(p.tokens, p.threads, w, region.Floats<L>(L::kX), region.Floats<L>(L::kRopeCos),
                           region.Floats<L>(L::kRopeSin), out(L::kNorm1), out(L::kQkv), out(L::kAttnOut),
                           out(L::kResidual1), out(L::kNorm2), out(L::kHidden), out(L::kOutput));
             },
             p.budgetSeconds, {.data = out(L::kOutput), .count = static_cast<size_t>(p.tokens) * D}));
  region.EndCall();
}

}  // namespace wb::harness
