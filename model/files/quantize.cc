// The two reference quantizers (Q8_0, Q4_0), with the rounding rules of ggml's
// `quantize_row_q8_0_ref` and `quantize_row_q4_0_ref` (ggml's src/ggml-quants.c). The scale is
// computed in f32, stored as half; values are scaled by the f32 inverse of the unrounded scale.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "quant_blocks.h"
#include "tensor_types.h"

namespace wb {

namespace {

Status CheckQuantizeArguments(TensorType type, std::span<const float> src, std::span<std::byte> dst) {
  const Expected<uint64_t> bytes = RowBytes(type, src.size());
  if (!bytes.ok()) return bytes.error();
  if (*bytes != dst.size()) {
    return BadUsage(fmt::format("quantizing {} floats to {} needs {} bytes, but {} were given", src.size(),
                                TensorTypeName(type), *bytes, dst.size()));
  }
  for (size_t i = 0; i < src.size(); ++i) {
    if (!std::isfinite(src[i])) {
      return BadData(fmt::format("quantizing to {}: value {} is {}", TensorTypeName(type), i, src[i]));
    }
  }
  return Status::Ok();
}

// The integer a scaled value rounds to, kept in [lo, hi]. With ordinary inputs the scaled
// values are already in range and this is exactly ggml's cast. For a block whose scale is so
// small that its inverse overflows to infinity, the scaled values are +-inf or NaN (0 * inf);
// ggml's cast is then undefined, so we clamp infinities and send NaN (a zero input) to `zero`.
int ClampedLevel(float level, int lo, int hi, int zero) {
  if (std::isnan(level)) return zero;
  if (level <= static_cast<float>(lo)) return lo;
  if (level >= static_cast<float>(hi)) return hi;
  return static_cast<int>(level);  // truncation toward zero
}

template <typename Block>
void StoreBlock(std::span<std::byte> dst, size_t index, const Block& block) {
  std::memcpy(dst.data() + index * sizeof(Block), &block, sizeof(Block));
}

}  // namespace

Status QuantizeRowQ8_0(std::span<const float> src, std::span<std::byte> dst) {
  if (Status s = CheckQuantizeArguments(TensorType::kQ8_0, src, dst); !s.ok()) return s;
  for (size_t b = 0; b < src.size() / kQK8_0; ++b) {
    const float* x = src.data() + b * kQK8_0;
    float largest = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) largest = std::max(largest, std::fabs(x[j]));
    const float d = largest / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 block{};
    block.d = FloatToHalf(d);
    // |x * inverse| <= 127 up to rounding; round() rounds halves away from zero, like roundf.
    for (int j = 0; j < kQK8_0; ++j) {
      block.qs[j] = static_cast<int8_t>(ClampedLevel(std::round(x[j] * inverse), -127, 127, 0));
    }
    StoreBlock(dst, b, block);
  }
  return Status::Ok();
}

Status QuantizeRowQ4_0(std::span<const float> src, std::span<std::byte> dst) {
  if (Status s = CheckQuantizeArguments(TensorType::kQ4_0, src, dst); !s.ok()) return s;
  for (size_t b = 0; b < src.size() / kQK4_0; ++b) {
    const float* x = src.data() + b * kQK4_0;
    // The value of largest magnitude, sign kept; the first one wins a tie.
    float largestMagnitude = 0.0f;
    float extreme = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (std::fabs(x[j]) > largestMagnitude) {
        largestMagnitude = std::fabs(x[j]);
        extreme = x[j];
      }
    }
    // The extreme value maps to q = 0, i.e. (0 - 8) * d; the other end is clamped at 15.
    const float d = extreme / -8.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 block{};
    block.d = FloatToHalf(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      // x * inverse lies in [-8, 8] up to rounding, so x * inverse + 8.5 is positive and the
      // truncation is ggml's MIN(15, (int8_t)(x0 + 8.5f)).
      const int low = ClampedLevel(x[j] * inverse + 8.5f, 0, 15, 8);
      const int high = ClampedLevel(x[j + kQK4_0 / 2] * inverse + 8.5f, 0, 15, 8);
      block.qs[j] = static_cast<uint8_t>(low | (high << 4));
    }
    StoreBlock(dst, b, block);
  }
  return Status::Ok();
}

}  // namespace wb
