// DequantizeRow: hand-built blocks of every type with values worked out from the formulas of
// ggml's src/ggml-quants.c (dequantize_row_*), written element by element here
// rather than block by block as in the code under test.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <array>
#include <bit>
#include <cstring>
#include <vector>

#include "model/files/tensor_types.h"
#include "tests/models/readers/model_file_builders.h"

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
}
