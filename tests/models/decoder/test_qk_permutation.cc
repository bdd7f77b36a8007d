// The llama-family q/k row permutation: its index form, its round trip, why interleaved
// RoPE on permuted rows equals half RoPE on HF rows, and the fixture GGUF's rows.
#include <doctest/doctest.h>

#include <vector>

#include "decoder_test_support.h"
#include "reference/block/ops.h"
#include "model/config/qk_permutation.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_qk_permutation {

using wb::model::PermuteRowsToGguf;
using wb::model::PermuteRowsToHf;

namespace {

// W.reshape(n, 2, rows/n/2, cols).swapaxes(1, 2).reshape(rows, cols), spelled out with the
// strides of the two row-major views (llama.cpp's conversion/llama.py LlamaModel.permute).
std::vector<float> ReshapeSwapaxes(const std::vector<float>& w, int rows, int cols, int n) {
  const int half = rows / n / 2;
  std::vector<float> out(w.size());
  for (int h = 0; h < n; ++h) {
    for (int a = 0; a < half; ++a) {    // axis 1 of the result (axis 2 of the source)
      for (int b = 0; b < 2; ++b) {     // axis 2 of the result (axis 1 of the source)
        const int source = (h * 2 + b) * half + a;
        const int target = (h * half + a) * 2 + b;
        for (int c = 0; c < cols; ++c) out[target * cols + c] = w[source * cols + c];
      }
    }
  }
  return out;
}

std::vector<float> Ramp(int count) {
  std::vector<float> v(count);
  for (int i = 0; i < count; ++i) v[i] = static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("the permutation is the converter's reshape-swapaxes, for q heads and kv heads") {
  for (int heads : {1, 2, 4}) {
    const std::vector<float> w = Ramp(32 * 3);  // 32 rows of 3
    CHECK_MESSAGE(PermuteRowsToGguf(w, 32, 3, heads) == ReshapeSwapaxes(w, 32, 3, heads), "heads ", heads);
  }
  // Row by row: GGUF row h·hd + 2i + j = HF row h·hd + j·hd/2 + i (hd = 8, h = 1, i = 3, j = 1).
  CHECK(wb::model::GgufRowOfHfRow(8 + 4 + 3, 32, 4) == 8 + 6 + 1);
  CHECK(wb::model::HfRowOfGgufRow(8 + 6 + 1, 32, 4) == 8 + 4 + 3);
}

TEST_CASE("round trip: to GGUF and back is the identity, for matrices and bias vectors") {
  const std::vector<float> q = Ramp(32 * 5);
  CHECK(PermuteRowsToHf(PermuteRowsToGguf(q, 32, 5, 4), 32, 5, 4) == q);
  CHECK(PermuteRowsToGguf(PermuteRowsToHf(q, 32, 5, 2), 32, 5, 2) == q);
  const std::vector<float> bias = Ramp(16);
  const std::vector<float> permuted = PermuteRowsToGguf(bias, 16, 1, 2);
  CHECK(permuted != bias);
  CHECK(PermuteRowsToHf(permuted, 16, 1, 2) == bias);
}

TEST_CASE("interleaved RoPE on permuted rows = the permutation of half RoPE on HF rows") {
  const int heads = 2, hd = 8, rows = 3;
  std::vector<double> hf(rows * heads * hd);
  for (size_t i = 0; i < hf.size(); ++i) hf[i] = 0.1 * static_cast<double>(i % 7) - 0.3;
  // One projection output row per position: permute the columns of each row (they are the
  // projection's rows) as the converter permuted the weight rows.
  std::vector<double> gguf(hf.size());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < heads * hd; ++c) {
      gguf[r * heads * hd + wb::model::GgufRowOfHfRow(c, heads * hd, heads)] = hf[r * heads * hd + c];
    }
  }
  const auto table = ref::MakeRopeTable(5, rows, ref::DefaultInverseFrequencies(hd, 100.0));
  ref::ApplyRope(hf, rows, heads, hd, table.cos, table.sin, ref::RopePairing::kHalfSplit, ref::RopeDirection::kForward);
  ref::ApplyRope(gguf, rows, heads, hd, table.cos, table.sin, ref::RopePairing::kAdjacent, ref::RopeDirection::kForward);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < heads * hd; ++c) {
      CHECK(gguf[r * heads * hd + wb::model::GgufRowOfHfRow(c, heads * hd, heads)] == hf[r * heads * hd + c]);
    }
  }
}

TEST_CASE("the llama fixture's GGUF holds permuted q/k rows and unpermuted v rows") {
  auto hf = wb::model::WeightSource::Open((wbtest::FixtureDir("llama") / "hf").string());
  auto gguf = wb::model::WeightSource::Open((wbtest::FixtureDir("llama") / "model.gguf").string());
  REQUIRE_MESSAGE(hf.ok(), hf.error().message);
  REQUIRE_MESSAGE(gguf.ok(), gguf.error().message);
  struct Case {
    const char* name;
    uint64_t rows;
    uint64_t heads;  // 0: not permuted
  };
  for (const Case& c : {Case{"blk.0.attn_q.weight", 32, 4}, Case{"blk.1.attn_k.weight", 16, 2},
                        Case{"blk.1.attn_v.weight", 16, 0}}) {
    auto a = hf->Matrix(c.name, c.rows, 32);
    auto b = gguf->Matrix(c.name, c.rows, 32);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    std::vector<float> hfRows(c.rows * 32), ggufRows(c.rows * 32);
    REQUIRE(a->ReadRows(0, c.rows, hfRows).ok());
    REQUIRE(b->ReadRows(0, c.rows, ggufRows).ok());
    const std::vector<float> expected = c.heads == 0 ? hfRows : ReshapeSwapaxes(hfRows, c.rows, 32, c.heads);
    CHECK_MESSAGE(ggufRows == expected, c.name);
    CHECK_MESSAGE((c.heads == 0) == (ggufRows == hfRows), c.name);
  }
}

}  // namespace test_qk_permutation
