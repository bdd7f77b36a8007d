// Stage 5's provided gated product (runner/stages/05-decoder/child/weight_kernels.cc) on shapes
// that make it split its work: more input rows than one pass takes, and more outputs than one
// piece holds for them. Every element must be what the two plain products give, row by row:
// act(x · gate^T) ⊙ (x · up^T), with the same stage-4 kernel behind both.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "model/files/tensor_types.h"
#include "stage05_kernels.h"

namespace {

using wb::TensorType;
using wb::model::WeightMatrix;

// A rows x cols matrix of random weights, quantized by the model library's own writer rules.
struct QuantizedMatrix {
  std::vector<std::byte> bytes;
  WeightMatrix view;
};

QuantizedMatrix MakeMatrix(TensorType type, uint64_t rows, uint64_t cols, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const uint64_t rowBytes = *wb::RowBytes(type, cols);
  QuantizedMatrix m;
  m.bytes.resize(rows * rowBytes);
  std::vector<float> row(cols);
  for (uint64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = value(random);
    const std::span<std::byte> out(m.bytes.data() + r * rowBytes, rowBytes);
    REQUIRE((type == TensorType::kQ8_0 ? wb::QuantizeRowQ8_0(row, out) : wb::QuantizeRowQ4_0(row, out)).ok());
  }
  m.view.name = "test.weight";
  m.view.tensor.name = "test.weight";
  m.view.tensor.type = type;
  m.view.tensor.shape = {rows, cols};
  m.view.tensor.data = std::span<const std::byte>(m.bytes);
  m.view.rows = rows;
  m.view.cols = cols;
  return m;
}

float Silu(float g) { return g / (1.0f + std::exp(-g)); }

void CheckGatedAgainstPlain(TensorType type, int inputRows, uint64_t outputs, uint64_t width, int threads) {
  const QuantizedMatrix gate = MakeMatrix(type, outputs, width, 1);
  const QuantizedMatrix up = MakeMatrix(type, outputs, width, 2);
  std::mt19937 random(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(inputRows) * width);
  for (float& v : x) v = value(random);

  // Guards on both sides of the output catch a write outside it.
  constexpr size_t kGuard = 64;
  constexpr float kUntouched = -12345.0f;
  std::vector<float> gated(static_cast<size_t>(inputRows) * outputs + 2 * kGuard, kUntouched);
  weight_matmul_gated(gate.view, up.view, wb::model::Activation::kSilu, inputRows, x.data(), gated.data() + kGuard,
                      threads);
  std::vector<float> g(static_cast<size_t>(inputRows) * outputs);
  std::vector<float> u(static_cast<size_t>(inputRows) * outputs);
  weight_matmul(gate.view, inputRows, x.data(), g.data(), Accumulate::kOverwrite, threads);
  weight_matmul(up.view, inputRows, x.data(), u.data(), Accumulate::kOverwrite, threads);

  for (size_t i = 0; i < kGuard; ++i) {
    REQUIRE(gated[i] == kUntouched);
    REQUIRE(gated[gated.size() - 1 - i] == kUntouched);
  }
  size_t wrong = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const float expected = Silu(g[i]) * u[i];
    if (std::fabs(gated[kGuard + i] - expected) > 1e-5f * (1.0f + std::fabs(expected))) ++wrong;
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("a one-block-wide product over 1500 input rows: two passes, 16 outputs a piece") {
  CheckGatedAgainstPlain(TensorType::kQ8_0, 1500, 40, 32, 1);
  CheckGatedAgainstPlain(TensorType::kQ4_0, 1500, 40, 32, 2);
}

TEST_CASE("a decode step: one input row, every output in one piece") {
  CheckGatedAgainstPlain(TensorType::kQ4_0, 1, 700, 96, 1);
  CheckGatedAgainstPlain(TensorType::kQ8_0, 1, 700, 96, 2);
}

TEST_CASE("a prompt: rows in one pass, outputs in several pieces") {
  CheckGatedAgainstPlain(TensorType::kQ8_0, 45, 1000, 64, 2);
}
