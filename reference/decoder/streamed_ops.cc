#include "reference/decoder/streamed_ops.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "reference/block/ops.h"

namespace ref {

using wb::model::WeightMatrix;

wb::Status ProjectStreamed(std::span<const double> x, int rows, const WeightMatrix& matrix, std::span<double> out) {
  const int inWidth = static_cast<int>(matrix.cols);
  const int outWidth = static_cast<int>(matrix.rows);
  assert(x.size() == static_cast<size_t>(rows) * inWidth && out.size() == static_cast<size_t>(rows) * outWidth);
  std::vector<float> chunk;
  std::vector<double> partial;
  for (int first = 0; first < outWidth; first += kStreamRows) {
    const int count = std::min(kStreamRows, outWidth - first);
    chunk.resize(static_cast<size_t>(count) * inWidth);
    if (wb::Status s = matrix.ReadRows(first, count, chunk); !s.ok()) return s;
    partial.resize(static_cast<size_t>(rows) * count);
    Project(x, rows, inWidth, chunk, count, partial);
    for (int r = 0; r < rows; ++r) {
      std::copy_n(partial.begin() + static_cast<ptrdiff_t>(r) * count, count,
                  out.begin() + static_cast<ptrdiff_t>(r) * outWidth + first);
    }
  }
  return wb::Status::Ok();
}

wb::Status GatherRows(const WeightMatrix& matrix, std::span<const int> ids, std::span<double> out) {
  const size_t width = matrix.cols;
  assert(out.size() == ids.size() * width);
  std::vector<float> row(width);
  for (size_t r = 0; r < ids.size(); ++r) {
    if (wb::Status s = matrix.ReadRows(static_cast<uint64_t>(ids[r]), 1, row); !s.ok()) return s;
    std::copy(row.begin(), row.end(), out.begin() + static_cast<ptrdiff_t>(r * width));
  }
  return wb::Status::Ok();
}

wb::Status GatedFfnStreamed(std::span<const double> x, int rows, const WeightMatrix& gate, const WeightMatrix& up,
                            const WeightMatrix& down, Activation activation, std::span<double> out) {
  const size_t hiddenWidth = gate.rows;
  std::vector<double> gated(rows * hiddenWidth);
  std::vector<double> upRows(gated.size());
  if (wb::Status s = ProjectStreamed(x, rows, gate, gated); !s.ok()) return s;
  if (wb::Status s = ProjectStreamed(x, rows, up, upRows); !s.ok()) return s;
  GatedProduct(gated, upRows, activation, GatedBranch::kGate, gated);  // in place: act(gate) ⊙ up
  return ProjectStreamed(gated, rows, down, out);
}

void AddBias(std::span<double> x, int rows, std::span<const float> bias) {
  if (bias.empty()) return;
  assert(x.size() == static_cast<size_t>(rows) * bias.size());
  for (int r = 0; r < rows; ++r) {
    for (size_t c = 0; c < bias.size(); ++c) x[r * bias.size() + c] += bias[c];
  }
}

}  // namespace ref
