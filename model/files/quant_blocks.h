// The block layouts of ggml's quantized types, byte for byte (ggml's src/ggml-common.h).
//
// Contract: each struct has exactly the size and field order of the ggml block it mirrors
// (the static_asserts check the sizes); `half` fields hold IEEE binary16 bits. Blocks are read
// from file bytes with memcpy (LoadLE), never by casting a pointer into the file.
#pragma once

#include <cstdint>

namespace wb {

constexpr int kQK4_0 = 32;  // QK4_0
constexpr int kQK4_1 = 32;  // QK4_1
constexpr int kQK5_0 = 32;  // QK5_0
constexpr int kQK5_1 = 32;  // QK5_1
constexpr int kQK8_0 = 32;  // QK8_0
constexpr int kQK4_NL = 32;  // QK4_NL
constexpr int kQK_K = 256;  // QK_K, the super-block of the K-quants (and of IQ4_XS)
constexpr int kKScaleBytes = 12;  // K_SCALE_SIZE: 8 six-bit scales + 8 six-bit mins

// The 16 values a 4-bit IQ4_NL / IQ4_XS code stands for, in units of the block scale: a fixed,
// non-uniform grid, denser near zero where weights cluster. A fact of the format, not a
// tuning choice: ggml's src/ggml-common.h, `kvalues_iq4nl`.
constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// block_q8_0: y[j] = qs[j] * d
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34, "block_q8_0 is 34 bytes");

// block_q4_0: low nibbles are elements 0..15, high nibbles 16..31; y = (q - 8) * d
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "block_q4_0 is 18 bytes");

// block_q4_1: nibbles as in Q4_0; y = q * d + m
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK4_1 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "block_q4_1 is 20 bytes");

// block_q5_0: 5-bit codes. The low 4 bits are nibbles as in Q4_0 (element j < 16 in the low
// nibble of qs[j], element j + 16 in its high nibble); the 5th bit of element j is bit j of
// qh read as a little-endian u32. y = (q - 16) * d
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22, "block_q5_0 is 22 bytes");

// block_q5_1: codes as in Q5_0, with a min instead of the -16; y = q * d + m
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24, "block_q5_1 is 24 bytes");

// block_q2_K: 16 sub-blocks of 16, each with one byte holding a 4-bit scale (low nibble) and
// a 4-bit min (high nibble); 2-bit codes, four to a byte; d and dmin LAST.
// y = d*(sc & 15) * q - dmin*(sc >> 4)
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84, "block_q2_K is 84 bytes");

// block_q3_K: 3-bit codes split into 2 low bits (qs, as in Q2_K) and a high bit (hmask), 16
// six-bit sub-block scales packed in 12 bytes, d LAST. The high bit SET means no offset:
// y = d * (scale - 32) * (low2 - (high ? 0 : 4))
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110, "block_q3_K is 110 bytes");

// block_q4_K: 8 sub-blocks of 32, each with a 6-bit scale and 6-bit min packed in `scales`;
// y = d*sc * q - dmin*m
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144, "block_q4_K is 144 bytes");

// block_q5_K: Q4_K plus a 5th bit per code: bit s of qh[l] is the high bit of value l of
// sub-block s. y = d*sc * q - dmin*m
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176, "block_q5_K is 176 bytes");

// block_q6_K: 6-bit values split into 4 low bits (ql) and 2 high bits (qh), 16 signed 8-bit
// sub-block scales, and the super-block scale d LAST; y = d * scales[s] * (q - 32)
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "block_q6_K is 210 bytes");

// block_iq4_nl: nibbles as in Q4_0, each an index into kIQ4NLValues; y = d * kIQ4NLValues[q]
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK4_NL / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18, "block_iq4_nl is 18 bytes");

// block_iq4_xs: 8 sub-blocks of 32, each laid out as one IQ4_NL block's nibbles, with a 6-bit
// scale ls: low 4 bits in scales_l (nibble s % 2 of byte s / 2), top 2 bits in bits 2s, 2s+1 of
// scales_h. y = d * (ls - 32) * kIQ4NLValues[q]
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136, "block_iq4_xs is 136 bytes");

}  // namespace wb
