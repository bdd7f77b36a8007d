// DequantizeRow: hand-built blocks of every type with values worked out from the formulas of
// ggml's src/ggml-quants.c (dequantize_row_*), written element by element here
// rather than block by block as in the code under test.
#include <doctest/doctest.h>

#include <array>
#include <bit>
#include <cstring>
#include <vector>

#include "model/files/tensor_types.h"
#include "tests/models/readers/model_file_builders.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_dequantize {

using wb::TensorType;
using wb::test::Bytes;

namespace {

constexpr uint16_t kHalfOne = 0x3C00;      // 1.0
constexpr uint16_t kHalfHalf = 0x3800;     // 0.5
constexpr uint16_t kHalfQuarter = 0x3400;  // 0.25
constexpr uint16_t kHalfTwo = 0x4000;      // 2.0
constexpr uint16_t kHalfMinusThree = 0xC200;  // -3.0

void PutU16(Bytes& bytes, size_t at, uint16_t value) {
  bytes[at] = static_cast<std::byte>(value & 0xFF);
  bytes[at + 1] = static_cast<std::byte>(value >> 8);
}
uint8_t& ByteAt(Bytes& bytes, size_t at) { return reinterpret_cast<uint8_t&>(bytes[at]); }

std::vector<float> Dequantize(TensorType type, const Bytes& bytes, size_t count) {
  std::vector<float> out(count, -12345.0f);
  const wb::Status status = wb::DequantizeRow(type, wb::test::View(bytes), out);
  REQUIRE(status.ok());
  return out;
}

}  // namespace

TEST_CASE("F32, F16 and BF16 rows widen exactly") {
  const std::vector<float> f32 = {1.5f, -0.0f, 3e38f, 1e-45f};
  CHECK(Dequantize(TensorType::kF32, wb::test::BytesOf(f32), 4) == f32);

  // 1.0, -2.0, the largest half, the smallest subnormal half, 1/3 rounded to half.
  const std::vector<uint16_t> halves = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x3555};
  const auto f16 = Dequantize(TensorType::kF16, wb::test::BytesOf(halves), 5);
  CHECK(f16[0] == 1.0f);
  CHECK(f16[1] == -2.0f);
  CHECK(f16[2] == 65504.0f);
  CHECK(f16[3] == std::ldexp(1.0f, -24));
  CHECK(f16[4] == std::ldexp(1.0f + 0x155 / 1024.0f, -2));

  const std::vector<uint16_t> bf16 = {0x3F80, 0xC040, 0x3EAB};  // 1, -3, 0.333984375
  const auto widened = Dequantize(TensorType::kBF16, wb::test::BytesOf(bf16), 3);
  CHECK(widened[0] == 1.0f);
  CHECK(widened[1] == -3.0f);
  CHECK(widened[2] == 0.333984375f);
}

TEST_CASE("Q8_0: y[j] = qs[j] * d") {
  Bytes block(2 * 34);
  PutU16(block, 0, kHalfHalf);
  PutU16(block, 34, kHalfMinusThree);
  for (int j = 0; j < 32; ++j) {
    block[2 + j] = static_cast<std::byte>(static_cast<int8_t>(j * 8 - 128));  // -128, -120, ..., 120
    block[36 + j] = static_cast<std::byte>(static_cast<int8_t>(j - 16));
  }
  const auto y = Dequantize(TensorType::kQ8_0, block, 64);
  for (int j = 0; j < 32; ++j) {
    CHECK(y[j] == (j * 8 - 128) * 0.5f);
    CHECK(y[32 + j] == (j - 16) * -3.0f);
  }
}

TEST_CASE("Q4_0: low nibbles are the first 16 values, high nibbles the last 16, minus 8") {
  Bytes block(18);
  PutU16(block, 0, kHalfQuarter);
  for (int j = 0; j < 16; ++j) ByteAt(block, 2 + j) = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = Dequantize(TensorType::kQ4_0, block, 32);
  for (int j = 0; j < 16; ++j) {
    CHECK(y[j] == (j - 8) * 0.25f);
    CHECK(y[16 + j] == ((15 - j) - 8) * 0.25f);
  }
}

