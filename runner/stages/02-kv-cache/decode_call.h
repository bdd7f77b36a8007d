// Stage 2's call layout (runner/isolation/call_layout.h): what one decoder_step call reads
// and writes, shared by the driver and the child's harness.
#pragma once

#include <array>
#include <cstdint>

#include "runner/isolation/call_layout.h"

namespace wb::stage02 {

// The cache's rows and width: MAX_T and KV of contracts/stage02_decode.h (the harness
// asserts they agree). A case never holds more tokens than the cache.
constexpr int kCacheRows = 4096;
constexpr int kCacheWidth = 128;

struct DecodeCall {
  static constexpr uint32_t kId = LayoutId("02-kv-cache decoder_step v1");
  enum Buffer : uint32_t {
    // Inputs, read-only: the packed weights, the call's n rows of x, all MAX_T rows of the
    // RoPE tables.
    kW, kX, kRopeCos, kRopeSin,
    // The cache, writable, holding what earlier calls wrote.
    kKCache, kVCache,
    // The nine checkpoints of the block, n rows each, in the order of reference/block/block.h.
    kNorm1, kQ, kK, kV, kAttnOut, kResidual1, kNorm2, kFfnOut, kOutput,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "w",    "x", "ropeCos", "ropeSin", "kCache",    "vCache", "norm1",  "q",
      "k",    "v", "attnOut", "residual1", "norm2", "ffnOut", "output"};
  static constexpr uint32_t kFirstOutput = kNorm1;
  struct Params {
    int32_t tokens;     // n
    int32_t position;   // pos
    uint32_t callIndex;  // which call of the case (0-based), for the child's report
  };
};

}  // namespace wb::stage02
