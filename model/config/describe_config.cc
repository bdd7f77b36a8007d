// DescribeConfig: the sizes and switches of a ModelConfig as text, one labelled line each.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/config/config.h"

namespace wb::model {

namespace {

std::string LayerList(const ModelConfig& c, bool (*pick)(const LayerRecipe&)) {
  std::vector<std::string> ids;
  for (int i = 0; i < c.layerCount(); ++i) {
    if (pick(c.layers[i])) ids.push_back(std::to_string(i));
  }
  if (ids.empty()) return "none";
  if (static_cast<int>(ids.size()) == c.layerCount()) return "all";
  return fmt::format("{}", fmt::join(ids, " "));
}

std::string DescribeRope(const Rope& r) {
  std::string text = fmt::format("theta {}", r.theta);
  switch (r.scaling) {
    case RopeScaling::kNone: break;
    case RopeScaling::kLinear: text += fmt::format(", linear scaling x{}", r.factor); break;
    case RopeScaling::kLlama3:
      if (!r.frequencyDivisors.empty()) {
        text += fmt::format(", llama3 scaling from rope_freqs divisors [{}]", fmt::join(r.frequencyDivisors, ", "));
      } else {
        text += fmt::format(", llama3 scaling x{} (low {}, high {}, original context {})", r.factor,
                            r.lowFreqFactor, r.highFreqFactor, r.originalContext);
      }
      break;
    case RopeScaling::kYarn:
      text += fmt::format(", yarn scaling x{} (original context {}, beta {}/{}, {}, cos/sin x{:.6g})", r.factor,
                          r.originalContext, r.betaFast, r.betaSlow, r.truncate ? "truncated" : "not truncated",
                          r.attentionFactor);
      break;
  }
  return text;
}

}  // namespace

std::string DescribeConfig(const ModelConfig& c) {
  std::string out;
  auto line = [&out](std::string_view label, const std::string& text) {
    out += fmt::format("  {:<11} {}\n", label, text);
  };
  line("family", fmt::format("{} ({} config from {})", FamilyName(c.family),
                             c.format == WeightFormat::kGguf ? "GGUF" : "Hugging Face", c.source));
  line("sizes", fmt::format("vocab {}, hidden {}, {} layers, {} heads over {} kv heads of {}, context {}", c.vocab,
                            c.hidden, c.layerCount(), c.heads, c.kvHeads, c.headDim, c.maxPositions));
  const std::string act = c.activation == Activation::kSilu ? "SiLU" : "GELU-tanh";
  if (c.anyDense()) line("ffn", fmt::format("{}-gated, width {}, layers: {}", act, c.ffn,
                                            LayerList(c, [](const LayerRecipe& l) { return !l.moe; })));
  if (c.anyMoe()) {
    line("experts", fmt::format("{}-gated, {} experts of width {}, top {} of a softmax over all, {}; layers: {}",
                                act, c.experts, c.expertFfn, c.expertsPerToken,
                                c.renormaliseTopK ? "renormalised" : "not renormalised",
                                LayerList(c, [](const LayerRecipe& l) { return l.moe; })));
  }
  line("norms", fmt::format("{}, RMSNorm eps {:.7g}, {}",
                            c.blockNorms == BlockNorms::kSandwich ? "sandwich (4 per layer)" : "pre-norm (2 per layer)",
                            c.rmsEps,
                            c.normShift == NormShift::kAddOne ? "weights used as (1 + w), 1 added in f32 on load"
                                                              : "weights used as stored"));
  const char* qkNorm = c.qkNorm == QkNorm::kNone      ? "none"
                       : c.qkNorm == QkNorm::kPerHead ? "per head, before RoPE"
                                                      : "over the whole q and k projections, before RoPE";
  line("attention", fmt::format("scale {:.9g}, q/k/v bias {}, o bias {}, QK-norm {}", c.attentionScale,
                                c.qkvBias ? "yes" : "no", c.outputBias ? "yes" : "no", qkNorm));
  line("rope", fmt::format("{} pairing, {}",
                           c.ropePairing == RopePairing::kHalfSplit ? "half (i, i + headDim/2)" : "interleaved (2i, 2i + 1)",
                           DescribeRope(c.rope)));
  if (c.hasLocalRope) line("local rope", fmt::format("sliding layers: {}", DescribeRope(c.localRope)));
  const std::string sliding = LayerList(c, [](const LayerRecipe& l) { return l.sliding; });
  line("window", sliding == "none" ? std::string("none: every layer sees every earlier position")
                                   : fmt::format("{} positions (p - {} < j <= p); sliding layers: {}",
                                                 c.slidingWindow, c.slidingWindow, sliding));
  line("embedding", c.embeddingScale == EmbeddingScale::kSqrtHidden
                        ? fmt::format("scaled by sqrt({}) = {:.9g}", c.hidden, std::sqrt(static_cast<double>(c.hidden)))
                        : std::string("unscaled"));
  line("head", c.tiedHead ? "tied to the embedding matrix" : "its own output matrix");
  if (c.finalLogitSoftcap > 0) line("logits", fmt::format("softcapped: {} tanh(x / {})", c.finalLogitSoftcap,
                                                          c.finalLogitSoftcap));
  return out;
}

}  // namespace wb::model