TEST_CASE("Q4_1: y = q * d + m") {
  Bytes block(20);
  PutU16(block, 0, kHalfTwo);
  PutU16(block, 2, kHalfMinusThree);
  for (int j = 0; j < 16; ++j) ByteAt(block, 4 + j) = static_cast<uint8_t>(((j * 7) % 16) | (j << 4));
  const auto y = Dequantize(TensorType::kQ4_1, block, 32);
  for (int j = 0; j < 16; ++j) {
    CHECK(y[j] == ((j * 7) % 16) * 2.0f - 3.0f);
    CHECK(y[16 + j] == j * 2.0f - 3.0f);
  }
}

namespace {

// Packs eight 6-bit scales and mins the way block_q4_K stores them: bytes 0-3 hold scales 0-3
// in their low 6 bits and the top 2 bits of scales 4-7; bytes 4-7 the same for the mins;
// bytes 8-11 the low 4 bits of scale 4+k (low nibble) and min 4+k (high nibble).
std::array<uint8_t, 12> PackQ4KScales(const std::array<int, 8>& sc, const std::array<int, 8>& mn) {
  std::array<uint8_t, 12> s{};
  for (int k = 0; k < 4; ++k) {
    s[k] = static_cast<uint8_t>(sc[k] | ((sc[k + 4] >> 4) << 6));
    s[k + 4] = static_cast<uint8_t>(mn[k] | ((mn[k + 4] >> 4) << 6));
    s[k + 8] = static_cast<uint8_t>((sc[k + 4] & 15) | ((mn[k + 4] & 15) << 4));
  }
  return s;
}

// A Q4_K block whose 256 4-bit values are q[i]; value i sits in byte 32*(i/64) + i%32, in
// the low nibble when (i/32) is even, else the high nibble.
Bytes Q4KBlock(uint16_t d, uint16_t dmin, const std::array<int, 8>& sc, const std::array<int, 8>& mn,
               const std::array<int, 256>& q) {
  Bytes block(144);
  PutU16(block, 0, d);
  PutU16(block, 2, dmin);
  const auto scales = PackQ4KScales(sc, mn);
  for (int k = 0; k < 12; ++k) ByteAt(block, 4 + k) = scales[k];
  for (int i = 0; i < 256; ++i) {
    uint8_t& byte = ByteAt(block, 16 + 32 * (i / 64) + i % 32);
    byte = static_cast<uint8_t>(((i / 32) % 2 == 0) ? (byte & 0xF0) | q[i] : (byte & 0x0F) | (q[i] << 4));
  }
  return block;
}

}  // namespace

TEST_CASE("Q4_K: y = d*sc(sub-block) * q - dmin*m(sub-block), with 6-bit packed scales") {
  // Scales and mins that use all 6 bits, so the packed top bits matter.
  const std::array<int, 8> sc = {1, 63, 17, 32, 48, 5, 33, 60};
  const std::array<int, 8> mn = {0, 7, 63, 16, 31, 62, 1, 47};
  std::array<int, 256> q{};
  for (int i = 0; i < 256; ++i) q[i] = (i * 5 + i / 32) % 16;
  const auto y = Dequantize(TensorType::kQ4_K, Q4KBlock(kHalfOne, kHalfHalf, sc, mn, q), 256);
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 32;
    INFO("element ", i);
    CHECK(y[i] == 1.0f * sc[sub] * q[i] - 0.5f * mn[sub]);  // every product here is exact
  }
}

TEST_CASE("Q4_K with inexact scales: each value is the exact result rounded once") {
  // d = 0.1 (half 0x2E66 = 0.0999755859375) and dmin = 0.3 (0x34CD). An 11-bit half times a
  // 6-bit scale times a 4-bit code needs at most 21 significant bits, so ggml's f32 products
  // d*sc, dmin*m and d*sc*q are all exact and only the final subtraction rounds: the order
  // of the products (and any fused multiply-add) cannot change the result.
  const uint16_t dBits = 0x2E66, dminBits = 0x34CD;
  const double d = wb::HalfToFloat(dBits), dmin = wb::HalfToFloat(dminBits);
  const std::array<int, 8> sc = {37, 41, 43, 47, 53, 59, 61, 63};
  const std::array<int, 8> mn = {29, 31, 37, 41, 43, 47, 53, 59};
  std::array<int, 256> q{};
  for (int i = 0; i < 256; ++i) q[i] = (i * 11 + 3) % 16;
  const auto y = Dequantize(TensorType::kQ4_K, Q4KBlock(dBits, dminBits, sc, mn, q), 256);
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 32;
    INFO("element ", i);
    CHECK(y[i] == static_cast<float>(d * sc[sub] * q[i] - dmin * mn[sub]));
  }
}

