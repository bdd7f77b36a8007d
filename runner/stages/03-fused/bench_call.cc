// Stage 3's bench child: one measurement (bench_call.h), the student's matmul at one of the
// block's four projection shapes or their fused_block, at one T and thread count: an untimed
// call, then the timed calls, each on inputs of its own and into the next output slot. It
// times nothing itself: the runner times the child from outside and checks calls it draws
// (runner/stages/bench_engine.h). The kernels were validated on the visible suite before this runs.
#include "bench_call.h"
#include "runner/harness/harness.h"
#include "runner/stages/timed_inputs.h"
#include "stage03_fused.h"

static_assert(QKV == wb::stage03::kBenchShapes[0].out && F == wb::stage03::kBenchShapes[2].out,
              "bench_timing.h's shapes are the block's");

namespace wb::harness {

void CallStage(Region& region) {
  using L = stage03::BenchCall;
  region.Bind<L>();
  const L::Params p = region.Params<L>();
  if (p.measurement < 0 || p.measurement > stage03::kBenchShapeCount || p.calls < 0 || p.slots < 1) {
    Fail("the runner asked for a measurement the bench does not have: rebuild the workbook");
  }
  auto out = [&region](L::Buffer b) { return region.Floats<L>(b); };
  const bool block = p.measurement == stage03::kBenchShapeCount;
  const int offsets[stage03::kBenchShapeCount] = {OFF_WQ, OFF_WO, OFF_WGATE, OFF_WDOWN};
  const stage03::BenchShape shape = block ? stage03::BenchShape{"", D, D} : stage03::kBenchShapes[p.measurement];
  // What a call reads that changes from call to call, and where call c writes its output.
  float* input = block ? out(L::kX) : out(L::kMatmulInput);
  const size_t inputCount = static_cast<size_t>(p.tokens) * shape.in;
  float* slots = block ? out(L::kOutput) : out(L::kMatmulOutput);
  const size_t slotCount = static_cast<size_t>(p.tokens) * shape.out;
  const float* w = region.Floats<L>(L::kW);
  auto call = [&](float* y) {
    if (block) {
      fused_block(p.tokens, p.threads, w, input, region.Floats<L>(L::kRopeCos), region.Floats<L>(L::kRopeSin),
                  out(L::kNorm1), out(L::kQkv), out(L::kAttnOut), out(L::kResidual1), out(L::kNorm2), out(L::kHidden),
                  y);
    } else {
      matmul(p.tokens, shape.out, shape.in, input, w + offsets[p.measurement], y, Accumulate::kOverwrite, p.threads);
    }
  };
  region.BeginCall(0);
  region.RunBenchCalls(
      p.calls, p.slots, p.callsSkipped != 0,
      [&](uint64_t seed, uint32_t c) { TimedInputs(seed, L::kTimedInputStream, c).Fill(input, inputCount); },
      [&](int slot) { call(slots + static_cast<size_t>(slot) * slotCount); });
  region.EndCall();
}

}  // namespace wb::harness
