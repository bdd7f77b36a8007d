// Stage 2's benchmark layout (runner/isolation/call_layout.h): what the bench child reads,
// the buffers it lets decoder_step write, and where it writes its timings. Shared by the
// bench driver (bench_driver.cc) and the bench harness (bench_call.cc).
#pragma once

#include <array>
#include <cstdint>

#include "decode_call.h"

namespace wb::stage02 {

struct BenchCall {
  static constexpr uint32_t kId = LayoutId("02-kv-cache bench v1");
  enum Buffer : uint32_t {
    // Inputs, read-only: the weights, `context` rows of x, all MAX_T rows of the RoPE tables.
    kW, kX, kRopeCos, kRopeSin,
    // A filled cache: its values change nothing about the time of a step, only its length.
    kKCache, kVCache,
    // The nine outputs, `context` rows each (a recompute writes them all).
    kNorm1, kQ, kK, kV, kAttnOut, kResidual1, kNorm2, kFfnOut, kOutput,
    // What the child measured: Timing below, as floats.
    kTimings,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "w", "x", "ropeCos", "ropeSin", "kCache", "vCache", "norm1", "q", "k", "v",
      "attnOut", "residual1", "norm2", "ffnOut", "output", "timings"};
  struct Params {
    int32_t context;       // L: the decode step is at position L - 1; the recompute has L tokens
    float budgetSeconds;   // how long each measurement may repeat for
  };
  // kTimings holds, in this order: the decode step's median seconds and runs, then the
  // recompute's.
  static constexpr int kTimingFloats = 4;
};

}  // namespace wb::stage02