namespace {

// A Q6_K block whose 256 6-bit values are q[i] (0..63, stored as q - 32 after decoding).
// Value i: half h = i/128, quarter u = (i%128)/32, l = i%32. Its low 4 bits are in
// ql[64h + l + 32*(u%2)], low nibble for u < 2, high nibble otherwise; its high 2 bits are
// bits 2u..2u+1 of qh[32h + l]; its scale is scales[8h + l/16 + 2u]. d is the last field.
Bytes Q6KBlock(uint16_t d, const std::array<int8_t, 16>& scales, const std::array<int, 256>& q) {
  Bytes block(210);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, u = (i % 128) / 32, l = i % 32;
    uint8_t& low = ByteAt(block, 64 * h + l + 32 * (u % 2));
    low = static_cast<uint8_t>(u < 2 ? (low & 0xF0) | (q[i] & 15) : (low & 0x0F) | ((q[i] & 15) << 4));
    uint8_t& high = ByteAt(block, 128 + 32 * h + l);
    high = static_cast<uint8_t>(high | ((q[i] >> 4) << (2 * u)));
  }
  for (int k = 0; k < 16; ++k) block[192 + k] = static_cast<std::byte>(scales[k]);
  PutU16(block, 208, d);
  return block;
}

}  // namespace

TEST_CASE("Q6_K: y = d * scale(16-value group) * (q - 32), d stored last") {
  const std::array<int8_t, 16> scales = {1, -1, 2, -2, 3, -3, 4, -4, 127, -128, 5, 6, 7, 8, 9, 10};
  std::array<int, 256> q{};
  for (int i = 0; i < 256; ++i) q[i] = (i * 13 + 7) % 64;
  const auto y = Dequantize(TensorType::kQ6_K, Q6KBlock(kHalfHalf, scales, q), 256);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, u = (i % 128) / 32, l = i % 32;
    const int scale = scales[8 * h + l / 16 + 2 * u];
    INFO("element ", i);
    CHECK(y[i] == 0.5f * scale * (q[i] - 32));  // exact: small integers times 0.5
  }
}

TEST_CASE("Q6_K values are exact in f32 even for an arbitrary half d") {
  // ggml computes (d * sc) * q in f32. A half has at most 11 significant bits, |sc| <= 128 at
  // most 7 (128 is a power of two), |q - 32| <= 32 at most 5: every product fits the 24 bits
  // of an f32 significand, so each value is the exact real product, whatever the order.
  const uint16_t dBits = 0x3BFF;  // 0.99951171875: all 11 significand bits set
  const double d = wb::HalfToFloat(dBits);
  std::array<int8_t, 16> scales{};
  for (int k = 0; k < 16; ++k) scales[k] = static_cast<int8_t>(127 - 17 * k);
  std::array<int, 256> q{};
  for (int i = 0; i < 256; ++i) q[i] = (i * 29 + 1) % 64;
  const auto y = Dequantize(TensorType::kQ6_K, Q6KBlock(dBits, scales, q), 256);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, u = (i % 128) / 32, l = i % 32;
    INFO("element ", i);
    CHECK(static_cast<double>(y[i]) == d * scales[8 * h + l / 16 + 2 * u] * (q[i] - 32));
  }
}

namespace {

constexpr uint16_t kHalfTenth = 0x2E66;        // 0.0999755859375, 10 significand bits
constexpr uint16_t kHalfAllBits = 0x3BFF;      // 0.99951171875 = 2047 * 2^-11: all 11 bits set
constexpr uint16_t kHalfTinyNormal = 0x0401;   // 2^-14 * (1 + 2^-10): far below the other scales

// Writes 5-bit codes q[0..31] the way block_q5_0 / block_q5_1 hold them, `at` bytes into a
// block: 4 bytes qh (bit i of the little-endian u32 is bit 4 of code i), then 16 bytes qs (code
// i's low 4 bits in byte i % 16, low nibble for i < 16, high nibble for i >= 16).
void PutQ5Codes(Bytes& block, size_t at, const std::array<int, 32>& q) {
  uint32_t fifthBits = 0;
  for (int i = 0; i < 32; ++i) {
    fifthBits |= static_cast<uint32_t>(q[i] >> 4) << i;
    uint8_t& byte = ByteAt(block, at + 4 + i % 16);
    byte = static_cast<uint8_t>(i < 16 ? (byte & 0xF0) | (q[i] & 15) : (byte & 0x0F) | ((q[i] & 15) << 4));
  }
  for (int k = 0; k < 4; ++k) ByteAt(block, at + k) = static_cast<uint8_t>(fifthBits >> (8 * k));
}

}  // namespace

