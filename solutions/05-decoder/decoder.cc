// Stage 5, solved: the full decoder. One recipe with switches runs all eight families from a
// GGUF file or a Hugging Face folder, over a paged KV cache of f32, f16 or int8 rows.
//
// The contract (the model, the cache's layout, the buffers, decoder_forward) is
// contracts/stage05_decoder.h; the matrix kernels are contracts/stage05_kernels.h. Portable
// C++ and OpenMP, compiled as student code is (data/stages.json).
//
// The recipe is transformers' decoder layer (LlamaDecoderLayer, src/transformers/models/llama/
// modeling_llama.py), with each family's difference a switch of ModelConfig rather than a
// branch on the family's name:
//   x = embed(tokens) (· √H: Gemma)
//   per layer:  n = RMSNorm(x)
//               q, k, v = n·Wq^T, n·Wk^T, n·Wv^T (+ biases: Qwen2)
//               q, k = QK-norm (per head: Qwen3, Gemma 3; whole projection: OLMoE)
//               q, k = RoPE (half-split or adjacent pairs; Gemma 3's local base on sliding layers)
//               cache rows of k and v stored; a = attention over the cache (window: Mistral, Gemma 3)
//               x += o(a) (+ bias), RMSNorm'd first on sandwich layers (Gemma 3)
//               x += FFN(RMSNorm(x)): dense gated, or top-K experts (Mixtral, Qwen3-MoE, OLMoE),
//                    RMSNorm'd first on sandwich layers
//   logits = RMSNorm(x)·Head^T (the embedding when tied), softcapped when configured.
// The same call is a prefill (the prompt, n tokens) or a decode step (n = 1): row i of every
// buffer is position cache.size + i.
//
// The runner builds one file per stage, so this file is the translation unit: it includes the
// other .cc files of its folder, the parts, each of which is a complete file that could be
// compiled on its own (and a good editor opens it as one). decoder_parts.h lists them.
#include "kv_cache.cc"
#include "rope.cc"
#include "norms.cc"
#include "attention.cc"
#include "moe.cc"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "decoder_parts.h"

using namespace decoder_parts;  // the parts (decoder_parts.h)

