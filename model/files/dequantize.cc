// DequantizeRow: blocks to floats, the same operations in the same order as ggml's
// `dequantize_row_*` (ggml's src/ggml-quants.c), so results are bit-identical.
//
// A note on rounding: a half has at most 11 significant bits and every code or sub-block scale
// at most 8, so each product below (d*q, d*sc*q, dmin*m) is exact in f32; only the final add
// of Q4_1 and Q4_K rounds. The order of the products therefore cannot matter. The library is
// still built with -ffp-contract=off, so no compiler may fuse anything into that last step.
#include <cstring>

#include <fmt/format.h>

#include "little_endian.h"
#include "quant_blocks.h"
#include "tensor_types.h"

namespace wb {

namespace {

template <typename Block>
Block LoadBlock(std::span<const std::byte> src, size_t index) {
  return LoadLE<Block>(src.data() + index * sizeof(Block));
}

void DequantizeQ8_0(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK8_0; ++b) {
    const auto block = LoadBlock<BlockQ8_0>(src, b);
    const float d = HalfToFloat(block.d);
    float* y = dst.data() + b * kQK8_0;
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(block.qs[j]) * d;
  }
}

void DequantizeQ4_0(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK4_0; ++b) {
    const auto block = LoadBlock<BlockQ4_0>(src, b);
    const float d = HalfToFloat(block.d);
    float* y = dst.data() + b * kQK4_0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int low = (block.qs[j] & 0x0F) - 8;
      const int high = (block.qs[j] >> 4) - 8;
      y[j] = static_cast<float>(low) * d;
      y[j + kQK4_0 / 2] = static_cast<float>(high) * d;
    }
  }
}

void DequantizeQ4_1(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK4_1; ++b) {
    const auto block = LoadBlock<BlockQ4_1>(src, b);
    const float d = HalfToFloat(block.d);
    const float m = HalfToFloat(block.m);
    float* y = dst.data() + b * kQK4_1;
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      const int low = block.qs[j] & 0x0F;
      const int high = block.qs[j] >> 4;
      y[j] = static_cast<float>(low) * d + m;
      y[j + kQK4_1 / 2] = static_cast<float>(high) * d + m;
    }
  }
}

// Sub-block j's 6-bit scale and min from the 12 packed bytes (`get_scale_min_k4`):
// j < 4 uses the low 6 bits of bytes j and j+4; j >= 4 takes 4 bits from byte j+4 and the
// top 2 bits of byte j-4 (scale) or byte j (min).
struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};
ScaleMin Q4KScaleMin(int j, const uint8_t* s) {
  if (j < 4) return {static_cast<uint8_t>(s[j] & 63), static_cast<uint8_t>(s[j + 4] & 63)};
  return {static_cast<uint8_t>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4))};
}

void DequantizeQ4_K(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK_K; ++b) {
    const auto block = LoadBlock<BlockQ4_K>(src, b);
    const float d = HalfToFloat(block.d);
    const float dmin = HalfToFloat(block.dmin);
    float* y = dst.data() + b * kQK_K;
    // Four chunks of 64 values; chunk c reads 32 bytes: low nibbles are sub-block 2c, high
    // nibbles sub-block 2c+1. The products d*sc and dmin*m are rounded to f32 first.
    for (int chunk = 0; chunk < 4; ++chunk) {
      const uint8_t* q = block.qs + 32 * chunk;
      const ScaleMin lo = Q4KScaleMin(2 * chunk, block.scales);
      const ScaleMin hi = Q4KScaleMin(2 * chunk + 1, block.scales);
      const float scaleLo = d * static_cast<float>(lo.scale);
      const float minLo = dmin * static_cast<float>(lo.min);
      const float scaleHi = d * static_cast<float>(hi.scale);
      const float minHi = dmin * static_cast<float>(hi.min);
      for (int l = 0; l < 32; ++l) y[64 * chunk + l] = scaleLo * static_cast<float>(q[l] & 0x0F) - minLo;
      for (int l = 0; l < 32; ++l) y[64 * chunk + 32 + l] = scaleHi * static_cast<float>(q[l] >> 4) - minHi;
    }
  }
}

void DequantizeQ6_K(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK_K; ++b) {
    const auto block = LoadBlock<BlockQ6_K>(src, b);
    const float d = HalfToFloat(block.d);
    float* y = dst.data() + b * kQK_K;
    // Two halves of 128 values; half h uses ql[64h..], qh[32h..], scales[8h..]. Value l of
    // each 32-wide quarter takes 4 low bits from ql and 2 high bits from qh, minus 32.
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = block.ql + 64 * half;
      const uint8_t* qh = block.qh + 32 * half;
      const int8_t* sc = block.scales + 8 * half;
      float* out = y + 128 * half;
      for (int l = 0; l < 32; ++l) {
        const int k = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        // ggml evaluates d * sc * q left to right: (d * sc) rounded, then times q.
        out[l] = d * static_cast<float>(sc[k]) * static_cast<float>(q1);
        out[l + 32] = d * static_cast<float>(sc[k + 2]) * static_cast<float>(q2);
        out[l + 64] = d * static_cast<float>(sc[k + 4]) * static_cast<float>(q3);
        out[l + 96] = d * static_cast<float>(sc[k + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void WidenF16(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t i = 0; i < dst.size(); ++i) dst[i] = HalfToFloat(LoadLE<uint16_t>(src.data() + 2 * i));
}

void WidenBF16(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t i = 0; i < dst.size(); ++i) dst[i] = Bf16ToFloat(LoadLE<uint16_t>(src.data() + 2 * i));
}

}  // namespace

Status DequantizeRow(TensorType type, std::span<const std::byte> src, std::span<float> dst) {
  const Expected<uint64_t> expectedBytes = RowBytes(type, dst.size());
  if (!expectedBytes.ok()) return expectedBytes.error();
  if (*expectedBytes != src.size()) {
    return BadData(fmt::format("{} floats of type {} need {} bytes, but {} were given", dst.size(),
                               TensorTypeName(type), *expectedBytes, src.size()));
  }
  switch (type) {
    case TensorType::kF32:
      if (!dst.empty()) std::memcpy(dst.data(), src.data(), src.size());
      return Status::Ok();
    case TensorType::kF16: WidenF16(src, dst); return Status::Ok();
    case TensorType::kBF16: WidenBF16(src, dst); return Status::Ok();
    case TensorType::kQ8_0: DequantizeQ8_0(src, dst); return Status::Ok();
    case TensorType::kQ4_0: DequantizeQ4_0(src, dst); return Status::Ok();
    case TensorType::kQ4_1: DequantizeQ4_1(src, dst); return Status::Ok();
    case TensorType::kQ4_K: DequantizeQ4_K(src, dst); return Status::Ok();
    case TensorType::kQ6_K: DequantizeQ6_K(src, dst); return Status::Ok();
  }
  return InternalError(fmt::format("DequantizeRow: type id {} has no decoder", static_cast<uint32_t>(type)));
}

}  // namespace wb
