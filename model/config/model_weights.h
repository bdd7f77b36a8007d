// ModelWeights: every tensor a ModelConfig implies, bound to a WeightSource and shape-checked.
//
// Contract: BindWeights asks the source for exactly the tensors the config's switches imply
// (biases only with qkvBias/outputBias, q/k norms only with QK-norm, the sandwich norms only
// with BlockNorms::kSandwich, a router and experts x 3 matrices for a MoE layer, a dense FFN
// otherwise, output.weight only for an untied head) with their expected shapes, so a model
// with a missing or misshapen tensor fails here, naming it, never mid-forward. Matrices
// stay views into the mapped files (WeightMatrix); norms and biases are small f32 copies.
// The ModelWeights is valid while the WeightSource lives.
//
// Shapes (HF orientation, [out, in]); H hidden, hd headDim, nq/nkv heads, F ffn, Fe expert ffn:
//   embedding [vocab, H]   q [nq·hd, H]   k, v [nkv·hd, H]   o [H, nq·hd]
//   gate, up [F, H]   down [H, F]   router [E, H]   expert gate/up [Fe, H], down [H, Fe]
//   q norm [hd] per head or [nq·hd] whole; k norm [hd] or [nkv·hd]; every other norm [H]
#pragma once

#include <vector>

#include "model/config/config.h"
#include "model/config/weight_source.h"

namespace wb::model {

struct ExpertWeights {
  WeightMatrix gate, up, down;
};

struct LayerWeights {
  std::vector<float> attnNorm;            // [H]: input_layernorm
  WeightMatrix q, k, v, o;
  std::vector<float> qBias, kBias, vBias;  // empty without qkvBias
  std::vector<float> oBias;                // empty without outputBias
  std::vector<float> qNorm, kNorm;         // empty without QK-norm
  std::vector<float> postAttnNorm;         // sandwich only: after attention
  std::vector<float> ffnNorm;              // [H]: before the FFN
  std::vector<float> postFfnNorm;          // sandwich only: after the FFN
  WeightMatrix gate, up, down;             // dense layers
  WeightMatrix router;                     // MoE layers
  std::vector<ExpertWeights> experts;      // MoE layers, one per expert
};

struct ModelWeights {
  WeightMatrix embedding;
  std::vector<LayerWeights> layers;
  std::vector<float> outputNorm;  // [H]
  WeightMatrix head;              // [vocab, H]: output.weight, or the embedding when tied
};

Expected<ModelWeights> BindWeights(const ModelConfig& config, const WeightSource& source);

}  // namespace wb::model
