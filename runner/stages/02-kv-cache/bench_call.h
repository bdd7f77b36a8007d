// Stage 2's benchmark layout (runner/isolation/call_layout.h): what the bench child reads and
// the buffers it lets decoder_step write. Shared by the bench driver (bench_driver.cc) and the
// bench harness (bench_call.cc). A child runs one measurement at context length `context`
// (kDecodeStep or kRecompute): an untimed decode step, then `calls` calls of the measurement,
// each after the harness has cleared what it writes of `output` to NaN; with `callsSkipped`,
// the clearing alone. The runner times the child from outside (runner/stages/bench_engine.h)
// and reads the output the last call left.
#pragma once

#include <array>
#include <cstdint>

#include "decode_call.h"

namespace wb::stage02 {

struct BenchCall {
  static constexpr uint32_t kId = LayoutId("02-kv-cache bench v2");
  enum Buffer : uint32_t {
    // Inputs, read-only: the weights, `context` rows of x, all MAX_T rows of the RoPE tables.
    kW, kX, kRopeCos, kRopeSin,
    // A filled cache: its values change nothing about the time of a step, only its length.
    kKCache, kVCache,
    // The nine outputs, `context` rows each (a recompute writes them all).
    kNorm1, kQ, kK, kV, kAttnOut, kResidual1, kNorm2, kFfnOut, kOutput,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "w", "x", "ropeCos", "ropeSin", "kCache", "vCache", "norm1", "q", "k", "v",
      "attnOut", "residual1", "norm2", "ffnOut", "output"};
  enum Measurement : int32_t { kDecodeStep, kRecompute };
  struct Params {
    int32_t context;       // L: the decode step is at position L - 1; the recompute has L tokens
    int32_t measurement;   // Measurement
    int32_t calls;         // timed calls after the untimed decode step
    int32_t callsSkipped;  // 1: clear the output `calls` times, call nothing (the start-up child)
  };
  // The output rows a measurement's calls write: the decode step's one, the recompute's L.
  static constexpr int OutputRows(const Params& p) { return p.measurement == kDecodeStep ? 1 : p.context; }
};

}  // namespace wb::stage02
