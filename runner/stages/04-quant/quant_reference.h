// The float64 reference of stage 4's block: stage 1's steps (reference/block) on the exact
// values of a quantized weight set, with every activation a matmul reads quantized to Q8_0
// first, as the contract's quant_block does, and the four quantized buffers kept.
//
// Contract: RunQuantizedBlock returns the fourteen buffers in the checkpoint order of
// data/stages.json's stage-4 row (each *q as the exact values its blocks stand for), and the
// reference's block state with norm1 and attnOut replaced by their quantized values, which is
// what the diagnosis evaluates mistaken recipes on. A buffer whose floats are not finite
// leaves its quantized twin, and everything after it, empty.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "reference/block/block.h"
#include "runner/compare/compare.h"

namespace wb::stage04 {

enum class Step { kNorm1, kNorm1q, kQ, kK, kV, kAttnOut, kAttnOutq, kResidual1, kNorm2, kNorm2q, kHidden, kHiddenq,
                  kFfnOut, kOutput };
inline constexpr int kStepCount = 14;
inline constexpr std::array<const char*, kStepCount> kStepNames = {
    "norm1", "norm1q", "q", "k", "v", "attnOut", "attnOutq", "residual1", "norm2", "norm2q", "hidden", "hiddenq",
    "ffnOut", "output"};
inline size_t At(Step s) { return static_cast<size_t>(s); }

struct QuantizedBlockReference {
  std::array<std::vector<double>, kStepCount> buffers;
  ref::BlockState chain;
};

// A float64 buffer as the quantized activation the next matmul reads: rounded to float (the
// student computes in float), then ggml's Q8_0 and back, exactly. Empty when not finite.
std::vector<double> QuantizedView(std::span<const double> values);

QuantizedBlockReference RunQuantizedBlock(const ref::BlockShape& shape, const ref::BlockWeights& w,
                                          const ref::BlockInputs& inputs);

// The tolerances of the chain view, which compares each buffer with the reference's own chain:
// they allow for roundings flipped upstream. A float one ulp away from a halfway point may
// quantize to the next code, which moves every output of the next matmul by that code's step
// times a weight. Measured with the solution on the visible suite (docs/stages/04-quant.md,
// "Tolerances"): q, k and v up to 1.4e-3 of their RMS (one flip), attnOut, residual1 and norm2
// up to 2.2e-3; hidden up to 4.7e-2 of its RMS at an element of 6x the RMS, where a flip in
// norm2q moves both SiLU(gate) and up, and ffnOut and output inherit it. Each figure has 7x
// headroom or more; the mistakes this view exists for (a wrong operator when the local view
// cannot run) move elements by the buffer's RMS.
Tolerance ChainTolerance(ref::Checkpoint c);

}  // namespace wb::stage04
