#include "decoder_misconceptions.h"

#include <string>

#include <fmt/format.h>

namespace wb::stage05 {

namespace {

using model::ModelConfig;
using model::QkNorm;
using model::RopePairing;

bool AnySliding(const ModelConfig& c) {
  for (const auto& layer : c.layers) {
    if (layer.sliding) return true;
  }
  return false;
}

}  // namespace

MisconceptionHit DecoderMisconception::Hit(std::string_view buffer, std::string_view lessonPath) const {
  std::string text(sentence);
  const std::string_view placeholder = "{buffer}";
  for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + buffer.size())) {
    text.replace(at, placeholder.size(), buffer);
  }
  return MisconceptionHit{std::string(id), text, fmt::format("{}#{}", lessonPath, lessonAnchor)};
}

std::span<const DecoderMisconception> DecoderMisconceptions() {
  static const std::vector<DecoderMisconception> kEntries = {
      {kDecoderMisconceptionIds[0], {"q", "k"},
       "Your {buffer} matches RoPE applied before the QK-norm: the norm comes first, on the projection, then the rotation.",
       "qk-norm-after-rope",
       [](Variant& v, CacheType) {
         if (v.config.qkNorm == QkNorm::kNone) return false;
         v.options.qkNormAfterRope = true;
         return true;
       }},
      {kDecoderMisconceptionIds[1], {"q", "k"},
       "Your {buffer} matches RoPE on the other pairing: this file's q and k rows pair dimensions as its format says "
       "(config.ropePairing), adjacent (2i, 2i+1) for a GGUF llama-family file, halves (i, i + d/2) otherwise.",
       "rope-pairing-for-format",
       [](Variant& v, CacheType) {
         v.config.ropePairing = v.config.ropePairing == RopePairing::kHalfSplit ? RopePairing::kAdjacent
                                                                                : RopePairing::kHalfSplit;
         return true;
       }},
      {kDecoderMisconceptionIds[2], {"attnOut"},
       "Your {buffer} matches a sliding window one key too wide: a sliding layer's query at p sees p - W < j <= p, W keys "
       "with its own.",
       "window-off-by-one",
       [](Variant& v, CacheType) {
         if (!AnySliding(v.config)) return false;
         v.options.windowOffByOne = true;
         return true;
       }},
      {kDecoderMisconceptionIds[3], {"embedding"},
       "Your {buffer} matches the embedding rows without Gemma's scale: this model multiplies them by sqrt(hidden).",
       "embedding-scale-missing",
       [](Variant& v, CacheType) {
         if (v.config.embeddingScale != model::EmbeddingScale::kSqrtHidden) return false;
         v.options.embeddingScaleMissing = true;
         return true;
       }},
      {kDecoderMisconceptionIds[4], {"norm1", "norm2", "q", "k", "residual1", "ffnOut", "finalNorm"},
       "Your {buffer} matches RMSNorm with 1 added to the weight: the model library already gives (1 + w) where the "
       "model's norm means it, so adding 1 again applies Gemma's shift twice.",
       "norm-plus-one-twice",
       [](Variant& v, CacheType) {
         v.options.normWeightPlusOneAgain = true;
         return true;
       }},
      {kDecoderMisconceptionIds[5], {"experts", "ffnOut"},
       "Your {buffer} matches the chosen experts' weights summing to 1, as renormalising them does, or a softmax over "
       "the top k logits only (the two give the same weights): this model takes the softmax over all experts and "
       "keeps the chosen ones' probabilities as they are (config.renormaliseTopK is false).",
       "renormalised-top-k",
       [](Variant& v, CacheType) {
         if (!v.config.anyMoe() || v.config.renormaliseTopK) return false;
         v.config.renormaliseTopK = true;
         return true;
       }},
      {kDecoderMisconceptionIds[6], {"experts", "ffnOut"},
       "Your {buffer} matches the chosen experts' probabilities used as they are: this model divides them by their sum "
       "(config.renormaliseTopK).",
       "not-renormalised",
       [](Variant& v, CacheType) {
         if (!v.config.anyMoe() || !v.config.renormaliseTopK) return false;
         v.config.renormaliseTopK = false;
         return true;
       }},
      {kDecoderMisconceptionIds[7], {"experts"},
       "Your {buffer} matches ties between experts going to the higher id: of equal probabilities the lower id is chosen.",
       "ties-to-higher-id",
       [](Variant& v, CacheType) {
         if (!v.config.anyMoe()) return false;
         v.options.tiesToHigherId = true;
         return true;
       }},
      {kDecoderMisconceptionIds[8], {"logits"},
       "Your {buffer} matches logits from the embedding matrix: this model has its own head (output.weight), "
       "model.weights.head.",
       "untied-head-read-as-tied",
       [](Variant& v, CacheType) {
         if (v.config.tiedHead) return false;
         v.weights.head = v.weights.embedding;
         return true;
       }},
      {kDecoderMisconceptionIds[9], {"q", "k"},
       "Your {buffer} matches the local RoPE base on a global layer: only sliding layers use localRope.",
       "local-base-on-global-layers",
       [](Variant& v, CacheType) {
         if (!v.config.hasLocalRope) return false;
         v.options.localBaseOnAllLayers = true;
         return true;
       }},
      {kDecoderMisconceptionIds[10], {"kCache", "vCache", "attnOut"},
       "Your {buffer} matches int8 rows whose groups straddle two heads (groups of 32 values, or of the whole row when it "
       "is narrower): a group is the largest power of two dividing head_dim, at most 32, so each head has its own "
       "scales.",
       "int8-group-straddles-heads",
       [](Variant& v, CacheType cache) {
         // The likeliest wrong group: 32 values whatever head_dim is, or all of a narrower row.
         int straddling = 32;
         while (straddling > v.config.kvWidth()) straddling /= 2;
         if (cache != CacheType::kInt8 || straddling <= Int8GroupSize(v.config.headDim)) return false;
         v.options.cache.group = straddling;
         return true;
       }},
      {kDecoderMisconceptionIds[11], {"q", "k"},
       "Your {buffer} matches q and k rotated without their QK-norm: this model normalises each head of q and k "
       "(config.qkNorm) with its own weights before RoPE.",
       "qk-norm-skipped",
       [](Variant& v, CacheType) {
         if (v.config.qkNorm == QkNorm::kNone) return false;
         v.options.qkNormSkipped = true;
         return true;
       }},
      {kDecoderMisconceptionIds[12], {"q", "k"},
       "Your {buffer} matches the projection before RoPE: q and k are checked once rotated, so rotate each head's "
       "pairs by its position (TODO 5) before the check can pass.",
       "rope-skipped",
       [](Variant& v, CacheType) {
         v.options.ropeNotApplied = true;
         return true;
       }},
      {kDecoderMisconceptionIds[13], {"attnOut"},
       "Your {buffer} matches the sliding window on a global layer: only the layers config.layers[l].sliding marks "
       "see the last W positions; every other layer sees every position.",
       "window-on-global-layers",
       [](Variant& v, CacheType) {
         bool global = false;
         for (const auto& layer : v.config.layers) global = global || !layer.sliding;
         if (!AnySliding(v.config) || !global) return false;
         v.options.windowOnAllLayers = true;
         return true;
       }},
  };
  return kEntries;
}

}  // namespace wb::stage05
