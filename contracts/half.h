// HalfToFloat and FloatToHalf: IEEE binary16 <-> float, exactly, for the contracts that store
// halves (stage 4's block scales, stage 5's f16 cache rows). Provided code: use it as it is.
#pragma once

#include <cstdint>
#include <cstring>

// Round to nearest, ties to even.
// Every half is exactly a float, so HalfToFloat is exact; FloatToHalf rounds once, makes
// subnormal halves below 2^-14 and infinity above 65504 (rounded), and keeps NaN a NaN.
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t fraction = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (fraction << 13);  // infinity or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (fraction << 13);  // normal: rebias 15 -> 127
  } else {
    // Zero or subnormal: fraction * 2^-24, exact in float.
    const float magnitude = static_cast<float>(fraction) * 0x1p-24f;
    std::memcpy(&bits, &magnitude, sizeof(bits));
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t FloatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);  // NaN
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504: inf
  if (magnitude >= 0x38800000u) {
    // Normal half: drop 13 fraction bits, rounding to nearest, ties to even. A carry out of
    // the fraction moves into the exponent, which is the right result.
    const uint32_t rebiased = magnitude - 0x38000000u;  // exponent 127 -> 15
    const uint32_t kept = rebiased >> 13;
    const uint32_t rest = rebiased & 0x1FFFu;
    const uint32_t up = (rest > 0x1000u || (rest == 0x1000u && (kept & 1u))) ? 1u : 0u;
    return static_cast<uint16_t>(sign | (kept + up));
  }
  // Subnormal half (or zero): the value in units of 2^-24, rounded to nearest even. The
  // product is exact, and nearbyint-like rounding is done on the integer and fraction.
  float absolute;
  const uint32_t absoluteBits = magnitude;
  std::memcpy(&absolute, &absoluteBits, sizeof(absolute));
  const float units = absolute * 0x1p24f;  // exact: a power-of-two scale of a small value
  const uint32_t whole = static_cast<uint32_t>(units);
  const float fractionPart = units - static_cast<float>(whole);
  const uint32_t up = (fractionPart > 0.5f || (fractionPart == 0.5f && (whole & 1u))) ? 1u : 0u;
  return static_cast<uint16_t>(sign | (whole + up));
}