TEST_CASE("Q5_0: y = (q - 16) * d, the 5th bits of all 32 codes in one little-endian u32") {
  // Two blocks. Block 0's codes are a permutation of 0..31, so every 5th bit and every nibble
  // matters; block 1 has the codes reversed and a negative scale.
  Bytes row(2 * 22);
  std::array<int, 32> q0{}, q1{};
  for (int i = 0; i < 32; ++i) {
    q0[i] = (i * 7 + 3) % 32;
    q1[i] = 31 - q0[i];
  }
  PutU16(row, 0, kHalfTenth);
  PutQ5Codes(row, 2, q0);
  PutU16(row, 22, kHalfMinusThree);
  PutQ5Codes(row, 24, q1);
  const double d = wb::HalfToFloat(kHalfTenth);
  const auto y = Dequantize(TensorType::kQ5_0, row, 64);
  for (int i = 0; i < 32; ++i) {
    INFO("element ", i);
    CHECK(static_cast<double>(y[i]) == (q0[i] - 16) * d);  // exact: 11 bits times 4
    CHECK(y[32 + i] == (q1[i] - 16) * -3.0f);
  }
}

TEST_CASE("Q5_1: y = q * d + m, the product exact and the add rounded once") {
  std::array<int, 32> q{};
  for (int i = 0; i < 32; ++i) q[i] = (i * 11 + 5) % 32;
  SUBCASE("exact scales") {
    Bytes block(24);
    PutU16(block, 0, kHalfHalf);
    PutU16(block, 2, kHalfMinusThree);
    PutQ5Codes(block, 4, q);
    const auto y = Dequantize(TensorType::kQ5_1, block, 32);
    for (int i = 0; i < 32; ++i) {
      INFO("element ", i);
      CHECK(y[i] == q[i] * 0.5f - 3.0f);
    }
  }
  SUBCASE("a min 2^-14 small: q*d + m needs up to 29 bits and must round to nearest once") {
    Bytes block(24);
    PutU16(block, 0, kHalfAllBits);
    PutU16(block, 2, kHalfTinyNormal);
    PutQ5Codes(block, 4, q);
    const double d = wb::HalfToFloat(kHalfAllBits), m = wb::HalfToFloat(kHalfTinyNormal);
    const auto y = Dequantize(TensorType::kQ5_1, block, 32);
    int rounded = 0;
    for (int i = 0; i < 32; ++i) {
      const double exact = q[i] * d + m;  // exact in double (29 bits)
      INFO("element ", i);
      CHECK(y[i] == static_cast<float>(exact));
      rounded += static_cast<double>(y[i]) != exact;
    }
    CHECK(rounded > 16);  // the case really rounds
  }
}

namespace {

// For the K-quants with mins (Q2_K, Q5_K): checks every y[i] against d*sc[g]*q[i] - dmin*mn[g],
// g = i / (256 / Groups), worked out exactly in double (at most 35 bits here) and rounded once
// to f32. Returns how many values that rounding changed.
template <size_t Groups>
int CheckScaleMinValues(const std::vector<float>& y, double d, double dmin, const std::array<int, Groups>& sc,
                        const std::array<int, Groups>& mn, const std::array<int, 256>& q) {
  int rounded = 0;
  for (int i = 0; i < 256; ++i) {
    const size_t g = static_cast<size_t>(i) / (256 / Groups);
    const double exact = d * sc[g] * q[i] - dmin * mn[g];
    INFO("element ", i);
    CHECK(y[i] == static_cast<float>(exact));
    rounded += static_cast<double>(y[i]) != exact;
  }
  return rounded;
}

// A Q2_K block (ggml's block_q2_K: scales[16], qs[64], then d and dmin). Sub-block s (values
// 16s .. 16s+15) has scale sc[s] and min mn[s], 4 bits each, in byte s: scale low, min high.
// Value i's 2-bit code: byte 32*(i/128) + i%32 of qs, bits 2u and 2u+1 for u = (i%128)/32.
Bytes Q2KBlock(uint16_t d, uint16_t dmin, const std::array<int, 16>& sc, const std::array<int, 16>& mn,
               const std::array<int, 256>& q) {
  Bytes block(84);
  for (int s = 0; s < 16; ++s) ByteAt(block, s) = static_cast<uint8_t>(sc[s] | (mn[s] << 4));
  for (int i = 0; i < 256; ++i) {
    const int u = (i % 128) / 32;
    ByteAt(block, 16 + 32 * (i / 128) + i % 32) |= static_cast<uint8_t>(q[i] << (2 * u));
  }
  PutU16(block, 80, d);
  PutU16(block, 82, dmin);
  return block;
}

}  // namespace

