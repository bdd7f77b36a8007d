#include "model/config/config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace wb::model {

bool ModelConfig::anyMoe() const {
  return std::any_of(layers.begin(), layers.end(), [](const LayerRecipe& l) { return l.moe; });
}

bool ModelConfig::anyDense() const {
  return std::any_of(layers.begin(), layers.end(), [](const LayerRecipe& l) { return !l.moe; });
}

std::string_view FamilyName(Family family) {
  switch (family) {
    case Family::kLlama: return "llama";
    case Family::kMistral: return "mistral";
    case Family::kMixtral: return "mixtral";
    case Family::kQwen2: return "qwen2";
    case Family::kQwen3: return "qwen3";
    case Family::kQwen3Moe: return "qwen3_moe";
    case Family::kGemma3Text: return "gemma3_text";
    case Family::kOlmoe: return "olmoe";
  }
  return "?";
}

std::string_view RopeScalingName(RopeScaling scaling) {
  switch (scaling) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kLlama3: return "llama3";
    case RopeScaling::kYarn: return "yarn";
  }
  return "?";
}

namespace {

Status Fail(const ModelConfig& c, const std::string& what) {
  return BadData(fmt::format("{}: {}", c.source, what));
}

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0; }

Status ValidateRope(const ModelConfig& c, const Rope& rope, std::string_view which) {
  if (!PositiveFinite(rope.theta)) return Fail(c, fmt::format("{} theta must be positive, got {}", which, rope.theta));
  if (!PositiveFinite(rope.factor)) {
    return Fail(c, fmt::format("{} scaling factor must be positive, got {}", which, rope.factor));
  }
  if (!PositiveFinite(rope.attentionFactor)) {
    return Fail(c, fmt::format("{} attention factor must be positive, got {}", which, rope.attentionFactor));
  }
  if (rope.scaling == RopeScaling::kLlama3 && rope.frequencyDivisors.empty()) {
    if (!PositiveFinite(rope.lowFreqFactor) || !PositiveFinite(rope.highFreqFactor) ||
        !PositiveFinite(rope.originalContext)) {
      return Fail(c, fmt::format("{} llama3 scaling needs positive low_freq_factor, high_freq_factor and "
                                 "original_max_position_embeddings",
                                 which));
    }
    if (rope.highFreqFactor <= rope.lowFreqFactor) {
      return Fail(c, fmt::format("{} llama3 high_freq_factor ({}) must exceed low_freq_factor ({})", which,
                                 rope.highFreqFactor, rope.lowFreqFactor));
    }
  }
  if (rope.scaling == RopeScaling::kYarn &&
      (!PositiveFinite(rope.originalContext) || !PositiveFinite(rope.betaFast) || !PositiveFinite(rope.betaSlow))) {
    return Fail(c, fmt::format("{} yarn scaling needs positive original context, beta_fast and beta_slow", which));
  }
  if (!rope.frequencyDivisors.empty()) {
    if (rope.frequencyDivisors.size() != static_cast<size_t>(c.headDim / 2)) {
      return Fail(c, fmt::format("{} has {} frequency divisors (rope_freqs), expected headDim/2 = {}", which,
                                 rope.frequencyDivisors.size(), c.headDim / 2));
    }
    for (double d : rope.frequencyDivisors) {
      if (!PositiveFinite(d)) return Fail(c, fmt::format("{} frequency divisor {} is not positive", which, d));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateConfig(const ModelConfig& c) {
  const std::pair<const char*, int> sizes[] = {
      {"vocab", c.vocab}, {"hidden", c.hidden}, {"heads", c.heads}, {"kvHeads", c.kvHeads},
      {"headDim", c.headDim}, {"maxPositions", c.maxPositions}, {"layers", c.layerCount()}};
  for (const auto& [name, value] : sizes) {
    if (value <= 0) return Fail(c, fmt::format("{} must be positive, got {}", name, value));
  }
  // Bounds far above any released model, so that widths and products stay well inside int.
  constexpr int kMaxWidth = 1 << 20;
  constexpr int kMaxVocab = 1 << 26;
  const std::pair<const char*, int> widths[] = {{"hidden", c.hidden},       {"heads", c.heads},
                                                {"headDim", c.headDim},     {"ffn", c.ffn},
                                                {"experts", c.experts},     {"expertFfn", c.expertFfn},
                                                {"layers", c.layerCount()}, {"slidingWindow", c.slidingWindow}};
  for (const auto& [name, value] : widths) {
    if (value > kMaxWidth) return Fail(c, fmt::format("{} is {}, more than the {} the workbook allows", name, value, kMaxWidth));
  }
  if (c.vocab > kMaxVocab) return Fail(c, fmt::format("vocab is {}, more than the {} the workbook allows", c.vocab, kMaxVocab));
  if (static_cast<int64_t>(c.heads) * c.headDim > kMaxWidth) {
    return Fail(c, fmt::format("heads x headDim = {} is more than the {} the workbook allows",
                               static_cast<int64_t>(c.heads) * c.headDim, kMaxWidth));
  }
  if (c.heads % c.kvHeads != 0) {
    return Fail(c, fmt::format("{} query heads do not split evenly into {} key/value heads", c.heads, c.kvHeads));
  }
  if (c.headDim % 2 != 0) return Fail(c, fmt::format("headDim must be even (RoPE rotates pairs), got {}", c.headDim));
  if (c.anyDense() && c.ffn <= 0) return Fail(c, fmt::format("ffn must be positive for dense layers, got {}", c.ffn));
  if (c.anyMoe()) {
    if (c.experts <= 0) return Fail(c, fmt::format("experts must be positive for MoE layers, got {}", c.experts));
    if (c.expertFfn <= 0) return Fail(c, fmt::format("expertFfn must be positive, got {}", c.expertFfn));
    if (c.expertsPerToken < 1 || c.expertsPerToken > c.experts) {
      return Fail(c, fmt::format("experts per token must lie in [1, {}], got {}", c.experts, c.expertsPerToken));
    }
  }
  if (!PositiveFinite(c.rmsEps)) return Fail(c, fmt::format("rms epsilon must be positive, got {}", c.rmsEps));
  if (!PositiveFinite(c.attentionScale)) {
    return Fail(c, fmt::format("attention scale must be positive, got {}", c.attentionScale));
  }
  if (c.finalLogitSoftcap < 0 || !std::isfinite(c.finalLogitSoftcap)) {
    return Fail(c, fmt::format("final logit softcap must be positive or 0 (none), got {}", c.finalLogitSoftcap));
  }
  const bool anySliding =
      std::any_of(c.layers.begin(), c.layers.end(), [](const LayerRecipe& l) { return l.sliding; });
  if (anySliding && c.slidingWindow <= 0) {
    return Fail(c, fmt::format("sliding layers need a positive window, got {}", c.slidingWindow));
  }
  if (Status s = ValidateRope(c, c.rope, "rope"); !s.ok()) return s;
  if (c.hasLocalRope) {
    if (Status s = ValidateRope(c, c.localRope, "local rope"); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace wb::model
