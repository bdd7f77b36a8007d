// IEEE binary16 and bfloat16 conversions in software; see tensor_types.h.
//
// binary16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits. Every half is exactly a
// float, so widening is a re-packing of bits; narrowing rounds to nearest, ties to even.
// bfloat16 is the upper half of a binary32 (`ggml_compute_bf16_to_fp32`, ggml's src/ggml-impl.h).
#include <bit>
#include <cstdint>

#include "tensor_types.h"

namespace wb {

namespace {

constexpr uint32_t kFloatSign = 0x80000000u;
constexpr int kFloatBias = 127;
constexpr int kHalfBias = 15;
constexpr int kFractionShift = 13;  // 23 float fraction bits - 10 half fraction bits

}  // namespace

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = (static_cast<uint32_t>(bits) & 0x8000u) << 16;
  const int exponent = (bits >> 10) & 0x1F;
  uint32_t fraction = bits & 0x3FFu;
  if (exponent == 0x1F) {  // infinity or NaN: keep the payload
    return std::bit_cast<float>(sign | 0x7F800000u | (fraction << kFractionShift));
  }
  if (exponent != 0) {  // normal
    const auto e = static_cast<uint32_t>(exponent - kHalfBias + kFloatBias);
    return std::bit_cast<float>(sign | (e << 23) | (fraction << kFractionShift));
  }
  if (fraction == 0) return std::bit_cast<float>(sign);  // signed zero
  // Subnormal: fraction * 2^-24. Shift the leading one up to the hidden-bit position.
  int unbiased = 1 - kHalfBias;  // -14, the exponent of the smallest normal
  while ((fraction & 0x400u) == 0) {
    fraction <<= 1;
    --unbiased;
  }
  fraction &= 0x3FFu;
  const auto e = static_cast<uint32_t>(unbiased + kFloatBias);
  return std::bit_cast<float>(sign | (e << 23) | (fraction << kFractionShift));
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits & kFloatSign) >> 16);
  const int exponent = static_cast<int>((bits >> 23) & 0xFF);
  const uint32_t fraction = bits & 0x7FFFFFu;
  if (exponent == 0xFF) {
    if (fraction == 0) return static_cast<uint16_t>(sign | 0x7C00u);  // infinity
    // NaN: keep the top payload bits and set the quiet bit so it stays a NaN.
    return static_cast<uint16_t>(sign | 0x7C00u | 0x200u | (fraction >> kFractionShift));
  }
  const int unbiased = exponent - kFloatBias;
  if (unbiased > kHalfBias) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 2^16: overflow
  if (unbiased >= 1 - kHalfBias) {
    // Normal half. Round the 13 dropped fraction bits; a carry may bump the exponent, and
    // from the largest finite half (65504) into infinity, which is the right answer.
    uint32_t half = (static_cast<uint32_t>(unbiased + kHalfBias) << 10) | (fraction >> kFractionShift);
    const uint32_t dropped = fraction & 0x1FFFu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u) != 0)) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Subnormal half (or zero): the result counts units of 2^-24. The float is
  // (2^23 + fraction) * 2^(unbiased - 23), i.e. (2^23 + fraction) / 2^shift units.
  const int shift = -unbiased - 1;  // 14 for 2^-15, 24 for 2^-25
  if (exponent == 0 || shift > 24) return sign;  // below half the smallest subnormal: zero
  const uint32_t significand = 0x800000u | fraction;
  uint32_t units = significand >> shift;
  const uint32_t dropped = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  if (dropped > halfway || (dropped == halfway && (units & 1u) != 0)) ++units;
  return static_cast<uint16_t>(sign | units);  // units == 0x400 is the smallest normal: correct
}

float Bf16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t FloatToBf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: truncate and force the quiet bit
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  }
  // Round to nearest even on the dropped 16 bits: add just under half, plus one if the kept
  // part is odd. Overflow past the largest finite bf16 lands on infinity, as it should.
  const uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

}  // namespace wb