TEST_CASE("Q2_K: y = d*scale * q - dmin*min, 4-bit scale/min pairs, d and dmin stored last") {
  // Scales and mins are two different permutations of 0..15: every nibble value, both halves.
  std::array<int, 16> sc{}, mn{};
  for (int s = 0; s < 16; ++s) {
    sc[s] = (3 * s + 1) % 16;
    mn[s] = (7 * s + 2) % 16;
  }
  std::array<int, 256> q{};
  for (int i = 0; i < 256; ++i) q[i] = (i * 13 + i / 16 + i / 64) % 4;
  SUBCASE("exact scales: d = 1, dmin = 0.5") {
    const auto y = Dequantize(TensorType::kQ2_K, Q2KBlock(kHalfOne, kHalfHalf, sc, mn, q), 256);
    CHECK(CheckScaleMinValues(y, 1.0, 0.5, sc, mn, q) == 0);
  }
  SUBCASE("scales 2^25 apart: the subtraction rounds, once") {
    const double d = wb::HalfToFloat(kHalfAllBits), dmin = wb::HalfToFloat(kHalfTinyNormal);
    const auto y = Dequantize(TensorType::kQ2_K, Q2KBlock(kHalfAllBits, kHalfTinyNormal, sc, mn, q), 256);
    CHECK(CheckScaleMinValues(y, d, dmin, sc, mn, q) > 100);  // the case really rounds
  }
}

namespace {

// A Q3_K block (block_q3_K: hmask[32], qs[64], scales[12], d). code[i] is 0..7: its low 2 bits
// go where Q2_K puts its codes, its high bit into bit i/32 of hmask[i%32]; the value is
// d * (scale - 32) * (code - 4), i.e. a CLEAR high bit means "minus 4". The sixteen 6-bit scales
// (stored with +32): byte k < 8 holds the low 4 bits of scale k (low nibble) and of scale k+8
// (high nibble); byte 8+k holds the top 2 bits of scales k, k+4, k+8, k+12 at bits 0, 2, 4, 6.
Bytes Q3KBlock(uint16_t d, const std::array<int, 16>& scales, const std::array<int, 256>& code) {
  Bytes block(110);
  for (int i = 0; i < 256; ++i) {
    const int u = (i % 128) / 32;
    ByteAt(block, 32 + 32 * (i / 128) + i % 32) |= static_cast<uint8_t>((code[i] & 3) << (2 * u));
    ByteAt(block, i % 32) |= static_cast<uint8_t>((code[i] >> 2) << (i / 32));
  }
  for (int k = 0; k < 8; ++k) ByteAt(block, 96 + k) = static_cast<uint8_t>((scales[k] & 15) | ((scales[k + 8] & 15) << 4));
  for (int k = 0; k < 4; ++k) {
    ByteAt(block, 104 + k) = static_cast<uint8_t>((scales[k] >> 4) | ((scales[k + 4] >> 4) << 2) |
                                                  ((scales[k + 8] >> 4) << 4) | ((scales[k + 12] >> 4) << 6));
  }
  PutU16(block, 108, d);
  return block;
}

}  // namespace

