// Stage 4's bit-exact checks: a buffer of Q8_0 blocks against llama.cpp's reference quantizer
// (ggml's quantize_row_q8_0_ref) applied to the floats it was made from, and the quantization
// mistakes the runner can name.
//
// Contract: CheckQuantizedBlocks compares every byte; the report counts values (32 a block),
// a value being wrong when its code or its block's scale differs, and a block whose bytes
// are still the poison the runner filled it with as never written. The first wrong block is
// described by token (row), block and value index, with both codes and both scales. A wrong
// buffer is named as one mistake when every wrong block is what that mistake makes of its
// floats and nothing else is (quantize mistakes in any case; "quantized-first-row-only" when
// the rows after the first were never written). The floats must be finite; ReferenceQ8_0
// says when they are not.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runner/report/report.h"

namespace wb::stage04 {

inline constexpr int kQK = 32;
inline constexpr size_t kQ8Bytes = 34;

// The Q8_0 blocks of `values` (a multiple of 32 floats), or nullopt when one is not finite.
std::optional<std::vector<unsigned char>> ReferenceQ8_0(std::span<const float> values);

// Whether block `b` of a buffer still holds the poison the runner filled it with.
bool BlockUnwritten(std::span<const unsigned char> buffer, size_t b);

// Blocks dequantized to floats (code * half(d), exact), for the steps downstream; a block
// never written, or with a scale that is not finite, reads as never-written floats, so the
// engine sees it as unusable upstream.
std::vector<float> DequantizeQ8_0(std::span<const unsigned char> blocks);

// Blocks' codes times each block's FLOAT scale, max |source| / 127 before it is rounded to
// half: what a matmul reads that multiplies by the unrounded scale (a named mistake).
std::vector<double> FloatScaleView(std::span<const float> source, std::span<const unsigned char> blocks);

struct BlockCheck {
  std::string name;   // as reported: "norm1q", "quantize_q8_0"
  std::string shape;  // "4 x 16 blocks"
  std::span<const unsigned char> got;
  std::span<const float> source;  // the floats the blocks must quantize
  int rows = 0;
  int blocksPerRow = 0;
  std::string rowName = "token";
  std::string lesson;  // the stage's lesson path, for the named mistakes
  // When the source is the reference chain's, because the student's upstream buffer is not
  // usable: named in the observation.
  std::string sourceNote;
  double points = 1;
};

CheckpointReport CheckQuantizedBlocks(const BlockCheck& check);

// The ids of the quantization mistakes the runner can name (for the course self-check).
std::span<const std::string_view> QuantizeMisconceptionIds();

}  // namespace wb::stage04
