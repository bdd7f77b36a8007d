#include "reference/decoder/decoder.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "reference/block/ops.h"
#include "reference/decoder/expert_routing.h"
#include "reference/decoder/rope_frequencies.h"
#include "reference/decoder/streamed_ops.h"

namespace ref {

using wb::Status;
using wb::model::BlockNorms;
using wb::model::EmbeddingScale;
using wb::model::ExpertWeights;
using wb::model::LayerRecipe;
using wb::model::LayerWeights;
using wb::model::ModelConfig;
using wb::model::ModelWeights;
using wb::model::QkNorm;
using wb::model::Rope;
using wb::model::WeightSource;

namespace {

// What every layer shares: the sizes as a stage-1 BlockShape, the stage-1 recipe with the
// family's switches, and the RoPE tables of all T positions.
struct Forward {
  const ModelConfig& c;
  int tokens;
  BlockShape shape;
  BlockRecipe recipe;
  RopeTable globalRope;
  RopeTable localRope;  // sliding layers, when the config has a local base
};

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

RopeTable TableFor(const Rope& rope, int headDim, int tokens) {
  const RopeFrequencies f = ComputeRopeFrequencies(rope, headDim);
  return MakeRopeTable(0, tokens, f.inverse, f.attentionFactor);
}

// y = RMSNorm(x) · w over rows of `width` (ops.h RmsNorm; the weight already holds Gemma's 1 + w).
std::vector<double> Normalise(const Forward& f, std::span<const double> x, int rows, int width,
                              std::span<const float> weight) {
  std::vector<double> out(x.size());
  RmsNorm(x, rows, width, weight, f.c.rmsEps, NormEpsilon::kInside, NormWeight::kApplied, out);
  return out;
}

// QK-norm of q (heads heads) or k, in place: per head (rows·heads rows of headDim) or over
// the whole projection (rows of heads·headDim).
void QkNormalise(const Forward& f, std::vector<double>& x, int heads, std::span<const float> weight) {
  if (f.c.qkNorm == QkNorm::kNone) return;
  const bool perHead = f.c.qkNorm == QkNorm::kPerHead;
  const int rows = perHead ? f.tokens * heads : f.tokens;
  const int width = perHead ? f.c.headDim : heads * f.c.headDim;
  x = Normalise(f, x, rows, width, weight);
}

// Keeps a copy of `buffer` as checkpoint c of the layer, when the caller traces layers.
void Keep(LayerBuffers* keep, Checkpoint c, std::span<const double> buffer) {
  if (keep != nullptr) (*keep)[Index(c)].assign(buffer.begin(), buffer.end());
}

// x += o_proj(attention(...)), with the sandwich norm on the branch when configured.
Status AttentionHalf(const Forward& f, const LayerWeights& w, bool sliding, std::vector<double>& x,
                     LayerBuffers* keep) {
  const ModelConfig& c = f.c;
  const int t = f.tokens;
  const std::vector<double> normed = Normalise(f, x, t, c.hidden, w.attnNorm);
  std::vector<double> q(static_cast<size_t>(t) * c.qWidth());
  std::vector<double> k(static_cast<size_t>(t) * c.kvWidth());
  std::vector<double> v(k.size());
  if (Status s = ProjectStreamed(normed, t, w.q, q); !s.ok()) return s;
  if (Status s = ProjectStreamed(normed, t, w.k, k); !s.ok()) return s;
  if (Status s = ProjectStreamed(normed, t, w.v, v); !s.ok()) return s;
  AddBias(q, t, w.qBias);
  AddBias(k, t, w.kBias);
  AddBias(v, t, w.vBias);
  QkNormalise(f, q, c.heads, w.qNorm);
  QkNormalise(f, k, c.kvHeads, w.kNorm);
  const RopeTable& rope = sliding && c.hasLocalRope ? f.localRope : f.globalRope;
  ApplyRope(q, t, c.heads, c.headDim, rope.cos, rope.sin, f.recipe.ropePairing, RopeDirection::kForward);
  ApplyRope(k, t, c.kvHeads, c.headDim, rope.cos, rope.sin, f.recipe.ropePairing, RopeDirection::kForward);
  Keep(keep, Checkpoint::kNorm1, normed);
  Keep(keep, Checkpoint::kQ, q);
  Keep(keep, Checkpoint::kK, k);
  Keep(keep, Checkpoint::kV, v);

  AttentionSpan span;
  span.queries = t;
  span.firstQueryPosition = 0;
  span.keys = t;
  span.window = sliding ? c.slidingWindow : 0;  // keys p - W < j <= p
  std::vector<double> attended(q.size());
  Attend(q, k, v, span, f.shape, f.recipe, attended);
  Keep(keep, Checkpoint::kAttnOut, attended);

  std::vector<double> branch(static_cast<size_t>(t) * c.hidden);
  if (Status s = ProjectStreamed(attended, t, w.o, branch); !s.ok()) return s;
  AddBias(branch, t, w.oBias);
  if (c.blockNorms == BlockNorms::kSandwich) branch = Normalise(f, branch, t, c.hidden, w.postAttnNorm);
  Add(x, branch, x);
  Keep(keep, Checkpoint::kResidual1, x);
  return Status::Ok();
}

// Σ over the chosen experts of weight · expert(x), for every row; experts in id order, each
// run once over the rows routed to it (MixtralSparseMoeBlock's loop).
Status ExpertFfn(const Forward& f, const LayerWeights& w, std::span<const double> normed, std::span<double> out) {
  const ModelConfig& c = f.c;
  const int t = f.tokens;
  std::vector<double> routerLogits(static_cast<size_t>(t) * c.experts);
  if (Status s = ProjectStreamed(normed, t, w.router, routerLogits); !s.ok()) return s;
  std::vector<std::vector<ExpertChoice>> routes(t);
  for (int r = 0; r < t; ++r) {
    routes[r] = RouteToken(std::span(routerLogits).subspan(static_cast<size_t>(r) * c.experts, c.experts),
                           c.expertsPerToken, c.renormaliseTopK);
  }
  std::fill(out.begin(), out.end(), 0.0);
  for (int e = 0; e < c.experts; ++e) {
    std::vector<int> rows;
    std::vector<double> weights;
    for (int r = 0; r < t; ++r) {
      for (const ExpertChoice& choice : routes[r]) {
        if (choice.expert == e) rows.push_back(r), weights.push_back(choice.weight);
      }
    }
    if (rows.empty()) continue;
    const int n = static_cast<int>(rows.size());
    std::vector<double> input(static_cast<size_t>(n) * c.hidden);
    for (int i = 0; i < n; ++i) {
      std::copy_n(normed.begin() + static_cast<ptrdiff_t>(rows[i]) * c.hidden, c.hidden,
                  input.begin() + static_cast<ptrdiff_t>(i) * c.hidden);
    }
    std::vector<double> expertOut(input.size());
    const ExpertWeights& x = w.experts[e];
    if (Status s = GatedFfnStreamed(input, n, x.gate, x.up, x.down, f.recipe.activation, expertOut); !s.ok()) return s;
    for (int i = 0; i < n; ++i) {
      for (int col = 0; col < c.hidden; ++col) {
        out[static_cast<size_t>(rows[i]) * c.hidden + col] += weights[i] * expertOut[static_cast<size_t>(i) * c.hidden + col];
      }
    }
  }
  return Status::Ok();
}

// x += ffn(norm(x)), dense or experts, with the sandwich norm on the branch when configured.
Status FfnHalf(const Forward& f, const LayerWeights& w, bool moe, std::vector<double>& x, LayerBuffers* keep) {
  const ModelConfig& c = f.c;
  const int t = f.tokens;
  const std::vector<double> normed = Normalise(f, x, t, c.hidden, w.ffnNorm);
  std::vector<double> branch(normed.size());
  const Status s = moe ? ExpertFfn(f, w, normed, branch)
                       : GatedFfnStreamed(normed, t, w.gate, w.up, w.down, f.recipe.activation, branch);
  if (!s.ok()) return s;
  if (c.blockNorms == BlockNorms::kSandwich) branch = Normalise(f, branch, t, c.hidden, w.postFfnNorm);
  Add(x, branch, x);
  Keep(keep, Checkpoint::kNorm2, normed);
  Keep(keep, Checkpoint::kFfnOut, branch);
  Keep(keep, Checkpoint::kOutput, x);
  return Status::Ok();
}

// The forward pass of RunDecoder and RunDecoderTrace: the layers' buffers are kept only when
// keepLayers is set; the arithmetic is the same either way.
wb::Expected<DecoderTrace> Run(const ModelConfig& c, const ModelWeights& weights, std::span<const int> tokens,
                               LogitPositions positions, bool keepLayers) {
  const int t = static_cast<int>(tokens.size());
  if (t == 0) return wb::BadUsage("the reference needs at least one token");
  for (int id : tokens) {
    if (id < 0 || static_cast<uint64_t>(id) >= weights.embedding.rows) {
      return wb::BadUsage(fmt::format("token {} is outside the vocabulary [0, {})", id, weights.embedding.rows));
    }
  }
  DecoderTrace trace;
  trace.tokens = t;
  trace.shape = ShapeOf(c);
  Forward f{c, t, trace.shape, BlockRecipe{}, {}, {}};
  f.recipe.ropePairing = c.ropePairing;  // one enum for both (model/switches.h)
  f.recipe.activation = c.activation;
  f.globalRope = TableFor(c.rope, c.headDim, t);
  if (c.hasLocalRope) f.localRope = TableFor(c.localRope, c.headDim, t);

  // 1. Embeddings, scaled by √H in f64 for Gemma (HF-bf16 would use bf16(√H); families.md).
  std::vector<double> x(static_cast<size_t>(t) * c.hidden);
  if (Status s = GatherRows(weights.embedding, tokens, x); !s.ok()) return s.error();
  if (c.embeddingScale == EmbeddingScale::kSqrtHidden) {
    const double scale = std::sqrt(static_cast<double>(c.hidden));
    for (double& value : x) value *= scale;
  }
  if (keepLayers) {
    trace.embeddings = x;
    trace.layers.resize(c.layerCount());
  }

  // 2. The layers.
  for (int layer = 0; layer < c.layerCount(); ++layer) {
    const LayerRecipe& recipe = c.layers[layer];
    LayerBuffers* keep = keepLayers ? &trace.layers[layer] : nullptr;
    if (Status s = AttentionHalf(f, weights.layers[layer], recipe.sliding, x, keep); !s.ok()) return s.error();
    if (Status s = FfnHalf(f, weights.layers[layer], recipe.moe, x, keep); !s.ok()) return s.error();
  }

  // 3. Final norm and head, for the rows asked for.
  const int first = positions == LogitPositions::kAll ? 0 : t - 1;
  DecoderLogits& out = trace.logits;
  out.firstPosition = first;
  out.rows = t - first;
  out.vocab = static_cast<int>(weights.head.rows);
  const std::vector<double> normed =
      Normalise(f, std::span(x).subspan(static_cast<size_t>(first) * c.hidden), out.rows, c.hidden, weights.outputNorm);
  out.values.resize(static_cast<size_t>(out.rows) * out.vocab);
  if (Status s = ProjectStreamed(normed, out.rows, weights.head, out.values); !s.ok()) return s.error();
  if (c.finalLogitSoftcap > 0) {
    for (double& logit : out.values) logit = c.finalLogitSoftcap * std::tanh(logit / c.finalLogitSoftcap);
  }
  return trace;
}

}  // namespace

wb::Expected<DecoderLogits> RunDecoder(const ModelConfig& c, const ModelWeights& weights, std::span<const int> tokens,
                                       LogitPositions positions) {
  auto trace = Run(c, weights, tokens, positions, /*keepLayers=*/false);
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
  return Run(c, weights, tokens, positions, /*keepLayers=*/true);
}

wb::Expected<DecoderTrace> RunDecoderTrace(const WeightSource& source, std::span<const int> tokens,
                                           LogitPositions positions) {
  auto weights = BindWeights(source.config(), source);
  if (!weights) return weights.error();
  return RunDecoderTrace(source.config(), *weights, tokens, positions);
}

}  // namespace ref