TEST_CASE("Q3_K: y = d * (scale - 32) * (code - 4), hmask high bits and 6-bit packed scales") {
  // The scales' low nibbles are a permutation of 0..15 and their top bit pairs take all four
  // values; none is 32, so no sub-block is all zeros. Codes use all 8 values in every sub-block.
  std::array<int, 16> scales{};
  for (int s = 0; s < 16; ++s) scales[s] = (s * 37 + 5) % 64;
  std::array<int, 256> code{};
  for (int i = 0; i < 256; ++i) code[i] = (i * 5 + i / 16) % 8;
  SUBCASE("d = 1") {
    const auto y = Dequantize(TensorType::kQ3_K, Q3KBlock(kHalfOne, scales, code), 256);
    for (int i = 0; i < 256; ++i) {
      INFO("element ", i);
      CHECK(y[i] == static_cast<float>((scales[i / 16] - 32) * (code[i] - 4)));
    }
  }
  SUBCASE("d with all 11 bits: every product exact (at most 11 + 5 + 2 bits)") {
    const double d = wb::HalfToFloat(kHalfAllBits);
    const auto y = Dequantize(TensorType::kQ3_K, Q3KBlock(kHalfAllBits, scales, code), 256);
    for (int i = 0; i < 256; ++i) {
      INFO("element ", i);
      CHECK(static_cast<double>(y[i]) == d * (scales[i / 16] - 32) * (code[i] - 4));
    }
  }
}

namespace {

// A Q5_K block (block_q5_K: d, dmin, scales[12] packed as Q4_K's, qh[32], qs[128]). Value i of
// sub-block s = i/32, l = i%32: low 4 bits in nibble s%2 of qs[32*(s/2) + l], 5th bit in bit s
// of qh[l].
Bytes Q5KBlock(uint16_t d, uint16_t dmin, const std::array<int, 8>& sc, const std::array<int, 8>& mn,
               const std::array<int, 256>& q) {
  Bytes block(176);
  PutU16(block, 0, d);
  PutU16(block, 2, dmin);
  const auto scales = PackQ4KScales(sc, mn);
  for (int k = 0; k < 12; ++k) ByteAt(block, 4 + k) = scales[k];
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32, l = i % 32;
    ByteAt(block, 16 + l) |= static_cast<uint8_t>((q[i] >> 4) << s);
    ByteAt(block, 48 + 32 * (s / 2) + l) |= static_cast<uint8_t>((q[i] & 15) << (4 * (s % 2)));
  }
  return block;
}

}  // namespace

TEST_CASE("Q5_K: y = d*sc * q - dmin*m, Q4_K's scales plus a 5th bit per code in qh") {
  const std::array<int, 8> sc = {1, 63, 17, 32, 48, 5, 33, 60};
  const std::array<int, 8> mn = {0, 7, 63, 16, 31, 62, 1, 47};
  std::array<int, 256> q{};
  for (int i = 0; i < 256; ++i) q[i] = (i * 7 + i / 32) % 32;  // all 32 codes in every sub-block
  SUBCASE("exact scales: d = 1, dmin = 0.5") {
    const auto y = Dequantize(TensorType::kQ5_K, Q5KBlock(kHalfOne, kHalfHalf, sc, mn, q), 256);
    CHECK(CheckScaleMinValues(y, 1.0, 0.5, sc, mn, q) == 0);
  }
  SUBCASE("an 11-bit d and a tiny dmin: (d*sc)*q has up to 22 bits, the subtraction rounds once") {
    const double d = wb::HalfToFloat(kHalfAllBits), dmin = wb::HalfToFloat(kHalfTinyNormal);
    const auto y = Dequantize(TensorType::kQ5_K, Q5KBlock(kHalfAllBits, kHalfTinyNormal, sc, mn, q), 256);
    CHECK(CheckScaleMinValues(y, d, dmin, sc, mn, q) > 100);  // the case really rounds
  }
}

namespace {

// The IQ4_NL grid, restated from ggml's src/ggml-common.h (`kvalues_iq4nl`) so that a typo in
// the library's copy fails here.
constexpr int kIQ4Grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Writes 32 4-bit indices as one IQ4_NL block's qs (also an IQ4_XS sub-block's): index i in
// byte i % 16, low nibble for i < 16, high nibble for i >= 16.
void PutNibbles(Bytes& block, size_t at, const int* q) {
  for (int i = 0; i < 32; ++i) {
    uint8_t& byte = ByteAt(block, at + i % 16);
    byte = static_cast<uint8_t>(i < 16 ? (byte & 0xF0) | q[i] : (byte & 0x0F) | (q[i] << 4));
  }
}

}  // namespace

