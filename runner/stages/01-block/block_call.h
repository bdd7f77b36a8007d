// Stage 1's call layout (runner/isolation/call_layout.h): what one decoder_block call
// reads and writes, shared by the driver and the child's harness.
#pragma once

#include <array>
#include <cstdint>

#include "runner/isolation/call_layout.h"

namespace wb::stage01 {

struct BlockCall {
  static constexpr uint32_t kId = LayoutId("01-block decoder_block v1");
  enum Buffer : uint32_t {
    // Inputs, read-only: the packed weights, T rows of x, T rows of the RoPE tables.
    kW, kX, kRopeCos, kRopeSin,
    // The nine checkpoints, in the order of reference/block/block.h's Checkpoint.
    kNorm1, kQ, kK, kV, kAttnOut, kResidual1, kNorm2, kFfnOut, kOutput,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "w", "x", "ropeCos", "ropeSin", "norm1", "q", "k", "v", "attnOut", "residual1", "norm2", "ffnOut", "output"};
  static constexpr uint32_t kFirstOutput = kNorm1;
  struct Params {
    int32_t tokens;  // T
  };
};

}  // namespace wb::stage01
