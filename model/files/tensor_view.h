// One tensor of a model file, whatever the format: the façade the model loader codes against.
//
// Contract (stable; the config/weights code in model/config/ depends on it):
//   - A TensorView names a tensor's bytes inside a mapped GGUF or safetensors file. It owns
//     nothing: it is valid while the GgufFile / SafetensorsCheckpoint it came from is alive
//     (moving those objects is fine; destroying them is not).
//   - `shape` is row-major, outermost first, in both formats. For GGUF that is ggml's `ne`
//     reversed: a GGUF weight with ne = [in, out] has shape {out, in}; a stacked-expert tensor
//     with ne = [H, ff, E] has shape {E, ff, H}. A 0-d tensor has an empty shape.
//   - A row is the innermost dimension: RowLength() = shape.back() (1 for 0-d), RowCount() =
//     the product of the other dimensions. Row r of a 3-D tensor {E, R, C} is expert r / R,
//     row r % R: the outer index first. For quantized types RowLength() is a multiple of the
//     block size (the GGUF reader guarantees it), so rows are whole blocks.
//   - `data` holds exactly RowCount() * RowBytes(type, RowLength()) bytes.
//   - ViewTensor() fails with a message naming the file and the tensor when the tensor is
//     missing or (safetensors) its dtype is not a weight type (only F32, F16, BF16 are).
//   - DequantizeRows() writes rows [firstRow, firstRow + rowCount) as floats into `out`, which
//     must hold exactly rowCount * RowLength() floats; the values are bit-identical to ggml's
//     dequantisation. Out-of-range rows or a wrong `out` size are errors naming the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "gguf.h"
#include "safetensors.h"
#include "tensor_types.h"

namespace wb {

struct TensorView {
  std::string name;
  TensorType type = TensorType::kF32;
  std::vector<uint64_t> shape;      // row-major: outermost first, i.e. reversed ggml ne
  std::span<const std::byte> data;  // inside the mapping; never copied
  std::string file;                 // the file it lives in, for messages

  uint64_t ElementCount() const;
  uint64_t RowLength() const;  // shape.back(), or 1 for a 0-d tensor
  uint64_t RowCount() const;   // ElementCount() / RowLength() (0 when some dimension is 0)
};

// From a GGUF file.
Expected<TensorView> ViewTensor(const GgufFile& file, std::string_view name);
TensorView ViewTensor(const GgufFile& file, const GgufTensorInfo& tensor);

// From a safetensors checkpoint (any shard) or one safetensors file.
Expected<TensorView> ViewTensor(const SafetensorsCheckpoint& checkpoint, std::string_view name);
Expected<TensorView> ViewTensor(const SafetensorsFile& file, const SafetensorsTensorInfo& tensor);

// Rows [firstRow, firstRow + rowCount) as floats; out.size() must be rowCount * RowLength().
Status DequantizeRows(const TensorView& tensor, uint64_t firstRow, uint64_t rowCount, std::span<float> out);

// The whole tensor as floats, in row-major order.
Expected<std::vector<float>> DequantizeAll(const TensorView& tensor);

}  // namespace wb
