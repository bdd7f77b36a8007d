// DequantizeRow: blocks to floats, the same operations in the same order as ggml's
// `dequantize_row_*` (ggml's src/ggml-quants.c), so results are bit-identical.
//
// A note on rounding. A half has at most 11 significant bits (a subnormal one fewer), and a
// product of an a-bit and a b-bit integer significand has at most a + b bits; f32 holds 24.
// Small integers need few bits: |q| <= 128 needs 7 (128 is a power of two), |q| <= 32 needs 5.
// Per type (d, dmin, m are halves), the bits each product needs, and what rounds:
//   Q8_0    q*d, |q| <= 128                                   18      exact
//   Q4_0    (q-8)*d, |q-8| <= 8                               14      exact
//   Q5_0    (q-16)*d, |q-16| <= 16                            15      exact
//   Q4_1    q*d, q <= 15                                      15      + m rounds once
//   Q5_1    q*d, q <= 31                                      16      + m rounds once
//   Q2_K    dl = d*(sc&15), ml = dmin*(sc>>4)                 15
//           dl*q, q <= 3                                      17      - ml rounds once
//   Q3_K    dl = d*(s-32), |s-32| <= 32                       16
//           dl*c, c = code - 4 in -4..3                       18      exact
//   Q4_K    d*sc, dmin*m (6-bit)                              17
//           (d*sc)*q, q <= 15                                 21      - dmin*m rounds once
//   Q5_K    as Q4_K, (d*sc)*q with q <= 31                    22      - dmin*m rounds once
//   Q6_K    d*sc, |sc| <= 128                                 18
//           (d*sc)*(q-32), |q-32| <= 32                       23      exact
//   IQ4_NL  d*v, v from kIQ4NLValues, |v| <= 127              18      exact
//   IQ4_XS  dl = d*(ls-32), |ls-32| <= 32                     16
//           dl*v, |v| <= 127                                  23      exact
// Q6_K and IQ4_XS are the tightest, with one bit to spare. No magnitude leaves f32's normal
// range either (|d| >= 2^-24 unless 0, |y| < 2^29). So every product is exact and at most one
// step (the final add or subtract) rounds: each value is the exact result rounded once, and
// the order of the products cannot matter. The code still follows ggml's order step by step
// (e.g. d*sc rounded to f32 before the multiply by q), and the library is built with
// -ffp-contract=off so no compiler fuses the last step; infinities and NaNs in a half then
// propagate as in ggml's own build with contraction off.
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

// The 5-bit code of element i (0..31) of a Q5_0 / Q5_1 block: the low 4 bits are nibble i / 16
// of qs[i % 16] (as in Q4_0), the 5th is bit i of qh read as a little-endian u32.
int FiveBitCode(const uint8_t* qs, const uint8_t* qh, int i) {
  const uint32_t highBits = static_cast<uint32_t>(qh[0]) | (static_cast<uint32_t>(qh[1]) << 8) |
                            (static_cast<uint32_t>(qh[2]) << 16) | (static_cast<uint32_t>(qh[3]) << 24);
  const int low = (qs[i % 16] >> (4 * (i / 16))) & 0x0F;
  return low | static_cast<int>(((highBits >> i) & 1) << 4);
}

void DequantizeQ5_0(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK5_0; ++b) {
    const auto block = LoadBlock<BlockQ5_0>(src, b);
    const float d = HalfToFloat(block.d);
    float* y = dst.data() + b * kQK5_0;
    // Codes 0..31 centred on 16, as Q4_0's are on 8.
    for (int i = 0; i < kQK5_0; ++i) y[i] = static_cast<float>(FiveBitCode(block.qs, block.qh, i) - 16) * d;
  }
}

void DequantizeQ5_1(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK5_1; ++b) {
    const auto block = LoadBlock<BlockQ5_1>(src, b);
    const float d = HalfToFloat(block.d);
    const float m = HalfToFloat(block.m);
    float* y = dst.data() + b * kQK5_1;
    // Unsigned codes and a min, as Q4_1: the product is exact, only the add rounds.
    for (int i = 0; i < kQK5_1; ++i) y[i] = static_cast<float>(FiveBitCode(block.qs, block.qh, i)) * d + m;
  }
}

