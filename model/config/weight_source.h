// WeightSource: every tensor of a model by its GGUF name, from a GGUF file or a Hugging Face
// safetensors checkpoint.
//
// Contract:
//   - Open(path) maps the file(s) and reads the config (LoadModelConfig's rules). Nothing is
//     copied: a WeightMatrix is a typed view into the mapping whose rows are dequantised to
//     f32 on demand, so a model never needs more memory than its files' pages. With
//     Residence::kInMemory the files are read once into memory of their own instead
//     (mapped_file.h says why a decoder wants that); the views are the same.
//   - Tensors are asked for by GGUF name (gguf-py's tensor_mapping.py in llama.cpp); for an HF
//     checkpoint the name is mapped (hf_names.h), Gemma's post_attention_layernorm ambiguity
//     included.
//   - Every request states the expected shape, row-major as in HF ([out, in] for a matrix).
//     A missing tensor, or one of another shape, is an Error naming the file, the tensor
//     (and its HF name) and both shapes: nothing downstream checks sizes again.
//   - Vector() copies a bias (or any 1-D tensor) out as f32; Norm() a norm weight, with +1
//     added in f32 when the shift is kAddOne (HF Gemma, config().normShift), the dtype of
//     Gemma3RMSNorm's (1 + w) (transformers' models/gemma3/modeling_gemma3.py); a GGUF Gemma
//     already stores 1 + w (`Gemma3Model.modify_tensors`, llama.cpp's convert_hf_to_gguf.py).
//   - Expert(): expert e of a stacked GGUF tensor (shape [E, rows, cols], expert outermost),
//     or of an HF checkpoint's per-expert matrices, or of a transformers-v5 fused tensor.
//   - The q/k row order is left as the file has it. A GGUF llama-family file holds q and k
//     rows permuted by llama.cpp's converter (`LlamaModel.permute`, convert_hf_to_gguf.py);
//     its config says RopePairing::kAdjacent, which rotates exactly the pairs the
//     permutation made adjacent, so the logits are those of the HF layout with half pairing
//     (docs/concepts/families.md).
//     qk_permutation.h has the permutation, for writers and tests.
// A WeightSource is move-only; views stay valid while it lives (moving it is fine).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "model/config/config.h"
#include "model/files/gguf.h"
#include "model/files/safetensors.h"
#include "model/files/tensor_view.h"

namespace wb::model {

// rows x cols of one tensor, starting at row `firstRow` of it (an expert's slice).
struct WeightMatrix {
  std::string name;   // for messages: the GGUF name, with "[expert e]" for a slice
  TensorView tensor;  // the whole stored tensor
  uint64_t firstRow = 0;
  uint64_t rows = 0;
  uint64_t cols = 0;

  // Rows [first, first + count) of the matrix as f32; out.size() == count * cols.
  Status ReadRows(uint64_t first, uint64_t count, std::span<float> out) const;
};

class WeightSource {
 public:
  static Expected<WeightSource> Open(const std::string& path, Residence residence = Residence::kMapped);

  WeightSource(WeightSource&&) = default;
  WeightSource& operator=(WeightSource&&) = default;
  WeightSource(const WeightSource&) = delete;
  WeightSource& operator=(const WeightSource&) = delete;

  const ModelConfig& config() const { return config_; }
  const std::string& path() const { return path_; }

  bool Has(std::string_view ggufName) const;
  Expected<WeightMatrix> Matrix(std::string_view ggufName, uint64_t rows, uint64_t cols) const;
  Expected<WeightMatrix> Expert(std::string_view stackedName, int expert, uint64_t rows, uint64_t cols) const;
  Expected<std::vector<float>> Vector(std::string_view ggufName, uint64_t length) const;
  Expected<std::vector<float>> Norm(std::string_view ggufName, uint64_t length, NormShift shift) const;

 private:
  WeightSource() = default;
  // The tensor stored under `ggufName` (or its HF name), or an error naming it.
  Expected<TensorView> Find(std::string_view ggufName) const;
  std::string Describe(std::string_view ggufName) const;  // "'name'" or "'name' (HF 'hf')"

  ModelConfig config_;
  std::string path_;
  std::optional<GgufFile> gguf_;
  std::optional<SafetensorsCheckpoint> safetensors_;
};

}  // namespace wb::model
