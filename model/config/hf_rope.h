// RoPE parameters from a Hugging Face config.json, in transformers v4 and v5 forms.
//
// Contract: ParseHfRope reads
//   1. v4: top-level rope_theta + rope_scaling {type | rope_type, factor, ...};
//   2. v5: rope_parameters {rope_type, rope_theta, ...};
//   3. Gemma 3 v5 nested: rope_parameters {full_attention: {...}, sliding_attention: {...}},
//      a legacy top-level rope_scaling merged into full_attention only;
// with `defaultTheta` when no theta is given. For Gemma 3 (`localTheta` set) it also returns
// the sliding layers' set: sliding_attention, or rope_local_base_freq (default 10000) with no
// scaling (v4's rotary_emb_local). Scaling types default, linear, llama3 and yarn are
// accepted; anything else (dynamic, longrope, ...) is an Error naming the key, and so is a
// missing parameter a type requires.
#pragma once

#include <optional>

#include "model/config/config.h"
#include "model/config/json_keys.h"

namespace wb::model {

struct HfRope {
  Rope global;
  std::optional<Rope> local;
};

// root: the whole config.json. maxPositions: YaRN's fallback for the original context.
// localTheta: Gemma 3's default local base; nullopt for families with one RoPE.
Expected<HfRope> ParseHfRope(const JsonKeys& root, double defaultTheta, std::optional<double> localTheta,
                             int maxPositions);

}  // namespace wb::model
