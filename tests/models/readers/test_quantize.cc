// The reference quantizers: hand-picked blocks whose codes follow from ggml's rules
// (quantize_row_q8_0_ref / quantize_row_q4_0_ref), round trips within half a step, and
// argument checks.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "model/files/tensor_types.h"
#include "tests/models/readers/model_file_builders.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_quantize {

using wb::TensorType;
using wb::test::Bytes;

namespace {

uint16_t ScaleBits(const Bytes& bytes, size_t blockStart) {
  return static_cast<uint16_t>(static_cast<uint8_t>(bytes[blockStart]) |
                               (static_cast<uint8_t>(bytes[blockStart + 1]) << 8));
}

Bytes Quantize(TensorType type, const std::vector<float>& x) {
  Bytes out(*wb::RowBytes(type, x.size()));
  const wb::Status status =
      type == TensorType::kQ8_0 ? wb::QuantizeRowQ8_0(x, out) : wb::QuantizeRowQ4_0(x, out);
  REQUIRE(status.ok());
  return out;
}

}  // namespace

TEST_CASE("Q8_0: d = max|x| / 127, codes round half away from zero") {
  std::vector<float> x(32, 0.0f);
  x[0] = -127.0f;  // max |x| = 127, so d = 1 and the codes are round(x)
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.49f;
  x[4] = 126.5f;
  x[5] = -0.5f;
  const Bytes q = Quantize(TensorType::kQ8_0, x);
  CHECK(ScaleBits(q, 0) == 0x3C00);  // 1.0
  const auto code = [&](int j) { return static_cast<int8_t>(q[2 + j]); };
  CHECK(code(0) == -127);
  CHECK(code(1) == 3);
  CHECK(code(2) == -3);
  CHECK(code(3) == 0);
  CHECK(code(4) == 127);
  CHECK(code(5) == -1);
  CHECK(code(6) == 0);
}

TEST_CASE("Q8_0: the scale is stored as half, the codes use the unrounded f32 scale") {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16) / 3.0f;
  const Bytes q = Quantize(TensorType::kQ8_0, x);
  const float d = (16.0f / 3.0f) / 127.0f;
  CHECK(ScaleBits(q, 0) == wb::FloatToHalf(d));
  const float inverse = 1.0f / d;
  for (int j = 0; j < 32; ++j) CHECK(static_cast<int8_t>(q[2 + j]) == static_cast<int>(std::round(x[j] * inverse)));
}

TEST_CASE("Q4_0: d = (value of largest magnitude) / -8, codes min(15, trunc(x/d + 8.5))") {
  std::vector<float> x(32, 0.0f);
  x[3] = -8.0f;  // the extreme: d = 1, id = 1, so the code is min(15, trunc(x + 8.5))
  x[0] = 7.0f;   // 15.5 -> 15
  x[1] = 7.9f;   // 16.4 -> clamped to 15
  x[2] = 0.49f;  // 8.99 -> 8
  x[4] = 0.5f;   // 9.0 -> 9
  x[16] = -7.6f;  // 0.9 -> 0 (element 16 is the high nibble of byte 0)
  x[17] = -3.2f;  // 5.3 -> 5
  const Bytes q = Quantize(TensorType::kQ4_0, x);
  CHECK(ScaleBits(q, 0) == 0x3C00);
  const auto code = [&](int j) {
    const auto byte = static_cast<uint8_t>(q[2 + j % 16]);
    return j < 16 ? byte & 15 : byte >> 4;
  };
  CHECK(code(0) == 15);
  CHECK(code(1) == 15);
  CHECK(code(2) == 8);
  CHECK(code(3) == 0);
  CHECK(code(4) == 9);
  CHECK(code(5) == 8);  // zero maps to 8
  CHECK(code(16) == 0);
  CHECK(code(17) == 5);
}

