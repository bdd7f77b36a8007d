#include "model/config/hf_rope.h"

#include <cmath>

#include <fmt/format.h>

#include "model/config/first_error.h"

namespace wb::model {

namespace {

// YaRN's default attention factor: 0.1·m·ln(s) + 1 for s > 1, else 1
// (get_mscale in _compute_yarn_parameters, transformers' src/transformers/modeling_rope_utils.py).
double YarnMscale(double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; }

// One parameter set. `set` is the object holding the type and its parameters (rope_scaling,
// rope_parameters or one of its nested sets), or nullptr for "default"; `theta` is already
// resolved.
Expected<Rope> ParseRopeSet(const JsonKeys* set, double theta, int maxPositions) {
  Rope rope;
  rope.theta = theta;
  if (set == nullptr) return rope;
  FirstError e;
  // v4 wrote "type", later versions "rope_type"; either names the scaling.
  const std::string typeKey = set->Has("rope_type") ? "rope_type" : "type";
  const std::string type = e.Take(set->String(typeKey, std::string("default")));
  if (!e.ok()) return e.error();
  if (type == "default") return rope;
  if (type == "linear") {
    rope.scaling = RopeScaling::kLinear;
    rope.factor = e.Take(set->Number("factor"));
  } else if (type == "llama3") {
    // _compute_llama3_parameters reads all four keys; none has a default there.
    rope.scaling = RopeScaling::kLlama3;
    rope.factor = e.Take(set->Number("factor"));
    rope.lowFreqFactor = e.Take(set->Number("low_freq_factor"));
    rope.highFreqFactor = e.Take(set->Number("high_freq_factor"));
    rope.originalContext = e.Take(set->Number("original_max_position_embeddings"));
  } else if (type == "yarn") {
    rope.scaling = RopeScaling::kYarn;
    rope.factor = e.Take(set->Number("factor"));
    rope.originalContext = e.Take(set->Number("original_max_position_embeddings", maxPositions));
    rope.betaFast = e.Take(set->Number("beta_fast", 32.0));
    rope.betaSlow = e.Take(set->Number("beta_slow", 1.0));
    rope.truncate = e.Take(set->Bool("truncate", true));
    const double mscale = e.Take(set->Number("mscale", 0.0));
    const double mscaleAllDim = e.Take(set->Number("mscale_all_dim", 0.0));
    double defaultFactor = YarnMscale(rope.factor, 1.0);
    if (mscale != 0 && mscaleAllDim != 0) {
      defaultFactor = YarnMscale(rope.factor, mscale) / YarnMscale(rope.factor, mscaleAllDim);
    }
    rope.attentionFactor = e.Take(set->Number("attention_factor", defaultFactor));
  } else {
    return set->Wrong(typeKey, fmt::format("\"{}\" is not supported (supported: default, linear, llama3, yarn)",
                                           type));
  }
  if (!e.ok()) return e.error();
  if (!(rope.factor > 0)) return set->Wrong("factor", fmt::format("must be positive, got {}", rope.factor));
  return rope;
}

// A set from the object at `key` of `parent` (absent or null: default), with theta from the
// set's rope_theta, else `theta`.
Expected<Rope> ParseSetAt(const JsonKeys& parent, std::string_view key, double theta, int maxPositions) {
  if (!parent.Has(key)) return ParseRopeSet(nullptr, theta, maxPositions);
  auto set = parent.Object(key);
  if (!set) return set.error();
  auto setTheta = set->Number("rope_theta", theta);
  if (!setTheta) return setTheta.error();
  return ParseRopeSet(&*set, *setTheta, maxPositions);
}

}  // namespace

Expected<HfRope> ParseHfRope(const JsonKeys& root, double defaultTheta, std::optional<double> localTheta,
                             int maxPositions) {
  FirstError e;
  const double topTheta = e.Take(root.Number("rope_theta", defaultTheta));
  const double localBase = localTheta ? e.Take(root.Number("rope_local_base_freq", *localTheta)) : 0.0;
  if (!e.ok()) return e.error();
  if (root.Has("partial_rotary_factor")) {
    const double partial = e.Take(root.Number("partial_rotary_factor"));
    if (!e.ok()) return e.error();
    if (partial != 1.0) return root.Wrong("partial_rotary_factor", "partial rotary embeddings are not supported");
  }

  HfRope out;
  const nlohmann::json* parameters = root.Find("rope_parameters");
  const bool nested = parameters != nullptr && parameters->is_object() &&
                      (parameters->contains("full_attention") || parameters->contains("sliding_attention"));
  if (nested) {
    // Form 3: one set per attention type; a legacy rope_scaling updates full_attention only.
    auto sets = root.Object("rope_parameters");
    if (!sets) return sets.error();
    nlohmann::json full = nlohmann::json::object();
    if (sets->Has("full_attention")) {
      auto fullKeys = sets->Object("full_attention");
      if (!fullKeys) return fullKeys.error();
      full = fullKeys->json();
    }
    if (root.Has("rope_scaling")) {
      auto legacy = root.Object("rope_scaling");
      if (!legacy) return legacy.error();
      full.update(legacy->json());
    }
    JsonKeys fullKeys(full, root.file(), "rope_parameters.full_attention");
    const double fullTheta = e.Take(fullKeys.Number("rope_theta", topTheta));
    if (!e.ok()) return e.error();
    out.global = e.Take(ParseRopeSet(&fullKeys, fullTheta, maxPositions));
    if (localTheta) out.local = e.Take(ParseSetAt(*sets, "sliding_attention", localBase, maxPositions));
  } else if (parameters != nullptr && !parameters->is_null()) {
    // Form 2: one flat set.
    out.global = e.Take(ParseSetAt(root, "rope_parameters", topTheta, maxPositions));
    if (localTheta) out.local = e.Take(ParseRopeSet(nullptr, localBase, maxPositions));
  } else {
    // Form 1: rope_theta + rope_scaling (null or absent: no scaling).
    out.global = e.Take(ParseSetAt(root, "rope_scaling", topTheta, maxPositions));
    if (localTheta) out.local = e.Take(ParseRopeSet(nullptr, localBase, maxPositions));
  }
  if (!e.ok()) return e.error();
  return out;
}

}  // namespace wb::model
