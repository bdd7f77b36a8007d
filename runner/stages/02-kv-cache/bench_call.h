// Stage 2's benchmark layout (runner/isolation/call_layout.h): what the bench child reads and
// the buffers it lets decoder_step write. Shared by the bench driver (bench_driver.cc) and the
// bench harness (bench_call.cc). A child runs one measurement at context length `context`
// (kDecodeStep or kRecompute): an untimed decode step on inputs of seed 0, then `calls` calls
// of the measurement, call c on rows of x made from the timed calls' seed
// (runner/stages/timed_inputs.h, stream kTimedX: the decode step's one row, the recompute's L)
// and writing its output rows into slot c % slots of `output` (the untimed call's is the last,
// slot `slots`); with
// `callsSkipped`, the inputs alone. The runner times the child from outside
// (runner/stages/bench_engine.h) and checks calls it draws after the child has ended.
#pragma once

#include <array>
#include <cstdint>

#include "decode_call.h"

namespace wb::stage02 {

struct BenchCall {
  static constexpr uint32_t kId = LayoutId("02-kv-cache bench v3");
  enum Buffer : uint32_t {
    // Inputs: the weights, all MAX_T rows of the RoPE tables (read-only), and `context` rows
    // of x, which the harness makes.
    kW, kX, kRopeCos, kRopeSin,
    // A filled cache: its values change nothing about the time of a step, only its length.
    kKCache, kVCache,
    // The nine outputs, `context` rows each (a recompute writes them all); the last, output,
    // `slots` + 1 times.
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
    int32_t callsSkipped;  // 1: make the inputs `calls` times, call nothing (the start-up child)
    int32_t slots;         // output slots the timed calls take turns in (OutputSlots)
  };
  // Which input of a call TimedInputs makes.
  static constexpr uint32_t kTimedX = 2;
  // The output rows a measurement's calls write: the decode step's one, the recompute's L.
  static constexpr int OutputRows(const Params& p) { return p.measurement == kDecodeStep ? 1 : p.context; }
};

}  // namespace wb::stage02
