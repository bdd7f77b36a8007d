// Tensor types: the type table, row sizes, and the half / bfloat16 conversions, checked
// exhaustively against direct formulas written differently from the code under test.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "model/files/tensor_types.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_tensor_types {

using wb::TensorType;

namespace {

// A half's value from the IEEE 754 definition: (-1)^s * 2^(e-15) * (1 + f/1024), or
// (-1)^s * 2^-14 * f/1024 for subnormals.
double HalfValue(uint16_t bits) {
  const int sign = bits >> 15;
  const int exponent = (bits >> 10) & 31;
  const int fraction = bits & 1023;
  double magnitude;
  if (exponent == 31) {
    magnitude = fraction == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(fraction), -24);
  } else {
    magnitude = std::ldexp(1.0 + fraction / 1024.0, exponent - 15);
  }
  return sign ? -magnitude : magnitude;
}

// The same for bfloat16: 8 exponent bits (bias 127), 7 fraction bits.
double Bf16Value(uint16_t bits) {
  const int sign = bits >> 15;
  const int exponent = (bits >> 7) & 255;
  const int fraction = bits & 127;
  double magnitude;
  if (exponent == 255) {
    magnitude = fraction == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(fraction), -133);
  } else {
    magnitude = std::ldexp(1.0 + fraction / 128.0, exponent - 127);
  }
  return sign ? -magnitude : magnitude;
}

bool SameFloat(float a, double b) {
  if (std::isnan(b)) return std::isnan(a);
  return static_cast<double>(a) == b && std::signbit(a) == std::signbit(b);
}

// Round-to-nearest-even by search: among all finite 16-bit patterns of the format with the
// float's sign, pick the nearest value (ties: even pattern); beyond the largest finite value
// by half an ulp or more, infinity. `value` must be finite.
template <typename ValueOf>
uint16_t NearestEven(float value, ValueOf valueOf, uint16_t largestFinite) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double x = std::fabs(static_cast<double>(value));
  // Binary search for the largest pattern whose value is <= x (patterns are monotonic).
  uint16_t lo = 0, hi = largestFinite;
  if (x >= valueOf(largestFinite)) {
    lo = largestFinite;
  } else {
    while (hi - lo > 1) {
      const auto mid = static_cast<uint16_t>((lo + hi) / 2);
      (valueOf(mid) <= x ? lo : hi) = mid;
    }
    if (valueOf(hi) <= x) lo = hi;
  }
  const uint16_t next = static_cast<uint16_t>(lo + 1);  // largestFinite + 1 is infinity
  const double below = x - valueOf(lo);
  const double above = (lo == largestFinite ? 2 * valueOf(lo) - valueOf(static_cast<uint16_t>(lo - 1)) : valueOf(next)) - x;
  uint16_t chosen = lo;
  if (below > above || (below == above && (lo & 1) != 0)) chosen = next;
  return static_cast<uint16_t>(sign | chosen);
}

}  // namespace

TEST_CASE("the type table has ggml's ids, block sizes and names") {
  struct Row {
    uint32_t id;
    uint32_t elements, bytes;
    const char* name;
  };
  // ggml's src/ggml-common.h, field by field: sizeof(block_q4_0) = 2 + 16, q4_1 = 4 + 16,
  // q5_0 = 2 + 4 + 16, q5_1 = 4 + 4 + 16, q8_0 = 2 + 32, q2_K = 16 + 64 + 4,
  // q3_K = 32 + 64 + 12 + 2, q4_K = 4 + 12 + 128, q5_K = 4 + 12 + 32 + 128,
  // q6_K = 128 + 64 + 16 + 2, iq4_nl = 2 + 16, iq4_xs = 2 + 2 + 4 + 128.
  const Row rows[] = {{0, 1, 4, "F32"},
                      {1, 1, 2, "F16"},
                      {2, 32, 2 + 16, "Q4_0"},
                      {3, 32, 4 + 16, "Q4_1"},
                      {6, 32, 2 + 4 + 16, "Q5_0"},
                      {7, 32, 4 + 4 + 16, "Q5_1"},
                      {8, 32, 2 + 32, "Q8_0"},
                      {10, 256, 16 + 64 + 4, "Q2_K"},
                      {11, 256, 32 + 64 + 12 + 2, "Q3_K"},
                      {12, 256, 4 + 12 + 128, "Q4_K"},
                      {13, 256, 4 + 12 + 32 + 128, "Q5_K"},
                      {14, 256, 128 + 64 + 16 + 2, "Q6_K"},
                      {20, 32, 2 + 16, "IQ4_NL"},
                      {23, 256, 2 + 2 + 4 + 128, "IQ4_XS"},
                      {30, 1, 2, "BF16"}};
  for (const Row& row : rows) {
    const auto type = wb::LookupTensorType(row.id);
    REQUIRE(type.ok());
    INFO("type ", row.name);
    CHECK(static_cast<uint32_t>(*type) == row.id);
    CHECK(wb::BlockElements(*type) == row.elements);
    CHECK(wb::BlockBytes(*type) == row.bytes);
    CHECK(wb::TensorTypeName(*type) == row.name);
    CHECK(wb::GgmlTypeName(row.id) == row.name);
    CHECK(wb::IsQuantized(*type) == (row.elements > 1));
  }
  // kAllTensorTypes lists exactly these, in id order.
  REQUIRE(std::size(wb::kAllTensorTypes) == std::size(rows));
  for (size_t k = 0; k < std::size(rows); ++k) CHECK(static_cast<uint32_t>(wb::kAllTensorTypes[k]) == rows[k].id);
}

