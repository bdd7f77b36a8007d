// The stage-5 cache row codec of reference/decoder/cache_rows.h: byte layouts of the three
// row types against contracts/stage05_decoder.h, f16 rounding against both half converters,
// the int8 rules (scales first, zero padding, a zero group, halfway cases away from zero)
// and a mistaken group that straddles two heads.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "contracts/stage05_decoder.h"
#include "model/files/tensor_types.h"
#include "reference/decoder/cache_rows.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_cache_rows {

using ref::CacheRowType;

namespace {

std::vector<std::byte> Encode(CacheRowType type, int group, const std::vector<float>& row) {
  std::vector<std::byte> bytes(ref::CacheRowBytes(type, static_cast<int>(row.size()), group));
  ref::EncodeCacheRow(type, group, row, bytes);
  return bytes;
}

std::vector<float> Decode(CacheRowType type, int group, const std::vector<std::byte>& bytes, int width) {
  std::vector<float> row(width);
  ref::DecodeCacheRow(type, group, bytes, row);
  return row;
}

float ScaleAt(const std::vector<std::byte>& bytes, int j) {
  float s;
  std::memcpy(&s, bytes.data() + 4 * j, 4);
  return s;
}

int CodeAt(const std::vector<std::byte>& bytes, int groups, int i) {
  return static_cast<int8_t>(bytes[static_cast<size_t>(groups) * 4 + i]);
}

}  // namespace

TEST_CASE("Int8Group and CacheRowBytes are the contract's") {
  for (int headDim : {1, 2, 6, 8, 12, 16, 24, 48, 64, 80, 96, 128, 256}) {
    CAPTURE(headDim);
    CHECK(ref::Int8Group(headDim) == Int8GroupSize(headDim));
    for (int kvHeads : {1, 2, 3, 8}) {
      for (CacheType type : {CacheType::kF32, CacheType::kF16, CacheType::kInt8}) {
        CacheGeometry g;
        g.layers = 2;
        g.kvHeads = kvHeads;
        g.headDim = headDim;
        g.pageSize = 4;
        g.pages = 3;
        g.type = type;
        const auto mine = static_cast<CacheRowType>(static_cast<int>(type));
        CHECK(ref::CacheRowBytes(mine, g.kvWidth(), ref::Int8Group(headDim)) == ::CacheRowBytes(g));
      }
    }
  }
  CHECK(ref::Int8Group(16) == 16);
  CHECK(ref::Int8Group(128) == 32);
  CHECK(ref::Int8Group(12) == 4);
  CHECK(ref::Int8Group(7) == 1);
}

TEST_CASE("f32 rows are the floats' bytes, read back exactly") {
  const std::vector<float> row = {1.5f, -0.0f, 3.0e-41f, 65504.0f, -1.0e30f, 0.1f};
  const auto bytes = Encode(CacheRowType::kF32, 1, row);
  REQUIRE(bytes.size() == row.size() * 4);
  CHECK(std::memcmp(bytes.data(), row.data(), bytes.size()) == 0);
  const auto back = Decode(CacheRowType::kF32, 1, bytes, static_cast<int>(row.size()));
  CHECK(std::memcmp(back.data(), row.data(), bytes.size()) == 0);
}

TEST_CASE("f16 rows: contracts/half.h's and the model library's FloatToHalf agree, ties to even") {
  // Every half, and every midpoint between neighbouring finite halves (exact in float).
  std::vector<float> values;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    if ((bits & 0x7C00u) == 0x7C00u) continue;  // inf and NaN
    const float f = HalfToFloat(bits);
    values.push_back(f);
    if ((bits & 0x7FFFu) < 0x7BFFu) {
      const float next = HalfToFloat(static_cast<uint16_t>(bits + 1));
      const float mid = (f + next) / 2;  // exact: 11 significant bits plus one
      values.push_back(mid);
      values.push_back(std::nextafter(mid, 0.0f));
      values.push_back(std::nextafter(mid, 2 * mid));
    }
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (int i = 0; i < 200000; ++i) values.push_back(std::ldexp(mantissa(rng), exponent(rng)));
  values.push_back(65520.0f);  // rounds to inf
  values.push_back(65519.99f);
  int disagreements = 0;
  for (float v : values) {
    if (FloatToHalf(v) != wb::FloatToHalf(v)) ++disagreements;
  }
  CHECK(disagreements == 0);

  // Halfway cases go to the even half: 1 + 2^-11 lies between 1 and 1 + 2^-10.
  CHECK(FloatToHalf(1.0f + 0x1p-11f) == 0x3C00u);
  CHECK(FloatToHalf(1.0f + 3 * 0x1p-11f) == 0x3C02u);
  CHECK(FloatToHalf(0x1p-25f) == 0x0000u);      // half the smallest subnormal: to even (0)
  CHECK(FloatToHalf(3 * 0x1p-25f) == 0x0002u);  // 1.5 units: to even (2)

  // The row stores exactly those halves, in order, and reads them back.
  const std::vector<float> row(values.begin(), values.begin() + 4096);
  const auto bytes = Encode(CacheRowType::kF16, 1, row);
  REQUIRE(bytes.size() == row.size() * 2);
  const auto back = Decode(CacheRowType::kF16, 1, bytes, static_cast<int>(row.size()));
  for (size_t i = 0; i < row.size(); ++i) {
    uint16_t stored;
    std::memcpy(&stored, bytes.data() + 2 * i, 2);
    REQUIRE(stored == FloatToHalf(row[i]));
    REQUIRE(back[i] == HalfToFloat(stored));
  }
}

