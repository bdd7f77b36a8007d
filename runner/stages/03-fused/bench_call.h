// Stage 3's benchmark layout (runner/isolation/call_layout.h): what the bench child reads and
// the buffers it lets the student's kernels write. Shared by the bench driver (bench_driver.cc)
// and the bench harness (bench_call.cc). A child runs one measurement, `measurement` (one of
// the four matmul shapes of kBenchShapes, or kBenchShapeCount: fused_block): an untimed call
// on inputs of seed 0, then `calls` calls, call c on inputs made from the timed calls' seed
// (runner/stages/timed_inputs.h, stream kTimedInputStream: the matmul's T x in input, or the
// block's T x D rows of x) and writing its output (the matmul's y, the block's output) into
// slot c % slots of its buffer (the untimed call's is the last, slot `slots`); with `callsSkipped`, the inputs alone. The runner times the child from
// outside (runner/stages/bench_engine.h) and checks calls it draws after the child has ended.
#pragma once

#include <array>
#include <cstdint>

#include "bench_timing.h"
#include "runner/isolation/call_layout.h"

namespace wb::stage03 {

struct BenchCall {
  static constexpr uint32_t kId = LayoutId("03-fused bench v3");
  enum Buffer : uint32_t {
    // Inputs, read-only: the weights and T rows of the RoPE tables.
    kW, kRopeCos, kRopeSin,
    // Inputs the harness makes for each call: T rows of x, and T rows of a matmul input as wide
    // as the widest `in` (1408).
    kX, kMatmulInput,
    // What the kernels write: `slots` + 1 matmul outputs of T rows as wide as the widest `out`
    // (the last for the untimed call), the six buffers the block reuses, and `slots` + 1
    // outputs of T x D.
    kMatmulOutput, kNorm1, kQkv, kAttnOut, kResidual1, kNorm2, kHidden, kOutput,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "w", "ropeCos", "ropeSin", "x", "matmulInput", "matmulOutput", "norm1", "qkv", "attnOut",
      "residual1", "norm2", "hidden", "output"};
  struct Params {
    int32_t tokens;  // T
    int32_t threads;
    int32_t measurement;   // 0-3: matmul at kBenchShapes[measurement]; kBenchShapeCount: fused_block
    int32_t calls;         // timed calls after the untimed one
    int32_t callsSkipped;  // 1: make the inputs `calls` times, call nothing (the start-up child)
    int32_t slots;         // output slots the timed calls take turns in (OutputSlots)
  };
  // Which input of a call TimedInputs makes (one per measurement's kind).
  static constexpr uint32_t kTimedInputStream = 3;
};

}  // namespace wb::stage03
