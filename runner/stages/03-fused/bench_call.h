// Stage 3's benchmark layout (runner/isolation/call_layout.h): what the bench child reads,
// the buffers it lets the student's kernels write, and where it writes its timings. Shared
// by the bench driver (bench_driver.cc) and the bench harness (bench_call.cc).
#pragma once

#include <array>
#include <cstdint>

#include "bench_timing.h"
#include "runner/isolation/call_layout.h"

namespace wb::stage03 {

struct BenchCall {
  static constexpr uint32_t kId = LayoutId("03-fused bench v1");
  enum Buffer : uint32_t {
    // Inputs, read-only: the weights, T rows of x and of the RoPE tables, and T rows of a
    // matmul input as wide as the widest `in` (1408).
    kW, kX, kRopeCos, kRopeSin, kMatmulInput,
    // What the kernels write: a matmul output as wide as the widest `out`, the block's seven.
    kMatmulOutput, kNorm1, kQkv, kAttnOut, kResidual1, kNorm2, kHidden, kOutput,
    // kBenchMeasurements x kTimingFloats: the four shapes, then the block.
    kTimings,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "w", "x", "ropeCos", "ropeSin", "matmulInput", "matmulOutput", "norm1", "qkv", "attnOut",
      "residual1", "norm2", "hidden", "output", "timings"};
  struct Params {
    int32_t tokens;  // T
    int32_t threads;
    float budgetSeconds;  // per measurement
  };
};

}  // namespace wb::stage03
