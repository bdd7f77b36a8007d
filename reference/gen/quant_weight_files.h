// Stage 4's weight files: the stage-1 model quantized at build time, as GGUF files.
//
// Contract: three weight sets, each one GGUF v3 file in the build tree, written by
// workbook-make-quant-weights from the packed stage-1 weights and read by stage 4's driver:
//   q8_0   every matrix Q8_0        stage04-q8_0.gguf
//   q4_0   every matrix Q4_0        stage04-q4_0.gguf
//   mixed  attention Q8_0, FFN Q4_0 stage04-mixed.gguf
// Each file is a one-block llama model in llama.cpp's naming (general.architecture "llama",
// the llama.* hyperparameters, tensors blk.0.*; llama.cpp's src/llama-arch.cpp and gguf-py's
// constants.py name them), with the norm weights in F32 and WQ and WK's rows in llama.cpp's
// order (convert_hf_to_gguf.py's LlamaModel.permute; model/config/qk_permutation.h), which
// the driver undoes, so the student's wqkv is stage 1's WQ|WK|WV. Matrices are quantized by
// ggml's reference rules (model/files/quantize.cc). The FNV-1a 64 of the tensors' bytes, in
// file order, is stored as 16 hex digits under kChecksumKey, and the generator's seed under
// kSeedKey, so a damaged or stale file is refused by name, as the packed file is.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "model/files/tensor_types.h"
#include "reference/block/block_shape.h"

namespace ref::quant {

using ref::BlockShape;

enum class WeightSet { kQ8_0, kQ4_0, kMixed };
constexpr std::array<WeightSet, 3> kWeightSets = {WeightSet::kQ8_0, WeightSet::kQ4_0, WeightSet::kMixed};

constexpr std::string_view SetName(WeightSet set) {
  return set == WeightSet::kQ8_0 ? "q8_0" : set == WeightSet::kQ4_0 ? "q4_0" : "mixed";
}
inline std::string FileName(WeightSet set) { return "stage04-" + std::string(SetName(set)) + ".gguf"; }

// The nine tensors in the packed storage order of the stage-1 contract (rms1, WQ, WK, WV, WO,
// rms2, Wgate, Wup, Wdown). `heads` is the head count of llama.cpp's row permutation (0: none).
struct TensorName {
  const char* gguf;
  bool matrix;
  bool attention;
  int heads;
};
constexpr std::array<TensorName, 9> kTensors = {{
    {"blk.0.attn_norm.weight", false, true, 0},
    {"blk.0.attn_q.weight", true, true, 8},
    {"blk.0.attn_k.weight", true, true, 2},
    {"blk.0.attn_v.weight", true, true, 0},
    {"blk.0.attn_output.weight", true, true, 0},
    {"blk.0.ffn_norm.weight", false, false, 0},
    {"blk.0.ffn_gate.weight", true, false, 0},
    {"blk.0.ffn_up.weight", true, false, 0},
    {"blk.0.ffn_down.weight", true, false, 0},
}};

// (rows, cols) of each of the nine tensors, in kTensors' order; a norm is one row.
inline std::array<std::pair<int, int>, 9> TensorShapes(const BlockShape& shape) {
  return {{{1, shape.model},
           {shape.qWidth(), shape.model},
           {shape.kvWidth(), shape.model},
           {shape.kvWidth(), shape.model},
           {shape.model, shape.qWidth()},
           {1, shape.model},
           {shape.ffn, shape.model},
           {shape.ffn, shape.model},
           {shape.model, shape.ffn}}};
}

// The type a set stores a matrix in.
constexpr wb::TensorType MatrixType(WeightSet set, bool attention) {
  switch (set) {
    case WeightSet::kQ8_0: return wb::TensorType::kQ8_0;
    case WeightSet::kQ4_0: return wb::TensorType::kQ4_0;
    case WeightSet::kMixed: break;
  }
  return attention ? wb::TensorType::kQ8_0 : wb::TensorType::kQ4_0;
}

constexpr const char* kChecksumKey = "workbook.tensor_data_fnv1a64";
constexpr const char* kSeedKey = "workbook.weight_seed";

}  // namespace ref::quant