TEST_CASE("Q4_0: the first value of largest magnitude sets the sign of d") {
  std::vector<float> x(32, 0.0f);
  x[5] = 4.0f;
  x[9] = -4.0f;  // same magnitude, later: ignored
  Bytes q = Quantize(TensorType::kQ4_0, x);
  CHECK(ScaleBits(q, 0) == wb::FloatToHalf(-0.5f));
  x[5] = -4.0f;
  x[9] = 4.0f;
  q = Quantize(TensorType::kQ4_0, x);
  CHECK(ScaleBits(q, 0) == wb::FloatToHalf(0.5f));
}

TEST_CASE("quantize then dequantize stays within one step of the input") {
  std::vector<float> x(256);
  uint32_t state = 12345;
  for (float& v : x) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(state >> 8) - (1 << 23)) / static_cast<float>(1 << 20);
  }
  for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0}) {
    const Bytes q = Quantize(type, x);
    std::vector<float> y(x.size());
    REQUIRE(wb::DequantizeRow(type, wb::test::View(q), y).ok());
    for (size_t b = 0; b < x.size() / 32; ++b) {
      const float d = std::fabs(wb::HalfToFloat(ScaleBits(q, b * wb::BlockBytes(type))));
      // Q8_0 rounds to the nearest step (half a step), plus up to 127 codes times the error of
      // storing d as half (2^-11 d); Q4_0 also clamps the far end at code 15, one step short.
      const float bound = type == TensorType::kQ8_0 ? 0.6f * d + 1e-3f : 1.01f * d + 1e-3f;
      for (size_t j = 0; j < 32; ++j) {
        INFO(wb::TensorTypeName(type), " element ", b * 32 + j);
        CHECK(std::fabs(y[b * 32 + j] - x[b * 32 + j]) <= bound);
      }
    }
  }
}

TEST_CASE("an all-zero block quantizes to d = 0 and zero values") {
  const std::vector<float> zeros(32, 0.0f);
  for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0}) {
    const Bytes q = Quantize(type, zeros);
    // Q8_0: 0 / 127 = +0. Q4_0: 0 / -8 = -0, stored as half 0x8000, as ggml stores it.
    CHECK(ScaleBits(q, 0) == (type == TensorType::kQ8_0 ? 0x0000 : 0x8000));
    std::vector<float> y(32, 1.0f);
    REQUIRE(wb::DequantizeRow(type, wb::test::View(q), y).ok());
    for (float v : y) CHECK(v == 0.0f);
  }
}

TEST_CASE("a block so small its inverse scale overflows still gives defined codes") {
  std::vector<float> x(32, 0.0f);
  x[0] = std::ldexp(1.0f, -130);  // d = x/127 or x/8 is nonzero, 1/d overflows to infinity
  x[1] = -x[0];
  const Bytes q8 = Quantize(TensorType::kQ8_0, x);
  CHECK(static_cast<int8_t>(q8[2]) == 127);
  CHECK(static_cast<int8_t>(q8[3]) == -127);
  CHECK(static_cast<int8_t>(q8[4]) == 0);
  const Bytes q4 = Quantize(TensorType::kQ4_0, x);
  CHECK((static_cast<uint8_t>(q4[2]) & 15) == 0);   // the extreme
  CHECK((static_cast<uint8_t>(q4[3]) & 15) == 15);  // the opposite sign, clamped
  CHECK((static_cast<uint8_t>(q4[4]) & 15) == 8);   // zero
}

TEST_CASE("the quantizers check sizes and refuse non-finite input") {
  std::vector<float> x(32, 1.0f);
  Bytes small(33);
  CHECK(wb::QuantizeRowQ8_0(x, small).error().message == "quantizing 32 floats to Q8_0 needs 34 bytes, but 33 were given");
  Bytes q4(18);
  std::vector<float> odd(31, 1.0f);
  CHECK(wb::QuantizeRowQ4_0(odd, q4).error().message ==
        "31 elements of type Q4_0 are not a whole number of blocks of 32");
  x[7] = std::numeric_limits<float>::infinity();
  CHECK(wb::QuantizeRowQ4_0(x, q4).error().message == "quantizing to Q4_0: value 7 is inf");
}

}  // namespace test_quantize
