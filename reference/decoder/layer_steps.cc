#include "reference/decoder/layer_steps.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include <fmt/format.h>

#include "reference/block/ops.h"
#include "reference/decoder/rope_frequencies.h"
#include "reference/decoder/streamed_ops.h"

namespace ref {

using wb::Status;
using wb::model::BlockNorms;
using wb::model::EmbeddingScale;
using wb::model::ExpertWeights;
using wb::model::LayerWeights;
using wb::model::ModelConfig;
using wb::model::ModelWeights;
using wb::model::QkNorm;

namespace {

// How the context's products read their inputs (decoder_options.h: quantizeProductInputs).
ProductInputs InputsOf(const StepContext& ctx) {
  return ctx.options.quantizeProductInputs ? ProductInputs::kQ8_0ForBlockMatrices : ProductInputs::kExact;
}

BlockShape ShapeOf(const ModelConfig& c) {
  BlockShape s;
  s.model = c.hidden;
  s.qHeads = c.heads;
  s.kvHeads = c.kvHeads;
  s.headDim = c.headDim;
  s.ffn = c.ffn;
  s.rmsEps = c.rmsEps;
  s.attentionScale = c.attentionScale;
  return s;
}

// The stage-1 recipe with the family's switches (one enum for both: model/switches.h).
BlockRecipe RecipeOf(const ModelConfig& c) {
  BlockRecipe recipe;
  recipe.ropePairing = c.ropePairing;
  recipe.activation = c.activation;
  return recipe;
}

const LayerWeights& Layer(const StepContext& ctx) { return ctx.weights.layers[ctx.layer]; }

// y = RMSNorm(x) · w over rows of `width` (ops.h RmsNorm; the weight already holds Gemma's
// 1 + w), with w + 1 in float under normWeightPlusOneAgain.
std::vector<double> Normalise(const ModelConfig& c, const DecoderOptions& options, std::span<const double> x,
                              int rows, int width, std::span<const float> weight) {
  std::vector<double> out(x.size());
  if (options.normWeightPlusOneAgain) {
    std::vector<float> shifted(weight.begin(), weight.end());
    for (float& w : shifted) w += 1.0f;
    RmsNorm(x, rows, width, shifted, c.rmsEps, NormEpsilon::kInside, NormWeight::kApplied, out);
  } else {
    RmsNorm(x, rows, width, weight, c.rmsEps, NormEpsilon::kInside, NormWeight::kApplied, out);
  }
  return out;
}

// QK-norm of q (heads heads) or k, in place: per head (rows·heads rows of headDim) or over
// the whole projection (rows of heads·headDim).
void QkNormalise(const StepContext& ctx, std::vector<double>& x, int heads, std::span<const float> weight) {
  const ModelConfig& c = ctx.config;
  if (c.qkNorm == QkNorm::kNone) return;
  const bool perHead = c.qkNorm == QkNorm::kPerHead;
  const int rows = perHead ? ctx.rows * heads : ctx.rows;
  const int width = perHead ? c.headDim : heads * c.headDim;
  x = Normalise(c, ctx.options, x, rows, width, weight);
}

// The branch's sandwich norm, when configured.
void Sandwich(const StepContext& ctx, std::vector<double>& branch, std::span<const float> weight) {
  const ModelConfig& c = ctx.config;
  if (c.blockNorms == BlockNorms::kSandwich) branch = Normalise(c, ctx.options, branch, ctx.rows, c.hidden, weight);
}

}  // namespace

wb::Expected<std::vector<double>> StepEmbedding(const ModelConfig& c, const ModelWeights& weights,
                                                const DecoderOptions& options, std::span<const int> tokens) {
  for (int id : tokens) {
    if (id < 0 || static_cast<uint64_t>(id) >= weights.embedding.rows) {
      return wb::BadUsage(fmt::format("token {} is outside the vocabulary [0, {})", id, weights.embedding.rows));
    }
  }
  // Scaled by √H in f64 for Gemma (HF-bf16 would use bf16(√H); families.md).
  std::vector<double> x(tokens.size() * c.hidden);
  if (Status s = GatherRows(weights.embedding, tokens, x); !s.ok()) return s.error();
  if (c.embeddingScale == EmbeddingScale::kSqrtHidden && !options.embeddingScaleMissing) {
    const double scale = std::sqrt(static_cast<double>(c.hidden));
    for (double& value : x) value *= scale;
  }
  return x;
}

std::vector<double> StepNorm1(const StepContext& ctx, std::span<const double> x) {
  assert(x.size() == static_cast<size_t>(ctx.rows) * ctx.config.hidden);
  return Normalise(ctx.config, ctx.options, x, ctx.rows, ctx.config.hidden, Layer(ctx).attnNorm);
}

wb::Expected<QkvStep> StepQkv(const StepContext& ctx, std::span<const double> norm1) {
  const ModelConfig& c = ctx.config;
  const LayerWeights& w = Layer(ctx);
  const int t = ctx.rows;
  assert(norm1.size() == static_cast<size_t>(t) * c.hidden);
  QkvStep out;
  out.q.resize(static_cast<size_t>(t) * c.qWidth());
  out.k.resize(static_cast<size_t>(t) * c.kvWidth());
  out.v.resize(out.k.size());
  if (Status s = ProjectStreamed(norm1, t, w.q, out.q, InputsOf(ctx)); !s.ok()) return s.error();
  if (Status s = ProjectStreamed(norm1, t, w.k, out.k, InputsOf(ctx)); !s.ok()) return s.error();
  if (Status s = ProjectStreamed(norm1, t, w.v, out.v, InputsOf(ctx)); !s.ok()) return s.error();
  AddBias(out.q, t, w.qBias);
  AddBias(out.k, t, w.kBias);
  AddBias(out.v, t, w.vBias);

  const bool local = (c.layers[ctx.layer].sliding || ctx.options.localBaseOnAllLayers) && c.hasLocalRope;
  const RopeFrequencies frequencies = ComputeRopeFrequencies(local ? c.localRope : c.rope, c.headDim);
  const RopeTable rope = MakeRopeTable(ctx.firstPosition, t, frequencies.inverse, frequencies.attentionFactor);
  const RopePairing pairing = RecipeOf(c).ropePairing;
  auto rotate = [&] {
    if (ctx.options.ropeNotApplied) return;
    ApplyRope(out.q, t, c.heads, c.headDim, rope.cos, rope.sin, pairing, RopeDirection::kForward);
    ApplyRope(out.k, t, c.kvHeads, c.headDim, rope.cos, rope.sin, pairing, RopeDirection::kForward);
  };
  if (ctx.options.qkNormAfterRope) rotate();
  if (!ctx.options.qkNormSkipped) {
    QkNormalise(ctx, out.q, c.heads, w.qNorm);
    QkNormalise(ctx, out.k, c.kvHeads, w.kNorm);
  }
  if (!ctx.options.qkNormAfterRope) rotate();
  return out;
}

std::vector<double> StepStoredRows(const StepContext& ctx, std::span<const double> rows) {
  const CacheEmulation& cache = ctx.options.cache;
  std::vector<double> out(rows.begin(), rows.end());
  if (cache.type == CacheRowType::kF32) return out;
  const int group = cache.group > 0 ? cache.group : Int8Group(ctx.config.headDim);
  RoundTripRows(cache.type, group, ctx.config.kvWidth(), out, out);
  return out;
}

std::vector<double> StepAttention(const StepContext& ctx, std::span<const double> q, std::span<const double> keys,
                                  std::span<const double> values) {
  const ModelConfig& c = ctx.config;
  AttentionSpan span;
  span.queries = ctx.rows;
  span.firstQueryPosition = ctx.firstPosition;
  span.keys = ctx.firstPosition + ctx.rows;
  if (c.layers[ctx.layer].sliding || (ctx.options.windowOnAllLayers && c.slidingWindow > 0)) {
    span.window = c.slidingWindow + (ctx.options.windowOffByOne ? 1 : 0);  // keys p - W < j <= p
  }
  assert(q.size() == static_cast<size_t>(ctx.rows) * c.qWidth());
  assert(keys.size() == static_cast<size_t>(span.keys) * c.kvWidth() && values.size() == keys.size());
  std::vector<double> attended(q.size());
  Attend(q, keys, values, span, ShapeOf(c), RecipeOf(c), attended);
  return attended;
}

wb::Expected<std::vector<double>> StepResidual1(const StepContext& ctx, std::span<const double> attnOut,
                                                std::span<const double> x) {
  const ModelConfig& c = ctx.config;
  const LayerWeights& w = Layer(ctx);
  const int t = ctx.rows;
  assert(x.size() == static_cast<size_t>(t) * c.hidden);
  std::vector<double> branch(static_cast<size_t>(t) * c.hidden);
  if (Status s = ProjectStreamed(attnOut, t, w.o, branch, InputsOf(ctx)); !s.ok()) return s.error();
  AddBias(branch, t, w.oBias);
  Sandwich(ctx, branch, w.postAttnNorm);
  std::vector<double> out(branch.size());
  Add(x, branch, out);
  return out;
}

std::vector<double> StepNorm2(const StepContext& ctx, std::span<const double> residual1) {
  assert(residual1.size() == static_cast<size_t>(ctx.rows) * ctx.config.hidden);
  return Normalise(ctx.config, ctx.options, residual1, ctx.rows, ctx.config.hidden, Layer(ctx).ffnNorm);
}

wb::Expected<ExpertRouting> StepRouting(const StepContext& ctx, std::span<const double> norm2) {
  const ModelConfig& c = ctx.config;
  ExpertRouting routing;
  if (!c.layers[ctx.layer].moe) return routing;
  const int t = ctx.rows;
  std::vector<double> routerLogits(static_cast<size_t>(t) * c.experts);
  if (Status s = ProjectStreamed(norm2, t, Layer(ctx).router, routerLogits, InputsOf(ctx)); !s.ok()) return s.error();
  RoutingRule rule;
  rule.softmaxOverTopK = ctx.options.routerSoftmaxOverTopK;
  rule.tiesToHigherId = ctx.options.tiesToHigherId;
  routing.topK = c.expertsPerToken;
  for (int r = 0; r < t; ++r) {
    const auto chosen = RouteToken(std::span(routerLogits).subspan(static_cast<size_t>(r) * c.experts, c.experts),
                                   c.expertsPerToken, c.renormaliseTopK, rule);
    for (const ExpertChoice& choice : chosen) {
      routing.expertIds.push_back(choice.expert);
      routing.expertWeights.push_back(choice.weight);
    }
  }
  return routing;
}

// Σ over the chosen experts of weight · expert(x), for every row; experts in id order, each
// run once over the rows routed to it (MixtralSparseMoeBlock's loop).
wb::Expected<std::vector<double>> StepExpertFfn(const StepContext& ctx, std::span<const double> norm2,
                                                const ExpertRouting& routing) {
  const ModelConfig& c = ctx.config;
  const LayerWeights& w = Layer(ctx);
  const int t = ctx.rows;
  if (!c.layers[ctx.layer].moe) return wb::BadUsage(fmt::format("layer {} has no experts", ctx.layer));
  const int k = routing.topK;
  if (k < 1 || routing.expertIds.size() != static_cast<size_t>(t) * k ||
      routing.expertWeights.size() != routing.expertIds.size()) {
    return wb::BadUsage(fmt::format("layer {}: a routing of {} ids and {} weights for {} rows of {} experts",
                                    ctx.layer, routing.expertIds.size(), routing.expertWeights.size(), t, k));
  }
  for (int id : routing.expertIds) {
    if (id < 0 || id >= c.experts) {
      return wb::BadUsage(fmt::format("layer {}: expert id {} is outside [0, {})", ctx.layer, id, c.experts));
    }
  }
  std::vector<double> out(static_cast<size_t>(t) * c.hidden, 0.0);
  for (int e = 0; e < c.experts; ++e) {
    std::vector<int> rows;
    std::vector<double> weights;
    for (int r = 0; r < t; ++r) {
      for (int i = 0; i < k; ++i) {
        const size_t at = static_cast<size_t>(r) * k + i;
        if (routing.expertIds[at] == e) rows.push_back(r), weights.push_back(routing.expertWeights[at]);
      }
    }
    if (rows.empty()) continue;
    const int n = static_cast<int>(rows.size());
    std::vector<double> input(static_cast<size_t>(n) * c.hidden);
    for (int i = 0; i < n; ++i) {
      std::copy_n(norm2.begin() + static_cast<ptrdiff_t>(rows[i]) * c.hidden, c.hidden,
                  input.begin() + static_cast<ptrdiff_t>(i) * c.hidden);
    }
    std::vector<double> expertOut(input.size());
    const ExpertWeights& x = w.experts[e];
    if (Status s = GatedFfnStreamed(input, n, x.gate, x.up, x.down, c.activation, expertOut, InputsOf(ctx)); !s.ok()) {
      return s.error();
    }
    for (int i = 0; i < n; ++i) {
      for (int col = 0; col < c.hidden; ++col) {
        out[static_cast<size_t>(rows[i]) * c.hidden + col] += weights[i] * expertOut[static_cast<size_t>(i) * c.hidden + col];
      }
    }
  }
  Sandwich(ctx, out, w.postFfnNorm);
  return out;
}

wb::Expected<FfnStep> StepFfn(const StepContext& ctx, std::span<const double> norm2) {
  const ModelConfig& c = ctx.config;
  const LayerWeights& w = Layer(ctx);
  assert(norm2.size() == static_cast<size_t>(ctx.rows) * c.hidden);
  FfnStep out;
  if (c.layers[ctx.layer].moe) {
    auto routing = StepRouting(ctx, norm2);
    if (!routing) return routing.error();
    out.routing = std::move(*routing);
    auto ffn = StepExpertFfn(ctx, norm2, out.routing);
    if (!ffn) return ffn.error();
    out.ffnOut = std::move(*ffn);
    return out;
  }
  out.ffnOut.resize(norm2.size());
  if (Status s = GatedFfnStreamed(norm2, ctx.rows, w.gate, w.up, w.down, c.activation, out.ffnOut, InputsOf(ctx)); !s.ok()) {
    return s.error();
  }
  Sandwich(ctx, out.ffnOut, w.postFfnNorm);
  return out;
}

wb::Expected<std::vector<double>> StepFfnFlipSlack(const StepContext& ctx, std::span<const double> norm2) {
  const ModelConfig& c = ctx.config;
  const LayerWeights& w = Layer(ctx);
  if (c.layers[ctx.layer].moe || c.blockNorms == BlockNorms::kSandwich) return std::vector<double>{};
  return GatedFfnFlipSlack(norm2, ctx.rows, w.gate, w.up, w.down, c.activation, InputsOf(ctx));
}

std::vector<double> StepOutput(std::span<const double> residual1, std::span<const double> ffnOut) {
  std::vector<double> out(residual1.size());
  Add(residual1, ffnOut, out);
  return out;
}

wb::Expected<FinalStep> StepFinal(const StepContext& ctx, std::span<const double> lastOutput) {
  const ModelConfig& c = ctx.config;
  const int t = ctx.rows;
  assert(lastOutput.size() == static_cast<size_t>(t) * c.hidden);
  FinalStep out;
  out.finalNorm = Normalise(c, ctx.options, lastOutput, t, c.hidden, ctx.weights.outputNorm);
  out.logits.resize(static_cast<size_t>(t) * ctx.weights.head.rows);
  if (Status s = ProjectStreamed(out.finalNorm, t, ctx.weights.head, out.logits, InputsOf(ctx)); !s.ok()) return s.error();
  if (c.finalLogitSoftcap > 0) {
    for (double& logit : out.logits) logit = c.finalLogitSoftcap * std::tanh(logit / c.finalLogitSoftcap);
  }
  return out;
}

}  // namespace ref