namespace {

using wb::model::BlockNorms;
using wb::model::LayerWeights;
using wb::model::ModelConfig;

// x (rows x width) += bias in every row.
void AddBias(float* x, int rows, int width, const float* bias) {
  for (int r = 0; r < rows; ++r) {
    float* row = x + static_cast<size_t>(r) * width;
#pragma omp simd
    for (int c = 0; c < width; ++c) row[c] += bias[c];
  }
}

// out = a + b, element by element, over `count` values: a residual add.
void AddRows(const float* a, const float* b, float* out, size_t count) {
#pragma omp simd
  for (size_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

// The attention half of layer l: norm1, q, k, v, the cache rows, attnOut, residual1.
// x is the layer's input (n x H). In bench mode x is this layer's own output buffer (every
// layer shares one set), so x is read for the last time here, before the FFN half writes output.
void AttentionHalf(const Model& model, const KvCache& cache, int l, int n, const float* x, const LayerBuffers& b,
                   const Scratch& s, int threads) {
  const ModelConfig& c = model.config;
  const LayerWeights& w = model.weights.layers[static_cast<size_t>(l)];
  const bool sliding = c.layers[static_cast<size_t>(l)].sliding;
  const int hidden = c.hidden;
  const int kvWidth = c.kvWidth();

  // norm1 (n x H): pre-norm, the branch sees a normalised copy of the stream.
  RmsNormRows(x, n, hidden, w.attnNorm.data(), c.rmsEps, b.norm1);

  // q (n x Q), k, v (n x KVW): three products of the same input, in one call (three calls of
  // weight_matmul give the same values, a little slower), plus Qwen2's biases.
  const WeightProduct qkv[] = {{&w.q, b.q}, {&w.k, b.k}, {&w.v, b.v}};
  weight_matmul_same_input(qkv, n, b.norm1, threads);
  if (c.qkvBias) {
    AddBias(b.q, n, c.qWidth(), w.qBias.data());
    AddBias(b.k, n, kvWidth, w.kBias.data());
    AddBias(b.v, n, kvWidth, w.vBias.data());
  }

  // QK-norm, then RoPE: the order of Qwen3Attention and Gemma3Attention (norm the heads, then
  // rotate them). The order matters: a rotation keeps a head's RMS, but the norm's weight, one
  // per value, does not commute with it.
  QkNormalise(b.q, n, c.heads, c.headDim, c.qkNorm, w.qNorm.data(), c.rmsEps);
  QkNormalise(b.k, n, c.kvHeads, c.headDim, c.qkNorm, w.kNorm.data(), c.rmsEps);
  const bool local = sliding && c.hasLocalRope;  // Gemma 3's sliding layers: rope_local_base_freq
  const float* cos = local ? s.localCos : s.cos;
  const float* sin = local ? s.localSin : s.sin;
  RotateHeads(b.q, n, c.heads, c.headDim, cos, sin, c.ropePairing);
  RotateHeads(b.k, n, c.kvHeads, c.headDim, cos, sin, c.ropePairing);

  // The call's rows go into the cache before attention reads it: keys as rotated, so a cached
  // key never needs its position again.
  for (int i = 0; i < n; ++i) {
    StoreRow(cache, l, KvPart::kKeys, cache.size + i, b.k + static_cast<size_t>(i) * kvWidth);
    StoreRow(cache, l, KvPart::kValues, cache.size + i, b.v + static_cast<size_t>(i) * kvWidth);
  }

  // attnOut (n x Q).
  Attend(cache, l, n, c.heads, b.q, sliding ? c.slidingWindow : 0, static_cast<float>(c.attentionScale), b.attnOut,
         threads);

  // residual1 (n x H) = x + o, o = attnOut·Wo^T (+ bias).
  const size_t values = static_cast<size_t>(n) * hidden;
  if (c.blockNorms == BlockNorms::kSandwich) {
    // Gemma 3: the branch is normalised before it joins the stream, so it is formed on its own.
    weight_matmul(w.o, n, b.attnOut, s.branch, Accumulate::kOverwrite, threads);
    if (c.outputBias) AddBias(s.branch, n, hidden, w.oBias.data());
    RmsNormRows(s.branch, n, hidden, w.postAttnNorm.data(), c.rmsEps, s.branch);
    AddRows(x, s.branch, b.residual1, values);
  } else {
    // Pre-norm: the stream is copied and the projection added into it (Accumulate::kAdd, stage
    // 3's fused residual): no branch buffer, no second pass.
    std::copy(x, x + values, b.residual1);
    if (c.outputBias) AddBias(b.residual1, n, hidden, w.oBias.data());
    weight_matmul(w.o, n, b.attnOut, b.residual1, Accumulate::kAdd, threads);
  }
}

// The FFN half of layer l: norm2, the routing on MoE layers, ffnOut, output.
void FfnHalf(const Model& model, int l, int n, const LayerBuffers& b, const Scratch& s, int threads) {
  const ModelConfig& c = model.config;
  const LayerWeights& w = model.weights.layers[static_cast<size_t>(l)];
  const int hidden = c.hidden;
  const bool sandwich = c.blockNorms == BlockNorms::kSandwich;

  // norm2 (n x H).
  RmsNormRows(b.residual1, n, hidden, w.ffnNorm.data(), c.rmsEps, b.norm2);

  // The branch: straight into ffnOut, or into scratch.branch when its sandwich norm follows.
  float* branch = sandwich ? s.branch : b.ffnOut;
  if (c.layers[static_cast<size_t>(l)].moe) {
    MoeFfn(c, w, n, b.norm2, b.expertIds, b.expertWeights, s, branch, threads);
  } else {
    // act(norm2·Wgate^T) ⊙ (norm2·Wup^T) in one kernel (stage 3's fused SwiGLU), then down.
    weight_matmul_gated(w.gate, w.up, c.activation, n, b.norm2, s.hidden, threads);
    weight_matmul(w.down, n, s.hidden, branch, Accumulate::kOverwrite, threads);
  }
  if (sandwich) RmsNormRows(s.branch, n, hidden, w.postFfnNorm.data(), c.rmsEps, b.ffnOut);

  // output (n x H) = residual1 + ffnOut: the next layer's x.
  AddRows(b.residual1, b.ffnOut, b.output, static_cast<size_t>(n) * hidden);
}

}  // namespace

void decoder_forward(const Model& model, KvCache& cache, std::span<const int32_t> tokens, Logits logits,
                     const DecoderBuffers& buffers, int threads) {
  const ModelConfig& c = model.config;
  const wb::model::ModelWeights& weights = model.weights;
  const Scratch& s = buffers.scratch;
  const int n = static_cast<int>(tokens.size());
  const int hidden = c.hidden;

  // 1. embedding (n x H): the tokens' rows of the embedding matrix, as float whatever it is
  //    stored as; Gemma multiplies them by √H (Gemma3TextScaledWordEmbedding).
  weight_rows(weights.embedding, tokens, buffers.embedding);
  if (c.embeddingScale == wb::model::EmbeddingScale::kSqrtHidden) {
    const float scale = static_cast<float>(std::sqrt(static_cast<double>(hidden)));
    for (size_t i = 0; i < static_cast<size_t>(n) * hidden; ++i) buffers.embedding[i] *= scale;
  }

  // 2. The RoPE tables of the call's positions, once for all layers: the global base, and the
  //    local one when sliding layers have their own.
  RopeAngles(model.rope, cache.size, n, s.cos, s.sin);
  if (c.hasLocalRope) RopeAngles(model.localRope, cache.size, n, s.localCos, s.localSin);

  // 3. The layers, each reading the previous one's output.
  const float* x = buffers.embedding;
  for (int l = 0; l < c.layerCount(); ++l) {
    const LayerBuffers& b = buffers.layers[l];
    AttentionHalf(model, cache, l, n, x, b, s, threads);
    FfnHalf(model, l, n, b, s, threads);
    x = b.output;
  }

  // 4. finalNorm and logits, for the rows that need them: every row, or the last only (a
  //    decode step, and a prefill that only samples the next token, need just that one).
  const int first = logits == Logits::kAll ? 0 : n - 1;
  const int rows = n - first;
  RmsNormRows(x + static_cast<size_t>(first) * hidden, rows, hidden, weights.outputNorm.data(), c.rmsEps,
              buffers.finalNorm);
  weight_matmul(weights.head, rows, buffers.finalNorm, buffers.logits, Accumulate::kOverwrite, threads);
  if (c.finalLogitSoftcap > 0) {
    // Gemma's final_logit_softcapping: cap · tanh(logit / cap) keeps every logit in (-cap, cap).
    const float cap = static_cast<float>(c.finalLogitSoftcap);
    const size_t count = static_cast<size_t>(rows) * weights.head.rows;
    for (size_t i = 0; i < count; ++i) buffers.logits[i] = cap * std::tanh(buffers.logits[i] / cap);
  }

  // 5. The call's positions are held now.
  cache.size += n;
}