TEST_CASE("unknown and unsupported type ids are rejected with their ggml name") {
  const std::string reads =
      " is not supported; the workbook reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, "
      "Q6_K, IQ4_NL and IQ4_XS";
  CHECK(wb::LookupTensorType(16).error().message == "type 16 (IQ2_XXS)" + reads);
  CHECK(wb::LookupTensorType(4).error().message == "type 4" + reads);
  // Every ggml type the workbook does not read, by its ggml name (`ggml_type`, include/ggml.h).
  const std::pair<uint32_t, const char*> unsupported[] = {
      {9, "Q8_1"},   {15, "Q8_K"},  {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"},
      {21, "IQ3_S"}, {22, "IQ2_S"}, {24, "I8"},      {25, "I16"},    {26, "I32"},     {27, "I64"},
      {28, "F64"},   {29, "IQ1_M"}, {34, "TQ1_0"},   {35, "TQ2_0"},  {39, "MXFP4"},   {40, "NVFP4"},
      {41, "Q1_0"},  {42, "Q2_0"}};
  for (const auto& [id, name] : unsupported) {
    INFO("type id ", id);
    CHECK(wb::LookupTensorType(id).error().message == "type " + std::to_string(id) + " (" + name + ")" + reads);
  }
  CHECK(wb::LookupTensorType(1000).error().message.rfind("type 1000 is not supported", 0) == 0);
  CHECK(wb::GgmlTypeName(28) == "F64");
  CHECK(wb::GgmlTypeName(31) == "");
}

TEST_CASE("RowBytes counts whole blocks and refuses partial blocks and overflow") {
  CHECK(*wb::RowBytes(TensorType::kF32, 7) == 28);
  CHECK(*wb::RowBytes(TensorType::kQ8_0, 64) == 68);
  CHECK(*wb::RowBytes(TensorType::kQ4_K, 512) == 288);
  CHECK(*wb::RowBytes(TensorType::kQ6_K, 0) == 0);
  CHECK(*wb::RowBytes(TensorType::kQ5_0, 96) == 66);
  CHECK(*wb::RowBytes(TensorType::kQ3_K, 512) == 220);
  CHECK(*wb::RowBytes(TensorType::kIQ4_XS, 256) == 136);
  CHECK(wb::RowBytes(TensorType::kIQ4_XS, 32).error().message ==
        "32 elements of type IQ4_XS are not a whole number of blocks of 256");
  CHECK(wb::RowBytes(TensorType::kQ4_0, 33).error().message ==
        "33 elements of type Q4_0 are not a whole number of blocks of 32");
  CHECK(wb::RowBytes(TensorType::kF32, uint64_t{1} << 62).error().message ==
        "4611686018427387904 elements of type F32 need more than 2^64 bytes");
  CHECK(*wb::RowBytes(TensorType::kF32, (uint64_t{1} << 62) - 1) == 0 - uint64_t{4});  // 2^64 - 4
}

TEST_CASE("HalfToFloat is exact for all 65536 bit patterns") {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = wb::HalfToFloat(h);
    INFO("half bits ", bits);
    REQUIRE(SameFloat(f, HalfValue(h)));
    if (std::isnan(f)) {  // the payload and sign survive widening
      CHECK(((std::bit_cast<uint32_t>(f) >> 13) & 0x3FF) == (bits & 0x3FF));
      CHECK((std::bit_cast<uint32_t>(f) >> 31) == (bits >> 15));
    }
  }
}

