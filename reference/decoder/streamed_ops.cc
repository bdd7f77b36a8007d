#include "reference/decoder/streamed_ops.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "model/files/tensor_types.h"
#include "reference/block/ops.h"

namespace ref {

using wb::model::WeightMatrix;

namespace {

// x's rows as a Q8_0 product reads them: each rounded to float, quantized, read back.
wb::Expected<std::vector<double>> QuantizedInputs(std::span<const double> x, int rows, int width,
                                                  const WeightMatrix& matrix) {
  std::vector<double> out(x.size());
  std::vector<float> row(static_cast<size_t>(width));
  auto bytes = wb::RowBytes(wb::TensorType::kQ8_0, static_cast<uint64_t>(width));
  if (!bytes) return bytes.error();
  std::vector<std::byte> blocks(*bytes);
  for (int r = 0; r < rows; ++r) {
    const auto in = x.subspan(static_cast<size_t>(r) * width, width);
    std::transform(in.begin(), in.end(), row.begin(), [](double v) { return static_cast<float>(v); });
    if (wb::Status s = wb::QuantizeRowQ8_0(row, blocks); !s.ok()) {
      return wb::BadData(fmt::format("{}: the input of its product cannot be quantized: {}", matrix.name,
                                     s.error().message));
    }
    if (wb::Status s = wb::DequantizeRow(wb::TensorType::kQ8_0, blocks, row); !s.ok()) return s.error();
    std::copy(row.begin(), row.end(), out.begin() + static_cast<ptrdiff_t>(r) * width);
  }
  return out;
}

}  // namespace

wb::Status ProjectStreamed(std::span<const double> x, int rows, const WeightMatrix& matrix, std::span<double> out,
                           ProductInputs inputs) {
  const int inWidth = static_cast<int>(matrix.cols);
  const int outWidth = static_cast<int>(matrix.rows);
  assert(x.size() == static_cast<size_t>(rows) * inWidth && out.size() == static_cast<size_t>(rows) * outWidth);
  const wb::TensorType type = matrix.tensor.type;
  if (inputs == ProductInputs::kQ8_0ForBlockMatrices && (type == wb::TensorType::kQ8_0 || type == wb::TensorType::kQ4_0)) {
    auto quantized = QuantizedInputs(x, rows, inWidth, matrix);
    if (!quantized) return quantized.error();
    return ProjectStreamed(*quantized, rows, matrix, out, ProductInputs::kExact);
  }
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
                            const WeightMatrix& down, Activation activation, std::span<double> out, ProductInputs inputs) {
  const size_t hiddenWidth = gate.rows;
  std::vector<double> gated(rows * hiddenWidth);
  std::vector<double> upRows(gated.size());
  if (wb::Status s = ProjectStreamed(x, rows, gate, gated, inputs); !s.ok()) return s;
  if (wb::Status s = ProjectStreamed(x, rows, up, upRows, inputs); !s.ok()) return s;
  GatedProduct(gated, upRows, activation, GatedBranch::kGate, gated);  // in place: act(gate) ⊙ up
  return ProjectStreamed(gated, rows, down, out, inputs);
}

wb::Expected<std::vector<double>> GatedFfnFlipSlack(std::span<const double> x, int rows, const WeightMatrix& gate,
                                                    const WeightMatrix& up, const WeightMatrix& down,
                                                    Activation activation, ProductInputs inputs) {
  const wb::TensorType type = down.tensor.type;
  if (inputs != ProductInputs::kQ8_0ForBlockMatrices || (type != wb::TensorType::kQ8_0 && type != wb::TensorType::kQ4_0)) {
    return std::vector<double>{};
  }
  const size_t hiddenWidth = gate.rows;
  std::vector<double> gated(rows * hiddenWidth);
  std::vector<double> upRows(gated.size());
  if (wb::Status s = ProjectStreamed(x, rows, gate, gated, inputs); !s.ok()) return s.error();
  if (wb::Status s = ProjectStreamed(x, rows, up, upRows, inputs); !s.ok()) return s.error();
  GatedProduct(gated, upRows, activation, GatedBranch::kGate, gated);
  // The codes at a boundary, as ggml's quantize_row_q8_0_ref forms them (in float: d = amax /
  // 127, id = 1 / d, code = round(x id)), each with its step, the block's scale (d, rounded
  // up by a half's relative precision for the half it is stored as).
  struct Flip {
    int row;
    size_t column;
    double step;
  };
  std::vector<Flip> flips;
  constexpr int kBlock = 32;
  for (int r = 0; r < rows; ++r) {
    for (size_t b = 0; b + kBlock <= hiddenWidth; b += kBlock) {
      float value[kBlock];
      float amax = 0.0f;
      for (int j = 0; j < kBlock; ++j) {
        value[j] = static_cast<float>(gated[r * hiddenWidth + b + j]);
        amax = std::max(amax, std::fabs(value[j]));
      }
      const float d = amax / 127.0f;
      if (d == 0.0f) continue;
      const float id = 1.0f / d;
      for (int j = 0; j < kBlock; ++j) {
        const double scaled = std::fabs(static_cast<double>(value[j] * id));
        if (std::fabs(scaled - std::floor(scaled) - 0.5) < kFlipWindow) {
          flips.push_back({r, b + j, static_cast<double>(d) * (1.0 + 1.0 / 1024)});
        }
      }
    }
  }
  std::vector<double> slack(static_cast<size_t>(rows) * down.rows, 0.0);
  if (flips.empty()) return slack;
  const size_t inWidth = down.cols;
  std::vector<float> chunk;
  for (uint64_t first = 0; first < down.rows; first += kStreamRows) {
    const uint64_t count = std::min<uint64_t>(kStreamRows, down.rows - first);
    chunk.resize(count * inWidth);
    if (wb::Status s = down.ReadRows(first, count, chunk); !s.ok()) return s.error();
    for (uint64_t o = 0; o < count; ++o) {
      for (const Flip& f : flips) {
        slack[static_cast<size_t>(f.row) * down.rows + first + o] += f.step * std::fabs(chunk[o * inWidth + f.column]);
      }
    }
  }
  return slack;
}

void AddBias(std::span<double> x, int rows, std::span<const float> bias) {
  if (bias.empty()) return;
  assert(x.size() == static_cast<size_t>(rows) * bias.size());
  for (int r = 0; r < rows; ++r) {
    for (size_t c = 0; c < bias.size(); ++c) x[r * bias.size() + c] += bias[c];
  }
}

}  // namespace ref
