#include "quant_weights.h"

#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/fnv1a.h"
#include "model/config/qk_permutation.h"
#include "model/files/gguf.h"
#include "model/files/tensor_types.h"
#include "reference/block/block.h"
#include "reference/block/block_shape.h"

namespace wb::stage04 {
namespace {

constexpr const char* kRegenerate =
    "The build makes this file from the stage-1 weights: run ./workbook again to regenerate it (delete it first "
    "if it keeps failing).";

Error Refuse(const std::string& path, const std::string& what) {
  return BadData(fmt::format("{}: {}. {}", path, what, kRegenerate));
}

Weight WeightOf(TensorType type) { return type == TensorType::kQ4_0 ? Weight::kQ4_0 : Weight::kQ8_0; }

}  // namespace

size_t BlockBytes(Weight type) { return type == Weight::kQ4_0 ? 18 : 34; }

std::string DefaultQuantWeightsFolder(const std::string& buildRoot) { return buildRoot; }

Expected<QuantWeightSet> LoadQuantWeightSet(const std::string& path, ref::quant::WeightSet set) {
  auto opened = GgufFile::Open(path);
  if (!opened.ok()) return Refuse(path, opened.error().message);
  const GgufFile& file = *opened;
  const ref::BlockShape shape = ref::Stage1Shape();
  auto architecture = file.GetString("general.architecture");
  if (!architecture.ok()) return Refuse(path, architecture.error().message);
  if (*architecture != "llama") return Refuse(path, fmt::format("general.architecture is '{}', not 'llama'", *architecture));
  for (const auto& [key, expected] : std::initializer_list<std::pair<const char*, int>>{
           {"llama.block_count", 1},
           {"llama.embedding_length", shape.model},
           {"llama.feed_forward_length", shape.ffn},
           {"llama.attention.head_count", shape.qHeads},
           {"llama.attention.head_count_kv", shape.kvHeads},
           {"llama.rope.dimension_count", shape.headDim}}) {
    auto value = file.GetU32(key);
    if (!value.ok()) return Refuse(path, value.error().message);
    if (*value != static_cast<uint32_t>(expected)) {
      return Refuse(path, fmt::format("{} is {}; stage 4's block has {}", key, *value, expected));
    }
  }

  QuantWeightSet out;
  out.set = set;
  out.path = path;
  out.values.assign(ref::PackedFloats(shape), 0.0f);
  const auto offsets = ref::PackedOffsets(shape);
  const std::array<std::pair<int, int>, 9> shapes = ref::quant::TensorShapes(shape);
  // Packed tensor i -> the contract matrix it goes into (WQ, WK, WV all into wqkv).
  const std::array<int, 9> matrixOf = {-1, 0, 0, 0, 1, -1, 2, 3, 4};
  uint64_t checksum = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < ref::quant::kTensors.size(); ++i) {
    const ref::quant::TensorName& name = ref::quant::kTensors[i];
    const GgufTensorInfo* tensor = file.FindTensor(name.gguf);
    if (tensor == nullptr) return Refuse(path, fmt::format("tensor '{}' is missing", name.gguf));
    const auto [rows, cols] = shapes[i];
    const TensorType type = name.matrix ? ref::quant::MatrixType(set, name.attention) : TensorType::kF32;
    const std::vector<uint64_t> ne = name.matrix ? std::vector<uint64_t>{static_cast<uint64_t>(cols),
                                                                         static_cast<uint64_t>(rows)}
                                                 : std::vector<uint64_t>{static_cast<uint64_t>(cols)};
    if (tensor->type != type || tensor->ne != ne) {
      return Refuse(path, fmt::format("tensor '{}' is {} with {} dimensions; the {} set stores it as {} [{}{}]",
                                      name.gguf, TensorTypeName(tensor->type), tensor->ne.size(),
                                      ref::quant::SetName(set), TensorTypeName(type), cols,
                                      name.matrix ? fmt::format(", {}", rows) : ""));
    }
    checksum = Fnv1a64(tensor->data.data(), tensor->data.size(), checksum);
    float* values = out.values.data() + offsets[i];
    if (!name.matrix) {
      std::vector<float>& norm = i == 0 ? out.rms1 : out.rms2;
      norm.resize(cols);
      std::memcpy(norm.data(), tensor->data.data(), cols * sizeof(float));
      std::memcpy(values, norm.data(), cols * sizeof(float));
      continue;
    }
    const auto rowBytes = RowBytes(type, cols);
    if (!rowBytes.ok()) return Refuse(path, rowBytes.error().message);
    QuantMatrixBytes& matrix = out.matrices[matrixOf[i]];
    matrix.type = WeightOf(type);
    matrix.cols = cols;
    const size_t firstRow = matrix.rows;
    matrix.rows += rows;
    matrix.bytes.resize(static_cast<size_t>(matrix.rows) * *rowBytes);
    for (int hfRow = 0; hfRow < rows; ++hfRow) {
      const uint64_t ggufRow = name.heads > 0 ? model::GgufRowOfHfRow(hfRow, rows, name.heads) : hfRow;
      const auto source = tensor->data.subspan(ggufRow * *rowBytes, *rowBytes);
      std::memcpy(matrix.bytes.data() + (firstRow + hfRow) * *rowBytes, source.data(), *rowBytes);
      if (Status s = DequantizeRow(type, source, std::span(values + static_cast<size_t>(hfRow) * cols, cols));
          !s.ok()) {
        return Refuse(path, s.error().message);
      }
    }
  }
  auto stamped = file.GetString(ref::quant::kChecksumKey);
  if (!stamped.ok()) return Refuse(path, stamped.error().message);
  if (*stamped != fmt::format("{:016x}", checksum)) {
    return Refuse(path, fmt::format("its tensors' checksum is {:016x}, but the file says {} ({}): the file is "
                                    "damaged or was changed",
                                    checksum, *stamped, ref::quant::kChecksumKey));
  }
  return out;
}

}  // namespace wb::stage04
