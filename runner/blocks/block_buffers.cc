#include "block_buffers.h"

#include <cmath>

#include "reference/block/ops.h"
#include "runner/compare/compare.h"

namespace wb {

std::vector<float> ColumnSlice(std::span<const float> rows, int T, int rowWidth, int first, int width) {
  std::vector<float> slice;
  slice.reserve(static_cast<size_t>(T) * width);
  for (int t = 0; t < T; ++t) {
    const auto row = rows.subspan(static_cast<size_t>(t) * rowWidth + first, width);
    slice.insert(slice.end(), row.begin(), row.end());
  }
  return slice;
}

std::vector<float> DeriveFfnOut(std::span<const float> output, std::span<const float> residual1) {
  std::vector<float> ffn(output.size());
  for (size_t i = 0; i < ffn.size(); ++i) {
    if (StateOf(output[i]) != ElementState::kWritten || std::isnan(output[i])) {
      ffn[i] = output[i];
    } else if (StateOf(residual1[i]) != ElementState::kWritten || std::isnan(residual1[i])) {
      ffn[i] = residual1[i];
    } else {
      ffn[i] = output[i] - residual1[i];
    }
  }
  return ffn;
}

std::vector<double> GatedHidden(std::span<const double> x, int T, const ref::BlockShape& shape,
                                const ref::BlockWeights& w, ref::GatedBranch branch) {
  const size_t elements = static_cast<size_t>(T) * shape.ffn;
  std::vector<double> gate(elements), up(elements), hidden(elements);
  ref::Project(x, T, shape.model, w.gate, shape.ffn, gate);
  ref::Project(x, T, shape.model, w.up, shape.ffn, up);
  ref::GatedProduct(gate, up, ref::Activation::kSilu, branch, hidden);
  return hidden;
}

std::vector<double> DownProjection(std::span<const double> hidden, int T, const ref::BlockShape& shape,
                                   const ref::BlockWeights& w) {
  std::vector<double> out(static_cast<size_t>(T) * shape.model);
  ref::Project(hidden, T, shape.ffn, w.down, shape.model, out);
  return out;
}

}  // namespace wb
