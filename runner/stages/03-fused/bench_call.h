// Stage 3's benchmark layout (runner/isolation/call_layout.h): what the bench child reads and
// the buffers it lets the student's kernels write. Shared by the bench driver (bench_driver.cc)
// and the bench harness (bench_call.cc). A child runs one measurement, `measurement` (one of
// the four matmul shapes of kBenchShapes, or kBenchShapeCount: fused_block): an untimed call,
// then `calls` calls, each after the harness has cleared the call's output to NaN; with
// `callsSkipped`, the clearing alone. The runner times the child from outside
// (runner/stages/bench_engine.h) and reads the output the last call left.
#pragma once

#include <array>
#include <cstdint>

#include "bench_timing.h"
#include "runner/isolation/call_layout.h"

namespace wb::stage03 {

struct BenchCall {
  static constexpr uint32_t kId = LayoutId("03-fused bench v2");
  enum Buffer : uint32_t {
    // Inputs, read-only: the weights, T rows of x and of the RoPE tables, and T rows of a
    // matmul input as wide as the widest `in` (1408).
    kW, kX, kRopeCos, kRopeSin, kMatmulInput,
    // What the kernels write: a matmul output as wide as the widest `out`, the block's seven.
    kMatmulOutput, kNorm1, kQkv, kAttnOut, kResidual1, kNorm2, kHidden, kOutput,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "w", "x", "ropeCos", "ropeSin", "matmulInput", "matmulOutput", "norm1", "qkv", "attnOut",
      "residual1", "norm2", "hidden", "output"};
  struct Params {
    int32_t tokens;  // T
    int32_t threads;
    int32_t measurement;   // 0-3: matmul at kBenchShapes[measurement]; kBenchShapeCount: fused_block
    int32_t calls;         // timed calls after the untimed one
    int32_t callsSkipped;  // 1: clear the output `calls` times, call nothing (the start-up child)
  };
};

}  // namespace wb::stage03
