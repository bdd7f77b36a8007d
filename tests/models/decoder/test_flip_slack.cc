// GatedFfnFlipSlack (reference/decoder/streamed_ops.h): a hidden value that sits half-way
// between two Q8_0 codes gives every output of the down product the room of one code step
// times its weight, a hidden value well inside a code gives none, and a product whose inputs
// are not quantized (or whose down matrix is f32) has nothing that can flip.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "model/files/tensor_types.h"
#include "reference/decoder/streamed_ops.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_flip_slack {

using wb::model::Activation;
using wb::model::WeightMatrix;

constexpr int kWidth = 32;  // the model's width and the hidden width: one Q8_0 block

// A rows x kWidth matrix of `type` over `bytes` (kept alive by the caller).
WeightMatrix Matrix(wb::TensorType type, int rows, const std::vector<std::byte>& bytes) {
  WeightMatrix m;
  m.name = "test";
  m.tensor.name = "test";
  m.tensor.type = type;
  m.tensor.shape = {static_cast<uint64_t>(rows), kWidth};
  m.tensor.data = bytes;
  m.rows = static_cast<uint64_t>(rows);
  m.cols = kWidth;
  return m;
}

std::vector<std::byte> F32Bytes(const std::vector<float>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// The identity, so that gate . x = up . x = x and hidden_j = silu(x_j) x_j.
std::vector<float> Identity() {
  std::vector<float> m(kWidth * kWidth, 0.0f);
  for (int i = 0; i < kWidth; ++i) m[i * kWidth + i] = 1.0f;
  return m;
}

double SiluTimesItself(double x) { return x / (1.0 + std::exp(-x)) * x; }

// The x > 0 whose silu(x) x is `target` (increasing there), by bisection.
double InputFor(double target) {
  double low = 0.0, high = 64.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = (low + high) / 2;
    (SiluTimesItself(mid) < target ? low : high) = mid;
  }
  return (low + high) / 2;
}

struct Ffn {
  std::vector<std::byte> gateBytes = F32Bytes(Identity());
  std::vector<std::byte> downBytes;
  std::vector<float> down;  // 2 x kWidth, as the Q8_0 rows dequantize
  WeightMatrix gate, up, downMatrix;

  explicit Ffn(wb::TensorType downType) {
    std::vector<float> values(2 * kWidth);
    for (int i = 0; i < 2 * kWidth; ++i) values[i] = static_cast<float>((i % 7) - 3) * 0.25f + 0.125f;
    if (downType == wb::TensorType::kQ8_0) {
      downBytes.resize(*wb::RowBytes(downType, values.size()));
      REQUIRE(wb::QuantizeRowQ8_0(values, downBytes).ok());
      down.resize(values.size());
      REQUIRE(wb::DequantizeRow(downType, downBytes, down).ok());
    } else {
      downBytes = F32Bytes(values);
      down = values;
    }
    gate = Matrix(wb::TensorType::kF32, kWidth, gateBytes);
    up = gate;
    downMatrix = Matrix(downType, 2, downBytes);
  }
};

// One row of x: hidden value 0 is the block's largest, 4.0 (so a code step is 4 / 127), and
// hidden value 5 is `codes` steps of it.
std::vector<double> Row(double codes) {
  std::vector<double> x(kWidth, 0.0);
  const double largest = 4.0;
  x[0] = InputFor(largest);
  x[5] = InputFor(largest / 127.0 * codes);
  return x;
}

TEST_CASE("a hidden value half-way between two codes gives each output a code step times its weight") {
  const Ffn ffn(wb::TensorType::kQ8_0);
  auto slack = ref::GatedFfnFlipSlack(Row(40.5), 1, ffn.gate, ffn.up, ffn.downMatrix, Activation::kSilu,
                                      ref::ProductInputs::kQ8_0ForBlockMatrices);
  REQUIRE(slack.ok());
  REQUIRE(slack->size() == 2);
  const double step = 4.0 / 127.0;
  for (int o = 0; o < 2; ++o) {
    const double weight = std::fabs(ffn.down[o * kWidth + 5]);
    CHECK((*slack)[o] >= step * weight * 0.999);
    CHECK((*slack)[o] <= step * weight * 1.002);
  }
}

TEST_CASE("a hidden value well inside its code gives no slack") {
  const Ffn ffn(wb::TensorType::kQ8_0);
  auto slack = ref::GatedFfnFlipSlack(Row(40.2), 1, ffn.gate, ffn.up, ffn.downMatrix, Activation::kSilu,
                                      ref::ProductInputs::kQ8_0ForBlockMatrices);
  REQUIRE(slack.ok());
  REQUIRE(slack->size() == 2);
  CHECK((*slack)[0] == 0.0);
  CHECK((*slack)[1] == 0.0);
}

TEST_CASE("nothing can flip when the inputs are exact or the down matrix is f32") {
  const Ffn quantized(wb::TensorType::kQ8_0);
  auto exact = ref::GatedFfnFlipSlack(Row(40.5), 1, quantized.gate, quantized.up, quantized.downMatrix,
                                      Activation::kSilu, ref::ProductInputs::kExact);
  REQUIRE(exact.ok());
  CHECK(exact->empty());
  const Ffn f32(wb::TensorType::kF32);
  auto plain = ref::GatedFfnFlipSlack(Row(40.5), 1, f32.gate, f32.up, f32.downMatrix, Activation::kSilu,
                                      ref::ProductInputs::kQ8_0ForBlockMatrices);
  REQUIRE(plain.ok());
  CHECK(plain->empty());
}

}  // namespace test_flip_slack