// The 2-bit field of element i (0..255) in the 64 bytes `qs` of Q2_K and Q3_K: each half of 128
// values uses 32 bytes; within it, element l of the 32-wide quarter u sits in byte l at bits
// 2u, 2u+1 (ggml walks the shifts 0, 2, 4, 6 over the same 32 bytes).
int TwoBitField(const uint8_t* qs, int i) { return (qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3; }

void DequantizeQ2_K(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK_K; ++b) {
    const auto block = LoadBlock<BlockQ2_K>(src, b);
    const float d = HalfToFloat(block.d);
    const float dmin = HalfToFloat(block.dmin);
    float* y = dst.data() + b * kQK_K;
    // Sub-block s (16 values) has one byte: 4-bit scale in the low nibble, 4-bit min in the
    // high one. ggml rounds dl = d*scale and ml = dmin*min to f32 first (both exact).
    for (int s = 0; s < kQK_K / 16; ++s) {
      const float dl = d * static_cast<float>(block.scales[s] & 0x0F);
      const float ml = dmin * static_cast<float>(block.scales[s] >> 4);
      for (int l = 0; l < 16; ++l) y[16 * s + l] = dl * static_cast<float>(TwoBitField(block.qs, 16 * s + l)) - ml;
    }
  }
}

// Q3_K sub-block s's (0..15) 6-bit scale from its 12 packed bytes: the low 4 bits are nibble
// s / 8 of byte s % 8, the top 2 bits are bits 2*(s/4), 2*(s/4)+1 of byte 8 + s % 4. (ggml
// reshuffles the bytes as three little-endian u32 words; this is the same, byte by byte.)
int Q3KScale(const uint8_t* packed, int s) {
  const int low = (packed[s % 8] >> (4 * (s / 8))) & 0x0F;
  const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
  return low | (high << 4);
}

void DequantizeQ3_K(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK_K; ++b) {
    const auto block = LoadBlock<BlockQ3_K>(src, b);
    const float d = HalfToFloat(block.d);
    float* y = dst.data() + b * kQK_K;
    for (int s = 0; s < kQK_K / 16; ++s) {
      // The scale is stored as s + 32; dl = d * (s - 32) is rounded to f32 first, as in ggml.
      const float dl = d * static_cast<float>(Q3KScale(block.scales, s) - 32);
      for (int l = 0; l < 16; ++l) {
        const int i = 16 * s + l;
        // Element i's high bit is bit i / 32 of hmask[i % 32]; a CLEAR bit subtracts 4, so the
        // code runs -4..3.
        const bool high = ((block.hmask[i % 32] >> (i / 32)) & 1) != 0;
        const int code = TwoBitField(block.qs, i) - (high ? 0 : 4);
        y[i] = dl * static_cast<float>(code);
      }
    }
  }
}

// Sub-block j's 6-bit scale and min from the 12 packed bytes of Q4_K and Q5_K
// (`get_scale_min_k4`): j < 4 uses the low 6 bits of bytes j and j+4; j >= 4 takes 4 bits from
// byte j+4 and the top 2 bits of byte j-4 (scale) or byte j (min).
struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};
ScaleMin KQuantScaleMin(int j, const uint8_t* s) {
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
      const ScaleMin lo = KQuantScaleMin(2 * chunk, block.scales);
      const ScaleMin hi = KQuantScaleMin(2 * chunk + 1, block.scales);
      const float scaleLo = d * static_cast<float>(lo.scale);
      const float minLo = dmin * static_cast<float>(lo.min);
      const float scaleHi = d * static_cast<float>(hi.scale);
      const float minHi = dmin * static_cast<float>(hi.min);
      for (int l = 0; l < 32; ++l) y[64 * chunk + l] = scaleLo * static_cast<float>(q[l] & 0x0F) - minLo;
      for (int l = 0; l < 32; ++l) y[64 * chunk + 32 + l] = scaleHi * static_cast<float>(q[l] >> 4) - minHi;
    }
  }
}