TEST_CASE("int8 rows: scales first, then codes, then zero padding; halfway away from zero") {
  // Six values, group 2: three scales (12 bytes), six codes, two zero bytes of padding.
  // Group 0 has amax 127, so s = 1 exactly and x / s is x: 2.5 is a halfway case.
  // Group 1 is all zeros: s = 0, codes 0, read back as 0. Group 2: amax 0.3.
  const std::vector<float> row = {127.0f, -2.5f, 0.0f, -0.0f, 0.3f, -0.1f};
  const auto bytes = Encode(CacheRowType::kInt8, 2, row);
  REQUIRE(bytes.size() == 12 + 8);
  CHECK(ScaleAt(bytes, 0) == 1.0f);
  CHECK(ScaleAt(bytes, 1) == 0.0f);
  CHECK(ScaleAt(bytes, 2) == 0.3f / 127.0f);
  CHECK(CodeAt(bytes, 3, 0) == 127);
  CHECK(CodeAt(bytes, 3, 1) == -3);  // -2.5 away from zero (ties to even would give -2)
  CHECK(CodeAt(bytes, 3, 2) == 0);
  CHECK(CodeAt(bytes, 3, 3) == 0);
  CHECK(CodeAt(bytes, 3, 4) == 127);
  CHECK(CodeAt(bytes, 3, 5) == static_cast<int>(std::round(-0.1f / (0.3f / 127.0f))));
  CHECK(bytes[18] == std::byte{0});
  CHECK(bytes[19] == std::byte{0});

  const auto back = Decode(CacheRowType::kInt8, 2, bytes, 6);
  CHECK(back[0] == 127.0f);
  CHECK(back[1] == -3.0f);
  CHECK(back[2] == 0.0f);
  CHECK(back[3] == 0.0f);
  CHECK(back[4] == 127.0f * (0.3f / 127.0f));
  CHECK(back[5] == static_cast<float>(CodeAt(bytes, 3, 5)) * ScaleAt(bytes, 2));

  // More halfway cases with s = 1: 0.5 -> 1, 1.5 -> 2, -0.5 -> -1, 3.5 -> 4.
  const std::vector<float> halves = {127.0f, 0.5f, 1.5f, -0.5f, 3.5f, -126.5f, 2.0f, 0.0f};
  const auto hb = Encode(CacheRowType::kInt8, 8, halves);
  REQUIRE(hb.size() == 4 + 8);
  CHECK(ScaleAt(hb, 0) == 1.0f);
  const std::vector<int> expected = {127, 1, 2, -1, 4, -127, 2, 0};
  for (int i = 0; i < 8; ++i) CHECK(CodeAt(hb, 1, i) == expected[i]);
}

TEST_CASE("int8 rows read back within half a step of each value") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int group : {1, 2, 4, 8, 16, 32}) {
    std::vector<float> row(96);
    for (float& v : row) v = normal(rng);
    const auto bytes = Encode(CacheRowType::kInt8, group, row);
    CHECK(bytes.size() == 96 / group * 4 + 96);
    const auto back = Decode(CacheRowType::kInt8, group, bytes, 96);
    for (int i = 0; i < 96; ++i) {
      const float s = ScaleAt(bytes, i / group);
      CHECK(std::abs(back[i] - row[i]) <= 0.5001f * s);
    }
  }
}

TEST_CASE("a group straddling two heads makes the small head coarse") {
  // Two heads of 16: head 0 small, head 1 large. The contract's group (16) gives each head
  // its own scale; a group of 32 gives head 0 head 1's scale.
  std::vector<float> row(32);
  for (int i = 0; i < 16; ++i) row[i] = 0.001f * static_cast<float>(i - 7);
  for (int i = 16; i < 32; ++i) row[i] = 10.0f * static_cast<float>(i - 23);
  CHECK(ref::CacheRowBytes(CacheRowType::kInt8, 32, 16) == 2 * 4 + 32);
  CHECK(ref::CacheRowBytes(CacheRowType::kInt8, 32, 32) == 4 + 32);
  const auto right = Decode(CacheRowType::kInt8, 16, Encode(CacheRowType::kInt8, 16, row), 32);
  const auto wrong = Decode(CacheRowType::kInt8, 32, Encode(CacheRowType::kInt8, 32, row), 32);
  for (int i = 0; i < 16; ++i) {
    CHECK(std::abs(right[i] - row[i]) < 1e-4f);
    CHECK(wrong[i] == 0.0f);  // 0.007 / (90 / 127) rounds to 0
  }
  for (int i = 16; i < 32; ++i) CHECK(right[i] == wrong[i]);
}

TEST_CASE("RoundTripRows: each row rounded to float, encoded and read back") {
  std::vector<double> rows = {1.0 / 3.0, -2.0, 0.1, 7.25, 1e-9, -1.0 / 7.0, 0.0, 5.0};  // two rows of 4
  std::vector<double> out(rows.size());
  ref::RoundTripRows(CacheRowType::kF32, 4, 4, rows, out);
  for (size_t i = 0; i < rows.size(); ++i) CHECK(out[i] == static_cast<double>(static_cast<float>(rows[i])));
  ref::RoundTripRows(CacheRowType::kF16, 4, 4, rows, out);
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(out[i] == static_cast<double>(HalfToFloat(FloatToHalf(static_cast<float>(rows[i])))));
  }
  std::vector<double> inPlace = rows;
  ref::RoundTripRows(CacheRowType::kInt8, 2, 4, inPlace, inPlace);
  for (int r = 0; r < 2; ++r) {
    std::vector<float> row(4);
    for (int i = 0; i < 4; ++i) row[i] = static_cast<float>(rows[r * 4 + i]);
    const auto back = Decode(CacheRowType::kInt8, 2, Encode(CacheRowType::kInt8, 2, row), 4);
    for (int i = 0; i < 4; ++i) CHECK(inPlace[r * 4 + i] == static_cast<double>(back[i]));
  }
}

}  // namespace test_cache_rows
