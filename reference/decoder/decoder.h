// The float64 reference decoder: one recipe with switches for all eight families.
//
// Contract: RunDecoder runs `tokens` at positions 0, 1, ... through the model a ModelConfig
// describes, with weights bound by BindWeights, and returns the logits of the last position
// or of every position. It follows transformers' eager modeling code (family-spec §3) in
// double precision; where llama.cpp differs (§9) transformers wins (docs/concepts/families.md).
// Per layer, with x the residual stream (T x H, double):
//   n = RMSNorm(x)·w                                   input norm ((1 + w) for HF Gemma)
//   q, k, v = n·Wqᵀ (+bq), n·Wkᵀ (+bk), n·Wvᵀ (+bv)
//   q, k = QKNorm(q), QKNorm(k)                       per head or whole projection, if any
//   q, k = RoPE(q), RoPE(k)                           half or interleaved pairs; the local
//                                                      base on sliding layers if there is one
//   a = softmax(q·kᵀ·scale over p - W < j <= p) · v    W only on sliding layers; GQA
//   o = a·Woᵀ (+bo);  o = RMSNorm(o) if sandwich;  x += o
//   n = RMSNorm(x);  f = dense gated FFN, or Σ top-k weight · expert(n)
//   f = RMSNorm(f) if sandwich;  x += f
// then logits = RMSNorm(x)·Headᵀ (the embedding when tied), softcapped if configured.
// Embeddings are scaled by √H in f64 for Gemma. Weights are read row block by row block
// from the files (streamed_ops.h); only activations (T x max width) are held in double.
// A token outside [0, vocab) is a BadUsage error; a weight that cannot be read, BadData.
#pragma once

#include <span>
#include <vector>

#include "common/expected.h"
#include "model/config/config.h"
#include "model/config/model_weights.h"
#include "model/config/weight_source.h"

namespace ref {

enum class LogitPositions { kLast, kAll };

struct DecoderLogits {
  int firstPosition = 0;       // position of the first row
  int rows = 0;                // positions with logits
  int vocab = 0;
  std::vector<double> values;  // rows x vocab

  std::span<const double> Row(int r) const { return std::span(values).subspan(static_cast<size_t>(r) * vocab, vocab); }
};

wb::Expected<DecoderLogits> RunDecoder(const wb::model::ModelConfig& config, const wb::model::ModelWeights& weights,
                                       std::span<const int> tokens, LogitPositions positions);

// BindWeights(source.config(), source), then RunDecoder.
wb::Expected<DecoderLogits> RunDecoder(const wb::model::WeightSource& source, std::span<const int> tokens,
                                       LogitPositions positions);

}  // namespace ref
