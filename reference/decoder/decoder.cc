#include "reference/decoder/decoder.h"

#include <utility>

#include "reference/decoder/layer_steps.h"

namespace ref {

using wb::model::ModelConfig;
using wb::model::ModelWeights;
using wb::model::WeightSource;

namespace {

// The forward pass of RunDecoder and RunDecoderTrace: the steps of layer_steps.h chained. The
// layers' buffers are kept only when keepLayers is set; the arithmetic is the same either way.
wb::Expected<DecoderTrace> Run(const ModelConfig& c, const ModelWeights& weights, std::span<const int> tokens,
                               LogitPositions positions, const DecoderOptions& options, bool keepLayers) {
  const int t = static_cast<int>(tokens.size());
  if (t == 0) return wb::BadUsage("the reference needs at least one token");
  DecoderTrace trace;
  trace.tokens = t;
  trace.shape.model = c.hidden;
  trace.shape.qHeads = c.heads;
  trace.shape.kvHeads = c.kvHeads;
  trace.shape.headDim = c.headDim;
  trace.shape.ffn = c.ffn;
  trace.shape.rmsEps = c.rmsEps;
  trace.shape.attentionScale = c.attentionScale;

  // 1. Embeddings.
  auto embedded = StepEmbedding(c, weights, options, tokens);
  if (!embedded) return embedded.error();
  std::vector<double> x = std::move(*embedded);
  if (keepLayers) {
    trace.embeddings = x;
    trace.layers.resize(c.layerCount());
    trace.routing.resize(c.layerCount());
  }

  // 2. The layers, all T rows at once: positions 0 .. T - 1.
  for (int layer = 0; layer < c.layerCount(); ++layer) {
    const StepContext ctx{c, weights, options, layer, 0, t};
    std::vector<double> norm1 = StepNorm1(ctx, x);
    auto qkv = StepQkv(ctx, norm1);
    if (!qkv) return qkv.error();
    std::vector<double> attnOut = StepAttention(ctx, qkv->q, StepStoredRows(ctx, qkv->k), StepStoredRows(ctx, qkv->v));
    auto residual1 = StepResidual1(ctx, attnOut, x);
    if (!residual1) return residual1.error();
    std::vector<double> norm2 = StepNorm2(ctx, *residual1);
    auto ffn = StepFfn(ctx, norm2);
    if (!ffn) return ffn.error();
    std::vector<double> output = StepOutput(*residual1, ffn->ffnOut);
    if (keepLayers) {
      LayerBuffers& keep = trace.layers[layer];
      keep[Index(Checkpoint::kNorm1)] = std::move(norm1);
      keep[Index(Checkpoint::kQ)] = std::move(qkv->q);
      keep[Index(Checkpoint::kK)] = std::move(qkv->k);
      keep[Index(Checkpoint::kV)] = std::move(qkv->v);
      keep[Index(Checkpoint::kAttnOut)] = std::move(attnOut);
      keep[Index(Checkpoint::kResidual1)] = std::move(*residual1);
      keep[Index(Checkpoint::kNorm2)] = std::move(norm2);
      keep[Index(Checkpoint::kFfnOut)] = std::move(ffn->ffnOut);
      keep[Index(Checkpoint::kOutput)] = output;
      trace.routing[layer] = std::move(ffn->routing);
    }
    x = std::move(output);
  }

  // 3. Final norm and head, for the rows asked for.
  const int first = positions == LogitPositions::kAll ? 0 : t - 1;
  DecoderLogits& out = trace.logits;
  out.firstPosition = first;
  out.rows = t - first;
  out.vocab = static_cast<int>(weights.head.rows);
  const StepContext ctx{c, weights, options, c.layerCount() - 1, first, out.rows};
  auto final = StepFinal(ctx, std::span(x).subspan(static_cast<size_t>(first) * c.hidden));
  if (!final) return final.error();
  out.values = std::move(final->logits);
  if (keepLayers) trace.finalNorm = std::move(final->finalNorm);
  return trace;
}

}  // namespace

wb::Expected<DecoderLogits> RunDecoder(const ModelConfig& c, const ModelWeights& weights, std::span<const int> tokens,
                                       LogitPositions positions) {
  auto trace = Run(c, weights, tokens, positions, DecoderOptions{}, /*keepLayers=*/false);
  if (!trace) return trace.error();
  return std::move(trace->logits);
}

wb::Expected<DecoderLogits> RunDecoder(const WeightSource& source, std::span<const int> tokens,
                                       LogitPositions positions) {
  auto weights = BindWeights(source.config(), source);
  if (!weights) return weights.error();
  return RunDecoder(source.config(), *weights, tokens, positions);
}

wb::Expected<DecoderTrace> RunDecoderTrace(const ModelConfig& c, const ModelWeights& weights,
                                           std::span<const int> tokens, LogitPositions positions) {
  return Run(c, weights, tokens, positions, DecoderOptions{}, /*keepLayers=*/true);
}

wb::Expected<DecoderTrace> RunDecoderTrace(const ModelConfig& c, const ModelWeights& weights,
                                           std::span<const int> tokens, LogitPositions positions,
                                           const DecoderOptions& options) {
  return Run(c, weights, tokens, positions, options, /*keepLayers=*/true);
}

wb::Expected<DecoderTrace> RunDecoderTrace(const WeightSource& source, std::span<const int> tokens,
                                           LogitPositions positions) {
  auto weights = BindWeights(source.config(), source);
  if (!weights) return weights.error();
  return RunDecoderTrace(source.config(), *weights, tokens, positions);
}

}  // namespace ref
