// Stage 2's bench child: one measurement (bench_call.h) at one context length L, with the
// student's decoder_step (or the solution's):
//   decode step: decoder_step(n = 1, pos = L - 1) over a cache of L - 1 rows: one more token;
//   recompute:   decoder_step(n = L, pos = 0): the same token without a cache, by computing
//                the whole sequence again.
// An untimed decode step first (it pages in the weights and the cache), then the timed calls,
// each after the output rows it writes are cleared. It times nothing itself: the runner times
// the child from outside and checks what the last call wrote (runner/stages/bench_engine.h).
#include <algorithm>
#include <limits>

#include "bench_call.h"
#include "runner/harness/harness.h"
#include "stage02_decode.h"

namespace wb::harness {

void CallStage(Region& region) {
  using L = stage02::BenchCall;
  region.Bind<L>();
  const L::Params params = region.Params<L>();
  const int context = params.context;
  if (context < 1 || params.calls < 0 ||
      (params.measurement != L::kDecodeStep && params.measurement != L::kRecompute)) {
    Fail("the runner asked for a measurement the bench does not have: rebuild the workbook");
  }
  const float* w = region.Floats<L>(L::kW);
  const float* x = region.Floats<L>(L::kX);
  const float* ropeCos = region.Floats<L>(L::kRopeCos);
  const float* ropeSin = region.Floats<L>(L::kRopeSin);
  float* kCache = region.Floats<L>(L::kKCache);
  float* vCache = region.Floats<L>(L::kVCache);
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  auto step = [&](int n, int pos, const float* rows) {
    decoder_step(n, pos, w, rows, ropeCos, ropeSin, kCache, vCache, out(L::kNorm1), out(L::kQ), out(L::kK),
                 out(L::kV), out(L::kAttnOut), out(L::kResidual1), out(L::kNorm2), out(L::kFfnOut), out(L::kOutput));
  };
  const float* newRow = x + static_cast<size_t>(context - 1) * D;
  float* output = out(L::kOutput);
  const size_t outputCount = static_cast<size_t>(L::OutputRows(params)) * D;
  region.BeginCall(0);
  step(1, context - 1, newRow);  // untimed: pages in the weights and the cache
  region.StartTimedCalls();
  for (int c = 0; c < params.calls; ++c) {
    std::fill(output, output + outputCount, std::numeric_limits<float>::quiet_NaN());
    if (params.callsSkipped != 0) continue;
    if (params.measurement == L::kDecodeStep) {
      step(1, context - 1, newRow);
    } else {
      step(context, 0, x);
    }
  }
  region.EndCall();
}

}  // namespace wb::harness
