// Stage 2's bench child: one measurement (bench_call.h) at one context length L, with the
// student's decoder_step (or the solution's):
//   decode step: decoder_step(n = 1, pos = L - 1) over a cache of L - 1 rows: one more token;
//   recompute:   decoder_step(n = L, pos = 0): the same token without a cache, by computing
//                the whole sequence again.
// An untimed decode step first (it pages in the weights and the cache), then the timed calls,
// each on rows of x of its own and into the next output slot. It times nothing itself:
// the runner times the child from outside and checks calls it draws
// (runner/stages/bench_engine.h).
#include "bench_call.h"
#include "runner/harness/harness.h"
#include "runner/stages/timed_inputs.h"
#include "stage02_decode.h"

namespace wb::harness {

void CallStage(Region& region) {
  using L = stage02::BenchCall;
  region.Bind<L>();
  const L::Params params = region.Params<L>();
  const int context = params.context;
  if (context < 1 || params.calls < 0 || params.slots < 1 ||
      (params.measurement != L::kDecodeStep && params.measurement != L::kRecompute)) {
    Fail("the runner asked for a measurement the bench does not have: rebuild the workbook");
  }
  const float* w = region.Floats<L>(L::kW);
  float* x = region.Floats<L>(L::kX);
  const float* ropeCos = region.Floats<L>(L::kRopeCos);
  const float* ropeSin = region.Floats<L>(L::kRopeSin);
  float* kCache = region.Floats<L>(L::kKCache);
  float* vCache = region.Floats<L>(L::kVCache);
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  auto step = [&](int n, int pos, const float* rows, float* output) {
    decoder_step(n, pos, w, rows, ropeCos, ropeSin, kCache, vCache, out(L::kNorm1), out(L::kQ), out(L::kK),
                 out(L::kV), out(L::kAttnOut), out(L::kResidual1), out(L::kNorm2), out(L::kFfnOut), output);
  };
  const bool decode = params.measurement == L::kDecodeStep;
  float* newRow = x + static_cast<size_t>(context - 1) * D;
  // What a call's inputs are: the decode step's new row, or the recompute's L rows.
  float* input = decode ? newRow : x;
  const size_t inputCount = (decode ? 1 : static_cast<size_t>(context)) * D;
  float* slots = out(L::kOutput);
  const size_t slotCount = static_cast<size_t>(L::OutputRows(params)) * D;
  region.BeginCall(0);
  // Untimed, on inputs of seed 0 (x's rows are all made, as a recompute reads them), into the
  // slot after the timed calls': pages in the weights and the cache.
  TimedInputs(0, L::kTimedX, 0).Fill(x, static_cast<size_t>(context) * D);
  step(1, context - 1, newRow, slots + static_cast<size_t>(params.slots) * slotCount);
  const uint64_t seed = region.StartTimedCalls();
  for (int c = 0; c < params.calls; ++c) {
    TimedInputs(seed, L::kTimedX, static_cast<uint32_t>(c)).Fill(input, inputCount);
    if (params.callsSkipped != 0) continue;
    float* output = slots + static_cast<size_t>(c % params.slots) * slotCount;
    if (decode) {
      step(1, context - 1, newRow, output);
    } else {
      step(context, 0, x, output);
    }
  }
  region.EndCall();
}

}  // namespace wb::harness