void DequantizeQ5_K(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK_K; ++b) {
    const auto block = LoadBlock<BlockQ5_K>(src, b);
    const float d = HalfToFloat(block.d);
    const float dmin = HalfToFloat(block.dmin);
    float* y = dst.data() + b * kQK_K;
    // Eight sub-blocks of 32. The low 4 bits are laid out as in Q4_K (sub-block s in nibble
    // s % 2 of bytes 32*(s/2) ..); value l's 5th bit is bit s of qh[l]. As in Q4_K, d*sc and
    // dmin*m are rounded to f32 first.
    for (int s = 0; s < 8; ++s) {
      const ScaleMin sm = KQuantScaleMin(s, block.scales);
      const float scale = d * static_cast<float>(sm.scale);
      const float min = dmin * static_cast<float>(sm.min);
      const uint8_t* q = block.qs + 32 * (s / 2);
      for (int l = 0; l < 32; ++l) {
        const int code = ((q[l] >> (4 * (s % 2))) & 0x0F) | (((block.qh[l] >> s) & 1) << 4);
        y[32 * s + l] = scale * static_cast<float>(code) - min;
      }
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

void DequantizeIQ4_NL(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK4_NL; ++b) {
    const auto block = LoadBlock<BlockIQ4_NL>(src, b);
    const float d = HalfToFloat(block.d);
    float* y = dst.data() + b * kQK4_NL;
    // Nibbles as in Q4_0, but each picks a value from the non-uniform table.
    for (int j = 0; j < kQK4_NL / 2; ++j) {
      y[j] = d * static_cast<float>(kIQ4NLValues[block.qs[j] & 0x0F]);
      y[j + kQK4_NL / 2] = d * static_cast<float>(kIQ4NLValues[block.qs[j] >> 4]);
    }
  }
}

void DequantizeIQ4_XS(std::span<const std::byte> src, std::span<float> dst) {
  for (size_t b = 0; b < dst.size() / kQK_K; ++b) {
    const auto block = LoadBlock<BlockIQ4_XS>(src, b);
    const float d = HalfToFloat(block.d);
    float* y = dst.data() + b * kQK_K;
    // Eight sub-blocks of 32, each an IQ4_NL block's nibbles (16 bytes) with its own 6-bit
    // scale: low 4 bits from scales_l, top 2 from scales_h, stored as ls + 32. dl = d*(ls - 32)
    // is rounded to f32 first, as in ggml.
    for (int s = 0; s < 8; ++s) {
      const int ls = ((block.scales_l[s / 2] >> (4 * (s % 2))) & 0x0F) | (((block.scales_h >> (2 * s)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const uint8_t* q = block.qs + 16 * s;
      float* out = y + 32 * s;
      for (int j = 0; j < 16; ++j) {
        out[j] = dl * static_cast<float>(kIQ4NLValues[q[j] & 0x0F]);
        out[j + 16] = dl * static_cast<float>(kIQ4NLValues[q[j] >> 4]);
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
    case TensorType::kQ5_0: DequantizeQ5_0(src, dst); return Status::Ok();
    case TensorType::kQ5_1: DequantizeQ5_1(src, dst); return Status::Ok();
    case TensorType::kQ2_K: DequantizeQ2_K(src, dst); return Status::Ok();
    case TensorType::kQ3_K: DequantizeQ3_K(src, dst); return Status::Ok();
    case TensorType::kQ4_K: DequantizeQ4_K(src, dst); return Status::Ok();
    case TensorType::kQ5_K: DequantizeQ5_K(src, dst); return Status::Ok();
    case TensorType::kQ6_K: DequantizeQ6_K(src, dst); return Status::Ok();
    case TensorType::kIQ4_NL: DequantizeIQ4_NL(src, dst); return Status::Ok();
    case TensorType::kIQ4_XS: DequantizeIQ4_XS(src, dst); return Status::Ok();
  }
  return InternalError(fmt::format("DequantizeRow: type id {} has no decoder", static_cast<uint32_t>(type)));
}

}  // namespace wb
