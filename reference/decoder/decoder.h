// The float64 reference decoder: one recipe with switches for all eight families.
//
// Contract: RunDecoder runs `tokens` at positions 0, 1, ... through the model a ModelConfig
// describes, with weights bound by BindWeights, and returns the logits of the last position
// or of every position. It follows transformers' eager modeling code (e.g. `LlamaDecoderLayer`,
// src/transformers/models/llama/modeling_llama.py) in double precision; where llama.cpp
// differs transformers wins (docs/concepts/families.md).
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
//
// RunDecoderTrace runs the same forward pass and also keeps every layer's nine buffers, the
// stage-1 block's checkpoints (reference/block/block.h) read for a whole decoder, T rows each:
//   norm1     the input norm's output                            T x hidden
//   q, k      after the bias, the QK-norm and RoPE               T x qWidth, T x kvWidth
//   v         after the bias                                     T x kvWidth
//   attnOut   attention, before o_proj                           T x qWidth
//   residual1 x + o, o after its bias and the sandwich norm      T x hidden
//   norm2     the FFN's input norm                               T x hidden
//   ffnOut    the dense or expert FFN, after the sandwich norm   T x hidden
//   output    residual1 + ffnOut: the next layer's x             T x hidden
// and, per layer, the routing of every row (K expert ids in the order chosen and their
// weights; empty on dense layers), and the final norm of the rows with logits.
// The logits are computed from the last layer's output, so a trace's logits are exactly
// RunDecoder's. Every buffer is held at once: meant for toy models, not real ones.
//
// Both are the steps of layer_steps.h chained. The overload with DecoderOptions
// (decoder_options.h) emulates a KV cache's stored rows and computes a misconception's
// variant; with default options it is the trace without them, bit for bit.
#pragma once

#include <span>
#include <vector>

#include "common/expected.h"
#include "model/config/config.h"
#include "model/config/model_weights.h"
#include "model/config/weight_source.h"
#include "reference/block/block.h"
#include "reference/block/block_shape.h"
#include "reference/decoder/decoder_options.h"
#include "reference/decoder/expert_routing.h"

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

// One layer's nine buffers, indexed by Index(Checkpoint); buffer c holds T rows of
// CheckpointWidth(c, DecoderTrace::shape) values.
using LayerBuffers = BlockState;

struct DecoderTrace {
  int tokens = 0;                    // T, at positions 0 .. T - 1
  BlockShape shape;                  // the config's sizes, for CheckpointWidth
  std::vector<double> embeddings;    // T x hidden: layer 0's x (Gemma's √H applied)
  std::vector<LayerBuffers> layers;  // config.layerCount() entries
  std::vector<ExpertRouting> routing;  // config.layerCount() entries: T x K, empty on dense layers
  std::vector<double> finalNorm;     // logits.rows x hidden: the final norm of the logits' rows
  DecoderLogits logits;              // of the positions asked for

  std::span<const double> Buffer(int layer, Checkpoint c) const { return layers[layer][Index(c)]; }
};

wb::Expected<DecoderTrace> RunDecoderTrace(const wb::model::ModelConfig& config, const wb::model::ModelWeights& weights,
                                           std::span<const int> tokens, LogitPositions positions = LogitPositions::kAll);

wb::Expected<DecoderTrace> RunDecoderTrace(const wb::model::ModelConfig& config, const wb::model::ModelWeights& weights,
                                           std::span<const int> tokens, LogitPositions positions,
                                           const DecoderOptions& options);

// BindWeights(source.config(), source), then RunDecoderTrace.
wb::Expected<DecoderTrace> RunDecoderTrace(const wb::model::WeightSource& source, std::span<const int> tokens,
                                           LogitPositions positions = LogitPositions::kAll);

}  // namespace ref
