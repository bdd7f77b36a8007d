// The format-independent tensor view and row dequantisation; see tensor_view.h.
#include "tensor_view.h"

#include <limits>

#include <fmt/format.h>

#include "printable.h"

namespace wb {

uint64_t TensorView::ElementCount() const {
  uint64_t count = 1;
  for (uint64_t n : shape) count *= n;  // both readers check this product for overflow
  return count;
}

uint64_t TensorView::RowLength() const { return shape.empty() ? 1 : shape.back(); }

uint64_t TensorView::RowCount() const {
  uint64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  return shape.empty() || shape.back() != 0 ? rows : 0;
}

TensorView ViewTensor(const GgufFile& file, const GgufTensorInfo& tensor) {
  TensorView view;
  view.name = tensor.name;
  view.type = tensor.type;
  view.shape.assign(tensor.ne.rbegin(), tensor.ne.rend());  // ggml ne is innermost-first
  view.data = tensor.data;
  view.file = file.name();
  return view;
}

Expected<TensorView> ViewTensor(const GgufFile& file, std::string_view name) {
  const GgufTensorInfo* tensor = file.FindTensor(name);
  if (tensor == nullptr) return BadData(fmt::format("{}: tensor '{}' is missing", file.name(), Printable(name)));
  return ViewTensor(file, *tensor);
}

Expected<TensorView> ViewTensor(const SafetensorsFile& file, const SafetensorsTensorInfo& tensor) {
  const std::optional<TensorType> type = WeightTypeOf(tensor.dtype);
  if (!type) {
    return BadData(fmt::format("{}: tensor '{}' has dtype {}; weights must be F32, F16 or BF16", file.name(),
                               Printable(tensor.name), SafetensorsDtypeName(tensor.dtype)));
  }
  TensorView view;
  view.name = tensor.name;
  view.type = *type;
  view.shape = tensor.shape;
  view.data = tensor.data;
  view.file = file.name();
  return view;
}

Expected<TensorView> ViewTensor(const SafetensorsCheckpoint& checkpoint, std::string_view name) {
  const SafetensorsCheckpoint::Located found = checkpoint.Find(name);
  if (found.tensor == nullptr) {
    return BadData(fmt::format("{}: tensor '{}' is missing", checkpoint.source(), Printable(name)));
  }
  return ViewTensor(*found.file, *found.tensor);
}

namespace {

// a * b, or false if it overflows u64.
bool CheckedProduct(uint64_t a, uint64_t b, uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return false;
  out = a * b;
  return true;
}

}  // namespace

Status DequantizeRows(const TensorView& tensor, uint64_t firstRow, uint64_t rowCount, std::span<float> out) {
  const auto fail = [&](std::string_view problem) {
    return BadData(fmt::format("{}: tensor '{}': {}", tensor.file, Printable(tensor.name), problem));
  };
  const uint64_t rows = tensor.RowCount();
  const uint64_t rowLength = tensor.RowLength();
  if (firstRow > rows || rowCount > rows - firstRow) {
    return fail(fmt::format("{} rows starting at row {} do not fit in its {} rows", rowCount, firstRow, rows));
  }
  const Expected<uint64_t> rowBytes = RowBytes(tensor.type, rowLength);
  if (!rowBytes.ok()) return fail(rowBytes.error().message);
  // Views from the readers always pass these two checks; hand-made ones might not.
  uint64_t totalBytes = 0, wanted = 0;
  if (!CheckedProduct(rows, *rowBytes, totalBytes) || totalBytes != tensor.data.size()) {
    return fail(fmt::format("holds {} bytes, not {} rows of {} bytes", tensor.data.size(), rows, *rowBytes));
  }
  if (!CheckedProduct(rowCount, rowLength, wanted) || out.size() != wanted) {
    return fail(fmt::format("{} rows of {} values need {} floats, but the output holds {}", rowCount, rowLength,
                            rowCount * rowLength, out.size()));
  }
  for (uint64_t r = 0; r < rowCount; ++r) {
    const auto src = tensor.data.subspan(static_cast<size_t>((firstRow + r) * *rowBytes), static_cast<size_t>(*rowBytes));
    const auto dst = out.subspan(static_cast<size_t>(r * rowLength), static_cast<size_t>(rowLength));
    if (Status s = DequantizeRow(tensor.type, src, dst); !s.ok()) return fail(s.error().message);
  }
  return Status::Ok();
}

Expected<std::vector<float>> DequantizeAll(const TensorView& tensor) {
  // The bytes a view of this shape must hold, exactly (Q2_K packs about 3 values a byte, so no
  // fixed ratio bounds them); a malformed view is refused before anything is allocated.
  uint64_t elements = 0, bytes = 0;
  const Expected<uint64_t> rowBytes = RowBytes(tensor.type, tensor.RowLength());
  if (!CheckedProduct(tensor.RowCount(), tensor.RowLength(), elements) || !rowBytes.ok() ||
      !CheckedProduct(tensor.RowCount(), *rowBytes, bytes) || bytes != tensor.data.size()) {
    return BadData(fmt::format("{}: tensor '{}': its shape does not match its {} bytes", tensor.file,
                               Printable(tensor.name), tensor.data.size()));
  }
  std::vector<float> values(static_cast<size_t>(elements));
  if (Status s = DequantizeRows(tensor, 0, tensor.RowCount(), values); !s.ok()) return s.error();
  return values;
}

}  // namespace wb
