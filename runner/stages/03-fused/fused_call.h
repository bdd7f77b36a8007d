// Stage 3's two call layouts (runner/isolation/call_layout.h), shared by the driver and the
// child's harness: a kernel case runs one kernel twice on the same inputs (KernelCall), a
// block case runs fused_block once (FusedBlockCall).
#pragma once

#include <array>
#include <cstdint>

#include "runner/isolation/call_layout.h"

namespace wb::stage03 {

// The kernels of the contract, in the order of data/stages.json's "kernels".
enum class Kernel : int32_t { kMatmul, kMatmulSwiglu, kCausalAttention };

struct KernelCall {
  static constexpr uint32_t kId = LayoutId("03-fused kernel v1");
  enum Buffer : uint32_t {
    // Inputs, read-only. matmul: x, W (and an unused one-float kSecond); matmul_swiglu: x,
    // Wgate, Wup; causal_attention: qkv (and two unused one-float buffers).
    kInput, kFirst, kSecond,
    // The output of the first run and of the second: the same inputs, the same starting
    // contents (poison, or y's starting values for an accumulating matmul), so any
    // difference between them is the kernel disagreeing with itself.
    kResult, kSecondRun,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {"input", "first", "second", "result",
                                                                   "secondRun"};
  static constexpr uint32_t kFirstOutput = kResult;
  struct Params {
    Kernel kernel;
    int32_t tokens;  // T
    int32_t out;
    int32_t in;
    int32_t accumulate;  // 1: Accumulate::kAdd
    int32_t threads;
  };
};

struct FusedBlockCall {
  static constexpr uint32_t kId = LayoutId("03-fused fused_block v1");
  enum Buffer : uint32_t {
    kW, kX, kRopeCos, kRopeSin,
    kNorm1, kQkv, kAttnOut, kResidual1, kNorm2, kHidden, kOutput,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "w", "x", "ropeCos", "ropeSin", "norm1", "qkv", "attnOut", "residual1", "norm2", "hidden", "output"};
  static constexpr uint32_t kFirstOutput = kNorm1;
  struct Params {
    int32_t tokens;  // T
    int32_t threads;
  };
};

}  // namespace wb::stage03