TEST_CASE("IQ4_NL: y = d * grid[q], the non-uniform grid of 16 values") {
  std::array<int, 64> q{};
  for (int i = 0; i < 64; ++i) q[i] = (i * 5 + 2 + i / 32) % 16;  // every index, twice a block
  Bytes row(2 * 18);
  PutU16(row, 0, kHalfAllBits);
  PutNibbles(row, 2, q.data());
  PutU16(row, 18, kHalfMinusThree);
  PutNibbles(row, 20, q.data() + 32);
  const double d = wb::HalfToFloat(kHalfAllBits);
  const auto y = Dequantize(TensorType::kIQ4_NL, row, 64);
  for (int i = 0; i < 32; ++i) {
    INFO("element ", i);
    CHECK(static_cast<double>(y[i]) == d * kIQ4Grid[q[i]]);  // exact: 11 + 7 bits
    CHECK(y[32 + i] == -3.0f * kIQ4Grid[q[32 + i]]);
  }
}

namespace {

// An IQ4_XS block (block_iq4_xs: d, u16 scales_h, scales_l[4], qs[128]). Sub-block s (values
// 32s ..) has a 6-bit scale ls[s], stored with +32: low 4 bits in scales_l[s/2] (low nibble for
// even s), top 2 bits at bits 2s, 2s+1 of scales_h; its 32 indices are laid out as an IQ4_NL
// block's, in qs[16s .. 16s+15].
Bytes IQ4XSBlock(uint16_t d, const std::array<int, 8>& ls, const std::array<int, 256>& q) {
  Bytes block(136);
  PutU16(block, 0, d);
  uint16_t high = 0;
  for (int s = 0; s < 8; ++s) high = static_cast<uint16_t>(high | ((ls[s] >> 4) << (2 * s)));
  PutU16(block, 2, high);
  for (int k = 0; k < 4; ++k) ByteAt(block, 4 + k) = static_cast<uint8_t>((ls[2 * k] & 15) | ((ls[2 * k + 1] & 15) << 4));
  for (int s = 0; s < 8; ++s) PutNibbles(block, 8 + 16 * s, q.data() + 32 * s);
  return block;
}

}  // namespace

TEST_CASE("IQ4_XS: y = d * (ls - 32) * grid[q], 6-bit scales split into scales_l and scales_h") {
  // The top bit pairs of the scales take all four values, and ls - 32 is never 0.
  const std::array<int, 8> ls = {0, 63, 17, 46, 33, 31, 48, 9};
  std::array<int, 256> q{};
  for (int i = 0; i < 256; ++i) q[i] = (i * 3 + i / 32) % 16;
  SUBCASE("d = 0.5") {
    const auto y = Dequantize(TensorType::kIQ4_XS, IQ4XSBlock(kHalfHalf, ls, q), 256);
    for (int i = 0; i < 256; ++i) {
      INFO("element ", i);
      CHECK(y[i] == 0.5f * static_cast<float>((ls[i / 32] - 32) * kIQ4Grid[q[i]]));
    }
  }
  SUBCASE("d with all 11 bits: products of up to 11 + 5 + 7 = 23 bits, still exact") {
    const double d = wb::HalfToFloat(kHalfAllBits);
    const auto y = Dequantize(TensorType::kIQ4_XS, IQ4XSBlock(kHalfAllBits, ls, q), 256);
    for (int i = 0; i < 256; ++i) {
      INFO("element ", i);
      CHECK(static_cast<double>(y[i]) == d * (ls[i / 32] - 32) * kIQ4Grid[q[i]]);
    }
  }
}

TEST_CASE("DequantizeRow checks the sizes it is given") {
  std::vector<float> out(32);
  const Bytes tooShort(33);
  CHECK(wb::DequantizeRow(TensorType::kQ8_0, wb::test::View(tooShort), out).error().message ==
        "32 floats of type Q8_0 need 34 bytes, but 33 were given");
  std::vector<float> partial(31);
  const Bytes block(34);
  CHECK(wb::DequantizeRow(TensorType::kQ8_0, wb::test::View(block), partial).error().message ==
        "31 elements of type Q8_0 are not a whole number of blocks of 32");
  std::vector<float> none;
  CHECK(wb::DequantizeRow(TensorType::kQ6_K, {}, none).ok());
  std::vector<float> block256(256);
  const Bytes iq4xs(135);
  CHECK(wb::DequantizeRow(TensorType::kIQ4_XS, wb::test::View(iq4xs), block256).error().message ==
        "256 floats of type IQ4_XS need 136 bytes, but 135 were given");
}

}  // namespace test_dequantize
