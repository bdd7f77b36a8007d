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
constexpr int kQK8_0 = 32;  // QK8_0
constexpr int kQK_K = 256;  // QK_K, the super-block of the K-quants
constexpr int kKScaleBytes = 12;  // K_SCALE_SIZE: 8 six-bit scales + 8 six-bit mins

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

// block_q4_K: 8 sub-blocks of 32, each with a 6-bit scale and 6-bit min packed in `scales`;
// y = d*sc * q - dmin*m
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144, "block_q4_K is 144 bytes");

// block_q6_K: 6-bit values split into 4 low bits (ql) and 2 high bits (qh), 16 signed 8-bit
// sub-block scales, and the super-block scale d LAST; y = d * scales[s] * (q - 32)
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "block_q6_K is 210 bytes");

}  // namespace wb