TEST_CASE("FloatToHalf inverts HalfToFloat for every non-NaN half and keeps NaNs NaN") {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const uint16_t back = wb::FloatToHalf(wb::HalfToFloat(h));
    INFO("half bits ", bits);
    if (std::isnan(HalfValue(h))) {
      REQUIRE(std::isnan(HalfValue(back)));
      CHECK((back & 0x8000) == (h & 0x8000));
    } else {
      REQUIRE(back == h);
    }
  }
}

TEST_CASE("FloatToHalf rounds ties to even at every pair of neighbouring halves") {
  // Between the positive finite halves h and h+1 the midpoint is exactly a float (12 bits).
  for (uint16_t h = 0; h < 0x7BFF; ++h) {
    const double low = HalfValue(h), high = HalfValue(static_cast<uint16_t>(h + 1));
    const auto mid = static_cast<float>((low + high) / 2);
    REQUIRE(static_cast<double>(mid) == (low + high) / 2);
    const uint16_t even = (h % 2 == 0) ? h : static_cast<uint16_t>(h + 1);
    INFO("between half bits ", h, " and ", h + 1);
    REQUIRE(wb::FloatToHalf(mid) == even);
    REQUIRE(wb::FloatToHalf(-mid) == (even | 0x8000));
    REQUIRE(wb::FloatToHalf(std::nextafter(mid, 0.0f)) == h);
    REQUIRE(wb::FloatToHalf(std::nextafter(mid, 1e9f)) == h + 1);
  }
}

TEST_CASE("FloatToHalf at the edges: overflow, underflow, infinities") {
  CHECK(wb::FloatToHalf(65504.0f) == 0x7BFF);          // the largest half
  CHECK(wb::FloatToHalf(65519.996f) == 0x7BFF);        // just under the midpoint to 65536
  CHECK(wb::FloatToHalf(65520.0f) == 0x7C00);          // the tie goes to the even pattern: inf
  CHECK(wb::FloatToHalf(1e10f) == 0x7C00);
  CHECK(wb::FloatToHalf(-1e10f) == 0xFC00);
  CHECK(wb::FloatToHalf(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(wb::FloatToHalf(std::ldexp(1.0f, -25)) == 0x0000);                         // tie with 0: even
  CHECK(wb::FloatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);  // above: 2^-24
  CHECK(wb::FloatToHalf(std::ldexp(1.0f, -26)) == 0x0000);
  CHECK(wb::FloatToHalf(-std::ldexp(1.0f, -30)) == 0x8000);  // negative zero
  CHECK(wb::FloatToHalf(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(wb::FloatToHalf(std::ldexp(1.0f, -14)) == 0x0400);  // the smallest normal
  CHECK(wb::FloatToHalf(std::ldexp(1023.5f, -24)) == 0x0400);  // subnormal rounding up into it
}

TEST_CASE("FloatToHalf matches round-to-nearest-even by search on a million floats") {
  const auto largestFinite = static_cast<uint16_t>(0x7BFF);
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (!std::isfinite(f)) continue;
    INFO("float bits ", bits);
    REQUIRE(wb::FloatToHalf(f) == NearestEven(f, HalfValue, largestFinite));
  }
}

TEST_CASE("Bf16ToFloat is exact for all 65536 bit patterns and FloatToBf16 inverts it") {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const float f = wb::Bf16ToFloat(b);
    INFO("bf16 bits ", bits);
    REQUIRE(SameFloat(f, Bf16Value(b)));
    const uint16_t back = wb::FloatToBf16(f);
    if (std::isnan(f)) {
      REQUIRE(std::isnan(Bf16Value(back)));
    } else {
      REQUIRE(back == b);
    }
  }
}

TEST_CASE("FloatToBf16 rounds ties to even and matches the search on a million floats") {
  // 1 + 2^-8 lies exactly between bf16 1.0 (0x3F80, even) and 1 + 2^-7 (0x3F81).
  CHECK(wb::FloatToBf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  // 1 + 3 * 2^-8 lies between 0x3F81 (odd) and 0x3F82: up to the even one.
  CHECK(wb::FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);
  CHECK(wb::FloatToBf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds up to infinity
  CHECK(wb::FloatToBf16(-std::numeric_limits<float>::infinity()) == 0xFF80);
  CHECK(std::isnan(wb::Bf16ToFloat(wb::FloatToBf16(std::bit_cast<float>(0x7F800001u)))));  // a NaN stays NaN
  const auto largestFinite = static_cast<uint16_t>(0x7F7F);
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (!std::isfinite(f)) continue;
    INFO("float bits ", bits);
    REQUIRE(wb::FloatToBf16(f) == NearestEven(f, Bf16Value, largestFinite));
  }
}

}  // namespace test_tensor_types
