// Stage 5's misconceptions: mistakes of a whole decoder the runner names, each a switch of
// the decoder reference flipped (reference/decoder/decoder_options.h) or the model's config
// or weights changed on a copy. See runner/diagnose/misconception.h for the naming rule.
//
// Contract: DecoderMisconceptionIds() lists the ids (the course self-check requires graded
// hints for each in data/stages.json's misconception_hints); DecoderMisconceptions() the
// entries, each with the checkpoints where it first shows and how to make its variant, which
// returns false when the mistake cannot happen in this model (a QK-norm order without a
// QK-norm, a window without sliding layers) so it is never named there.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "model/config/model_weights.h"
#include "runner/report/report.h"
#include "reference/decoder/decoder_options.h"
#include "stage05_decoder.h"

namespace wb::stage05 {

// A router softmax over the top k logits only gives exactly the renormalised weights
// (p_i / Σ_chosen p_j either way), so that mistake is named as renormalised-top-k.
// The last two ids are not variants of the whole reference but are found by decoder_checks.cc
// on one call: a call's q and k rotated as if its positions started at 0 (cache.size never
// advanced), and the one row a call asking for Logits::kLast gets written where the last
// token's row would be.
inline constexpr std::array<std::string_view, 16> kDecoderMisconceptionIds = {
    "qk-norm-after-rope",      "rope-pairing-for-format",  "window-off-by-one",  "embedding-scale-missing",
    "norm-plus-one-twice",     "renormalised-top-k",       "not-renormalised",   "ties-to-higher-id",
    "untied-head-read-as-tied", "local-base-on-global-layers", "int8-group-straddles-heads",
    "qk-norm-skipped",         "rope-skipped",             "window-on-global-layers",
    "cache-size-not-advanced", "last-row-not-at-row-0"};
inline constexpr std::string_view kCacheSizeNotAdvanced = kDecoderMisconceptionIds[14];
inline constexpr std::string_view kLastRowNotAtRowZero = kDecoderMisconceptionIds[15];

inline std::span<const std::string_view> DecoderMisconceptionIds() { return kDecoderMisconceptionIds; }

struct Variant {
  model::ModelConfig config;
  model::ModelWeights weights;
  ref::DecoderOptions options;
};

struct DecoderMisconception {
  std::string_view id;
  std::vector<std::string_view> showsAt;  // base checkpoint names
  std::string_view sentence;              // "{buffer}" stands for the checkpoint's name
  std::string_view lessonAnchor;
  // Turns the taught variant (the case's model and options) into the mistaken one; false
  // when the mistake cannot show in this model or case.
  bool (*apply)(Variant& variant, CacheType cache);

  // The report's words for checkpoint `buffer` matching this mistake, linking `lessonPath`.
  MisconceptionHit Hit(std::string_view buffer, std::string_view lessonPath) const;
};

std::span<const DecoderMisconception> DecoderMisconceptions();

}  // namespace wb::stage05
