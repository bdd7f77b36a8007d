// Stage 4's benchmark layout (runner/isolation/call_layout.h) and the shapes it times, shared
// by the bench driver (bench_driver.cc), the bench child's harness (bench_call.cc) and the
// yardstick (yardstick_main.cc).
//
// Contract: the runner lays out, read-only, `q8Copies` copies of a kDecodeRows x kDecodeCols
// Q8_0 matrix back to back and `q4Copies` of the same matrix in Q4_0, and the three weight sets
// of the block; and, for the harness to fill, room for kPrefillT rows of Q8_0 activations
// kDecodeCols wide and of x. A child runs one measurement, `measurement` (QuantMeasurement's order), on
// `threads` threads: an untimed call on inputs of seed 0, then `calls` calls, call c on
// inputs made from the timed calls' seed (runner/stages/timed_inputs.h: the activations by
// TimedActivationBytes, the block's x as TimedInputs' values) and writing its output (matmul_q's
// y, quant_block's output) into slot c % slots of its buffer (the untimed call's is the last,
// slot `slots`); with
// `callsSkipped`, the inputs alone. The runner times the child from outside
// (runner/stages/bench_engine.h) and checks calls it draws after the child has ended. A
// measurement at T = 1 runs on the next copy each time, so what one call reads the next does
// not find in the cache.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "quant_call.h"
#include "runner/isolation/call_layout.h"
#include "runner/stages/timed_inputs.h"

namespace wb::stage04 {

// Decode (T = 1) reads the largest matrix of a real model, so that the weights, not the
// activations or the call's overhead, are what is timed: Llama-3-8B's FFN gate and up
// projections, 14336 x 4096 (Meta's config.json: intermediate_size 14336, hidden_size 4096).
inline constexpr int kDecodeRows = 14336;
inline constexpr int kDecodeCols = 4096;
// Prefill (T = 128) is compute-bound: the same model's attention output projection wo,
// 4096 x 4096, keeps a slow kernel's minimum of runs within seconds. It is the first
// kPrefillRows rows of a decode copy (rows are contiguous, so that is a matrix of its own).
inline constexpr int kPrefillRows = 4096;
inline constexpr int kPrefillCols = kDecodeCols;
inline constexpr int kPrefillT = 128;
// The block's two token counts, in this order: a decode step and a prefill.
inline constexpr std::array<int, 2> kBlockTokens = {1, kPrefillT};
// The weight sets the block runs on, in this order (data/stages.json's "weight_sets").
inline constexpr std::array<const char*, 3> kBlockSets = {"q8_0", "q4_0", "mixed"};
inline constexpr int kBlockSetCount = static_cast<int>(kBlockSets.size());

// What one bench child measures, in the order of kTimings' records: matmul_q at T = 1 and
// at T = 128 in each type, then quant_block for each set at each of kBlockTokens.
enum QuantMeasurement : int32_t { kDecodeQ8_0, kDecodeQ4_0, kPrefillQ8_0, kPrefillQ4_0, kFirstBlockMeasurement };
inline constexpr int kQuantMeasurementCount =
    kFirstBlockMeasurement + kBlockSetCount * static_cast<int>(kBlockTokens.size());
constexpr int BlockMeasurement(int set, int tokensIndex) {
  return kFirstBlockMeasurement + set * static_cast<int>(kBlockTokens.size()) + tokensIndex;
}

struct QuantBenchCall {
  static constexpr uint32_t kId = LayoutId("04-quant bench v3");
  enum Buffer : uint32_t {
    // Inputs: the decode matrices in each type, the activations (kPrefillT rows of
    // kDecodeCols / 32 Q8_0 blocks; T = 1 reads the first), each set's five matrices back to
    // back (QuantBlockCall::kMatrices' order), each set's rms1 then rms2 (D floats each),
    // kPrefillT rows of x and of the RoPE tables. The harness writes the activations and x.
    kQ8Copies, kQ4Copies, kActivations, kSetMatrices0, kSetMatrices1, kSetMatrices2, kNormWeights, kX, kRopeCos,
    kRopeSin,
    // What the kernels write: matmul_q's y (`slots` + 1 outputs of up to kPrefillT x
    // kDecodeRows floats), then quant_block's eleven, each sized for kPrefillT rows, its
    // output `slots` + 1 times.
    kY, kNorm1, kNorm1q, kQkv, kAttnOut, kAttnOutq, kResidual1, kNorm2, kNorm2q, kHidden, kHiddenq, kOutput,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "q8Copies", "q4Copies",  "activations", "setMatrices0", "setMatrices1", "setMatrices2", "normWeights",
      "x",        "ropeCos",   "ropeSin",     "y",            "norm1",        "norm1q",       "qkv",
      "attnOut",  "attnOutq",  "residual1",   "norm2",        "norm2q",       "hidden",       "hiddenq",
      "output"};
  static constexpr std::array<Buffer, kBlockSetCount> kSetMatrices = {kSetMatrices0, kSetMatrices1, kSetMatrices2};
  struct Params {
    int32_t threads;
    int32_t q8Copies;
    int32_t q4Copies;
    int32_t measurement;   // QuantMeasurement
    int32_t calls;         // timed calls after the untimed one
    int32_t callsSkipped;  // 1: make the inputs `calls` times, call nothing (the start-up child)
    int32_t slots;         // output slots the timed calls take turns in (OutputSlots)
    Weight types[kBlockSetCount][5];  // each set's matrices, QuantBlockCall::kMatrices' order
  };
  // Which input of a call TimedInputs makes: the activations, or the block's x.
  static constexpr uint32_t kTimedActivations = 4;
  static constexpr uint32_t kTimedX = 5;
};

// Q8_0 activation blocks firstBlock .. firstBlock + count - 1 of a call (row t's block j is
// t * kDecodeCols / 32 + j), as ggml lays them out (34 bytes: a half scale, then 32 codes),
// from that call's TimedInputs: a normal half scale from 2^-8 to 2^-6 and codes in -127 .. 127,
// as the contract's quantizer makes them. Both the harness and the runner's check make them.
inline void TimedActivationBytes(const TimedInputs& inputs, size_t firstBlock, size_t count, unsigned char* out) {
  for (size_t b = firstBlock; b < firstBlock + count; ++b) {
    const uint16_t scale = static_cast<uint16_t>(0x1C00u + (inputs.Word(5 * b) & 0x7FFu));
    std::memcpy(out, &scale, sizeof scale);
    out += sizeof scale;
    for (size_t word = 0; word < 4; ++word) {
      const uint64_t bits = inputs.Word(5 * b + 1 + word);
      for (int k = 0; k < 8; ++k) {
        const auto byte = static_cast<int>((bits >> (8 * k)) & 0xFFu);
        *out++ = static_cast<unsigned char>(static_cast<int8_t>(byte == 0 ? -127 : byte - 128));
      }
    }
  }
}

}  // namespace wb::stage04
