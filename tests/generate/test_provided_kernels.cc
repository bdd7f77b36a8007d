// Stage 5's provided gated product (runner/stages/05-decoder/child/weight_kernels.cc) on shapes
// that make it split its work: more input rows than one pass takes, and more outputs than one
// piece holds for them. Every element must be what the two plain products give, row by row:
// act(x · gate^T) ⊙ (x · up^T), with the same stage-4 kernel behind both. And the product of
// one input by several matrices in one call must equal one call a matrix, bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "model/files/tensor_types.h"
#include "runner/stages/05-decoder/child/kernel_bridges.h"
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

// y (inputRows x m.rows) = x · m^T the plainest way: for a stage-4 type, each input row quantized
// and multiplied by the whole matrix by stage 4's two kernels, on one thread, with none of
// the provided kernels' passes, pieces or shares of rows; any other type, weight_matmul on
// `threads` threads (the float kernel's sums depend on how it splits them).
void PlainProduct(const QuantizedMatrix& m, int inputRows, const float* x, float* y, int threads) {
  const WeightMatrix& W = m.view;
  if (W.tensor.type != TensorType::kQ8_0 && W.tensor.type != TensorType::kQ4_0) {
    weight_matmul(W, inputRows, x, y, Accumulate::kOverwrite, threads);
    return;
  }
  std::vector<std::byte> quantized(W.cols / wb::stage05::kQuantBlock * wb::stage05::kQ8BlockBytes);
  const auto type = W.tensor.type == TensorType::kQ8_0 ? wb::stage05::QuantType::kQ8_0 : wb::stage05::QuantType::kQ4_0;
  for (int r = 0; r < inputRows; ++r) {
    wb::stage05::QuantizeQ8_0(static_cast<int>(W.cols), x + static_cast<size_t>(r) * W.cols, quantized.data());
    wb::stage05::QuantMatmul(1, quantized.data(), type, W.tensor.data.data(), static_cast<int>(W.rows),
                             static_cast<int>(W.cols), y + static_cast<size_t>(r) * W.rows, Accumulate::kOverwrite, 1);
  }
}

// rows x width random inputs in [-1, 1).
std::vector<float> RandomInput(int rows, uint64_t width, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows) * width);
  for (float& v : x) v = value(random);
  return x;
}

// An output buffer with kGuard untouched values on both sides: a write outside it shows.
constexpr size_t kGuard = 64;
constexpr float kUntouched = -12345.0f;
std::vector<float> GuardedOutput(size_t values) { return std::vector<float>(values + 2 * kGuard, kUntouched); }
void RequireGuardsUntouched(const std::vector<float>& out) {
  for (size_t i = 0; i < kGuard; ++i) {
    REQUIRE(out[i] == kUntouched);
    REQUIRE(out[out.size() - 1 - i] == kUntouched);
  }
}

void CheckGatedAgainstPlain(TensorType type, int inputRows, uint64_t outputs, uint64_t width, int threads) {
  const QuantizedMatrix gate = MakeMatrix(type, outputs, width, 1);
  const QuantizedMatrix up = MakeMatrix(type, outputs, width, 2);
  const std::vector<float> x = RandomInput(inputRows, width, 3);
  std::vector<float> gated = GuardedOutput(static_cast<size_t>(inputRows) * outputs);
  weight_matmul_gated(gate.view, up.view, wb::model::Activation::kSilu, inputRows, x.data(), gated.data() + kGuard,
                      threads);
  std::vector<float> g(static_cast<size_t>(inputRows) * outputs);
  std::vector<float> u(static_cast<size_t>(inputRows) * outputs);
  PlainProduct(gate, inputRows, x.data(), g.data(), threads);
  PlainProduct(up, inputRows, x.data(), u.data(), threads);

  RequireGuardsUntouched(gated);
  size_t wrong = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const float expected = Silu(g[i]) * u[i];
    if (std::fabs(gated[kGuard + i] - expected) > 1e-5f * (1.0f + std::fabs(expected))) ++wrong;
  }
  CHECK(wrong == 0);
}

