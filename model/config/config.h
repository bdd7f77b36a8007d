// ModelConfig: every supported model is one decoder recipe with switches.
//
// Contract: the eight families (llama, mistral, mixtral, qwen2, qwen3, qwen3_moe,
// gemma3_text, olmoe) differ only in the sizes and switches below; nothing downstream asks
// which family a model is, only which switches it has. A ModelConfig describes the model as
// stored in one file: a GGUF llama keeps llama.cpp's q/k row order, so its RoPE pairing is
// kAdjacent, and a GGUF Gemma stores its norms as 1 + w, so its normShift is kNone.
//
// For the `inspect` command (model/files/): LoadModelConfig(path) reads a GGUF file or
// a Hugging Face directory (or its config.json), validates it and returns the config or an
// error naming the file and the key; DescribeConfig(config) renders the sizes and the
// switches they imply as text, one line per switch.
//
// Sources: transformers' modeling and configuration code (src/transformers/models/<family>/),
// the GGUF metadata of ggml's docs/gguf.md and llama.cpp's src/llama-model.cpp; where
// transformers and llama.cpp disagree the HF reading wins (docs/concepts/families.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "model/switches.h"  // RopePairing, Activation

namespace wb::model {

enum class Family { kLlama, kMistral, kMixtral, kQwen2, kQwen3, kQwen3Moe, kGemma3Text, kOlmoe };

// Where the config and its weights come from: decides which names the tensors have.
enum class WeightFormat { kHuggingFace, kGguf };

// How the rotation frequencies are stretched for long contexts (transformers'
// src/transformers/modeling_rope_utils.py, _compute_*_parameters).
enum class RopeScaling {
  kNone,
  kLinear,  // inv_freq / factor
  kLlama3,  // wavelength bands: keep, divide by factor, or blend (or GGUF rope_freqs divisors)
  kYarn,    // ramp between interpolation and extrapolation, cos/sin times attentionFactor
};

// One set of RoPE parameters. The reference turns it into per-pair frequencies.
struct Rope {
  double theta = 10000.0;
  RopeScaling scaling = RopeScaling::kNone;
  double factor = 1.0;               // linear, llama3, yarn
  double lowFreqFactor = 1.0;        // llama3
  double highFreqFactor = 4.0;       // llama3
  double originalContext = 0.0;      // llama3 and yarn: L0, the pretraining context
  double betaFast = 32.0;            // yarn
  double betaSlow = 1.0;             // yarn
  bool truncate = true;              // yarn: floor/ceil the correction range
  double attentionFactor = 1.0;      // yarn: multiplies cos and sin; 1 otherwise
  // GGUF llama3: llama.cpp's converter precomputes one divisor per pair (rope_freqs.weight);
  // when present it replaces the band computation (`LlamaModel.generate_extra_tensors` in
  // convert_hf_to_gguf.py).
  std::vector<double> frequencyDivisors;
};

// RMSNorm of q and k before RoPE.
enum class QkNorm {
  kNone,
  kPerHead,          // qwen3, qwen3_moe, gemma3: RMSNorm over each head's headDim values
  kWholeProjection,  // olmoe: RMSNorm over the whole q (heads*headDim) and k (kvHeads*headDim)
};

// Where a block's norms sit.
enum class BlockNorms {
  kPreNorm,   // x += attn(norm(x)); x += ffn(norm(x))
  kSandwich,  // gemma3: x += norm(attn(norm(x))); x += norm(ffn(norm(x)))
};

// What the stored norm weights mean.
enum class NormShift {
  kNone,    // y = x̂ · w (GGUF Gemma already stores 1 + w)
  kAddOne,  // HF Gemma: y = x̂ · (1 + w); the weight source adds 1 in f32 on load
};

enum class EmbeddingScale {
  kNone,
  kSqrtHidden,  // gemma3: embeddings times √hidden (the reference computes it in f64)
};

// Per-layer switches.
struct LayerRecipe {
  bool sliding = false;  // attends to the last slidingWindow positions only, with localRope
  bool moe = false;      // experts instead of the dense FFN
};

struct ModelConfig {
  Family family = Family::kLlama;
  WeightFormat format = WeightFormat::kHuggingFace;
  std::string source;  // the file the config was read from, for messages

  // Sizes.
  int vocab = 0;
  int hidden = 0;
  int heads = 0;
  int kvHeads = 0;
  int headDim = 0;
  int ffn = 0;         // dense FFN width (0 when every layer is MoE)
  int experts = 0;     // 0: no experts
  int expertsPerToken = 0;
  int expertFfn = 0;   // width of one expert's FFN
  int maxPositions = 0;
  std::vector<LayerRecipe> layers;

  // Switches.
  double rmsEps = 1e-6;
  Rope rope;                  // global layers (every layer when there is no localRope)
  bool hasLocalRope = false;  // sliding layers use localRope (gemma3's rope_local_base_freq)
  Rope localRope;
  RopePairing ropePairing = RopePairing::kHalfSplit;
  int slidingWindow = 0;      // W: a sliding layer's query at p sees keys p - W < j <= p
  QkNorm qkNorm = QkNorm::kNone;
  bool qkvBias = false;
  bool outputBias = false;    // o_proj bias
  BlockNorms blockNorms = BlockNorms::kPreNorm;
  NormShift normShift = NormShift::kNone;
  Activation activation = Activation::kSilu;
  EmbeddingScale embeddingScale = EmbeddingScale::kNone;
  double attentionScale = 0;  // multiplies q·k: headDim^-½, or query_pre_attn_scalar^-½
  bool tiedHead = false;      // logits from the embedding matrix
  bool renormaliseTopK = false;  // divide the chosen experts' probabilities by their sum
  double finalLogitSoftcap = 0;  // gemma3 final_logit_softcapping; 0 = none

  int layerCount() const { return static_cast<int>(layers.size()); }
  int qWidth() const { return heads * headDim; }
  int kvWidth() const { return kvHeads * headDim; }
  bool anyMoe() const;
  bool anyDense() const;
};

std::string_view FamilyName(Family family);  // the HF model_type
std::string_view RopeScalingName(RopeScaling scaling);

// The rules every config must meet: every size positive, heads split
// evenly into kv groups, headDim even, eps/theta/factors/scales positive, one recipe per
// layer, experts per token in [1, experts], a window for sliding layers. The message names
// config.source and the field.
Status ValidateConfig(const ModelConfig& config);

// The sizes and the switches they imply, as indented text lines.
std::string DescribeConfig(const ModelConfig& config);

// A GGUF file (by its magic) or a Hugging Face directory, or a config.json file.
Expected<ModelConfig> LoadModelConfig(const std::string& path);

}  // namespace wb::model
