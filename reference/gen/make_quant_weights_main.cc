// workbook-make-quant-weights: writes stage 4's three weight files (run by the build).
//   workbook-make-quant-weights BLOCK_WEIGHTS.wbk OUTPUT_FOLDER
// Reads the packed stage-1 weights and writes stage04-q8_0.gguf, stage04-q4_0.gguf and
// stage04-mixed.gguf (reference/gen/quant_weight_files.h), each to a temporary name first and
// renamed into place, so a reader never sees half a file.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/fnv1a.h"
#include "common/packed_weights.h"
#include "model/config/qk_permutation.h"
#include "model/files/tensor_types.h"
#include "reference/block/block.h"
#include "reference/block/block_shape.h"
#include "reference/gen/gguf_writer.h"
#include "reference/gen/quant_weight_files.h"

namespace {

using ref::quant::WeightSet;

// A matrix's rows in llama.cpp's order (`heads` > 0), each quantized to `type`.
wb::Expected<std::vector<std::byte>> QuantizeMatrix(std::span<const float> values, int rows, int cols, int heads,
                                                    wb::TensorType type) {
  const auto rowBytes = wb::RowBytes(type, static_cast<uint64_t>(cols));
  if (!rowBytes.ok()) return rowBytes.error();
  std::vector<std::byte> bytes(static_cast<size_t>(*rowBytes) * rows);
  for (int ggufRow = 0; ggufRow < rows; ++ggufRow) {
    const uint64_t hfRow = heads > 0 ? wb::model::HfRowOfGgufRow(ggufRow, rows, heads) : ggufRow;
    const auto source = values.subspan(hfRow * cols, cols);
    const auto target = std::span(bytes).subspan(static_cast<size_t>(*rowBytes) * ggufRow, *rowBytes);
    const wb::Status done = type == wb::TensorType::kQ8_0 ? wb::QuantizeRowQ8_0(source, target)
                                                          : wb::QuantizeRowQ4_0(source, target);
    if (!done.ok()) return done.error();
  }
  return bytes;
}

wb::Status WriteSet(const wb::PackedWeights& packed, WeightSet set, const std::filesystem::path& folder) {
  const ref::BlockShape shape = ref::Stage1Shape();
  const ref::BlockWeights w = ref::ViewPacked(shape, packed.values);
  const std::array<std::span<const float>, 9> tensors = {w.rms1, w.wq, w.wk, w.wv, w.wo, w.rms2, w.gate, w.up, w.down};
  const std::array<std::pair<int, int>, 9> shapes = ref::quant::TensorShapes(shape);
  ref::fixtures::GgufWriter gguf;
  // llama.cpp's keys for a llama model (gguf-py's constants.py, Keys.LLM and Keys.Attention).
  gguf.AddString("general.architecture", "llama");
  gguf.AddString("general.name", fmt::format("Decoder Workbook stage-4 block ({})", ref::quant::SetName(set)));
  // LLAMA_FTYPE_MOSTLY_Q8_0 = 7, LLAMA_FTYPE_MOSTLY_Q4_0 = 2 (llama.cpp's include/llama.h);
  // the mixed file is mostly Q4_0 by bytes.
  gguf.AddU32("general.file_type", set == WeightSet::kQ8_0 ? 7 : 2);
  gguf.AddU32("general.quantization_version", 2);
  gguf.AddU32("llama.block_count", 1);
  gguf.AddU32("llama.context_length", 4096);
  gguf.AddU32("llama.embedding_length", static_cast<uint32_t>(shape.model));
  gguf.AddU32("llama.feed_forward_length", static_cast<uint32_t>(shape.ffn));
  gguf.AddU32("llama.attention.head_count", static_cast<uint32_t>(shape.qHeads));
  gguf.AddU32("llama.attention.head_count_kv", static_cast<uint32_t>(shape.kvHeads));
  gguf.AddU32("llama.rope.dimension_count", static_cast<uint32_t>(shape.headDim));
  gguf.AddF32("llama.rope.freq_base", 10000.0f);
  gguf.AddF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  gguf.AddString(ref::quant::kSeedKey, std::to_string(packed.seed));
  uint64_t checksum = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ref::quant::TensorName& name = ref::quant::kTensors[i];
    const auto [rows, cols] = shapes[i];
    std::vector<std::byte> bytes;
    std::vector<uint64_t> dims;
    wb::TensorType type = wb::TensorType::kF32;
    if (name.matrix) {
      type = ref::quant::MatrixType(set, name.attention);
      auto quantized = QuantizeMatrix(tensors[i], rows, cols, name.heads, type);
      if (!quantized.ok()) return quantized.error();
      bytes = std::move(*quantized);
      dims = {static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)};
    } else {
      bytes.resize(tensors[i].size_bytes());
      std::memcpy(bytes.data(), tensors[i].data(), bytes.size());
      dims = {static_cast<uint64_t>(cols)};
    }
    checksum = wb::Fnv1a64(bytes.data(), bytes.size(), checksum);
    gguf.AddTensor(name.gguf, type, dims, std::move(bytes));
  }
  gguf.AddString(ref::quant::kChecksumKey, fmt::format("{:016x}", checksum));
  const std::filesystem::path target = folder / ref::quant::FileName(set);
  const std::filesystem::path temporary = target.string() + ".tmp";
  if (wb::Status written = ref::fixtures::WriteFileBytes(temporary.string(), gguf.Serialize()); !written.ok()) {
    return written;
  }
  std::error_code ec;
  std::filesystem::rename(temporary, target, ec);
  if (ec) return wb::SystemError(fmt::format("{}: cannot rename into place: {}", target.string(), ec.message()));
  return wb::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: workbook-make-quant-weights BLOCK_WEIGHTS.wbk OUTPUT_FOLDER\n");
    return 2;
  }
  auto packed = wb::ReadPackedWeights(argv[1], "The build makes this file: run ./workbook again to regenerate it.");
  if (!packed.ok()) {
    std::fprintf(stderr, "workbook-make-quant-weights: %s\n", packed.error().message.c_str());
    return 2;
  }
  for (WeightSet set : ref::quant::kWeightSets) {
    if (wb::Status s = WriteSet(*packed, set, argv[2]); !s.ok()) {
      std::fprintf(stderr, "workbook-make-quant-weights: %s\n", s.error().message.c_str());
      return 2;
    }
  }
  return 0;
}