// Products of one input by several matrices in one call, against PlainProduct of each: the
// same kernels on the same quantized input, so every value must be equal, bit for bit, however
// the call shares the matrices' rows among its threads. So must weight_matmul's, alone.
void CheckSameInputAgainstPlain(const std::vector<const QuantizedMatrix*>& matrices, int inputRows, int threads) {
  const std::vector<float> x = RandomInput(inputRows, matrices.front()->view.cols, 4);
  std::vector<std::vector<float>> together;
  std::vector<WeightProduct> products;
  for (const QuantizedMatrix* m : matrices) {
    together.push_back(GuardedOutput(static_cast<size_t>(inputRows) * m->view.rows));
  }
  for (size_t i = 0; i < matrices.size(); ++i) products.push_back({&matrices[i]->view, together[i].data() + kGuard});
  weight_matmul_same_input(products, inputRows, x.data(), threads);

  for (size_t i = 0; i < matrices.size(); ++i) {
    const std::vector<float>& got = together[i];
    RequireGuardsUntouched(got);
    std::vector<float> plain(static_cast<size_t>(inputRows) * matrices[i]->view.rows);
    PlainProduct(*matrices[i], inputRows, x.data(), plain.data(), threads);
    std::vector<float> alone(plain.size());
    weight_matmul(matrices[i]->view, inputRows, x.data(), alone.data(), Accumulate::kOverwrite, threads);
    size_t different = 0;
    size_t differentAlone = 0;
    for (size_t k = 0; k < plain.size(); ++k) {
      different += got[kGuard + k] != plain[k];
      differentAlone += alone[k] != plain[k];
    }
    INFO("product " << i << " of " << matrices.size() << ", " << threads << " threads");
    CHECK(different == 0);
    CHECK(differentAlone == 0);
  }
}

}  // namespace

TEST_CASE("one input by three matrices: the products as three calls give them") {
  // Row counts that are not multiples of 16 (a thread's share of the rows ends inside a
  // matrix, or takes in parts of two), and three blocks a row (the last Q4_0 quad is partial).
  const QuantizedMatrix q = MakeMatrix(TensorType::kQ4_0, 40, 96, 5);
  const QuantizedMatrix k = MakeMatrix(TensorType::kQ8_0, 24, 96, 6);
  const QuantizedMatrix v = MakeMatrix(TensorType::kQ4_0, 8, 96, 7);
  for (int threads = 1; threads <= 3; ++threads) {
    CheckSameInputAgainstPlain({&q, &k, &v}, 1, threads);   // a decode step: one region
    CheckSameInputAgainstPlain({&q, &k, &v}, 45, threads);  // a prompt: a call per matrix
  }
  CheckSameInputAgainstPlain({&k}, 1, 2);
  // One block a row: a pass of quantized input holds 2891 rows, so 3000 take two passes.
  const QuantizedMatrix narrowQ = MakeMatrix(TensorType::kQ4_0, 24, 32, 10);
  const QuantizedMatrix narrowK = MakeMatrix(TensorType::kQ8_0, 8, 32, 11);
  CheckSameInputAgainstPlain({&narrowQ, &narrowK}, 3000, 2);
}

TEST_CASE("one input by matrices the stage-4 kernels do not take: a product at a time") {
  const QuantizedMatrix q = MakeMatrix(TensorType::kQ8_0, 40, 64, 8);
  QuantizedMatrix f = MakeMatrix(TensorType::kQ8_0, 16, 64, 9);
  // The same matrix's values as F32: the call must send it to the float kernel.
  std::vector<float> values(16 * 64);
  REQUIRE(wb::DequantizeRow(TensorType::kQ8_0, f.view.tensor.data, std::span<float>(values)).ok());
  f.bytes.resize(values.size() * sizeof(float));
  std::memcpy(f.bytes.data(), values.data(), f.bytes.size());
  f.view.tensor.type = TensorType::kF32;
  f.view.tensor.data = std::span<const std::byte>(f.bytes);
  for (int threads = 1; threads <= 2; ++threads) CheckSameInputAgainstPlain({&q, &f}, 1, threads);
}

TEST_CASE("a decode step on three threads, and outputs in two pieces a thread") {
  CheckGatedAgainstPlain(TensorType::kQ4_0, 1, 700, 96, 3);
  CheckGatedAgainstPlain(TensorType::kQ8_0, 1, 8192 + 100, 32, 1);
}

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
