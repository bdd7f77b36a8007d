#include "decode_misconceptions.h"

#include <algorithm>

namespace wb::stage02 {
namespace {

using ref::CallCheckpoint;
using ref::DecodeRecipe;

std::vector<DecodeMisconception> MakeCatalogue() {
  return {
      {"cache-row-within-call", {CallCheckpoint::kCacheOtherRows},
       "This call wrote its keys and values to cache rows 0, 1, ..., counting from its own first token, and "
       "so overwrote rows of earlier positions; token t of a call belongs in row pos + t.",
       "the-cache-row-is-the-position",
       [](DecodeRecipe& r) { r.cacheRow = ref::CacheRow::kWithinCall; }},
      {"keys-cached-before-rope", {CallCheckpoint::kKCache},
       "Your kCache rows hold the keys before RoPE; the cache holds them after it, exactly as your k buffer "
       "does, so each key is rotated once, at its own position, and read as it is from then on.",
       "keys-are-cached-after-rope",
       [](DecodeRecipe& r) { r.cachedKeys = ref::CachedKeys::kBeforeRope; }},
      {"rope-position-within-call", {CallCheckpoint::kQ, CallCheckpoint::kK},
       "Your {buffer} is rotated with the RoPE table row of the token's place in this call (row t); it must "
       "use the token's position in the sequence, row pos + t.",
       "rope-at-the-absolute-position",
       [](DecodeRecipe& r) { r.ropePosition = ref::RopePosition::kWithinCall; }},
      // Stage 1's entry of the same name, with this stage's words: in a one-token call at
      // pos > 0 it looks like row t (row 0 turns by nothing), and only the case's other calls
      // tell the two apart.
      {"rope-not-applied", {CallCheckpoint::kQ, CallCheckpoint::kK},
       "Your {buffer} is not rotated at all: it is the projection as it is, before RoPE, in every call. Rotate "
       "q and k of token t with row pos + t of the tables, in a prefill and in every decode step.",
       "rope-at-the-absolute-position",
       [](DecodeRecipe& r) { r.ropePosition = ref::RopePosition::kNone; },
       "rope-not-applied"},
      // With the rows of the call in the cache, attention without stage 1's causal mask reads
      // exactly these rows: one mistake, named in this stage's words.
      {"attention-beyond-own-position", {CallCheckpoint::kAttnOut},
       "Your attnOut matches attention over every cache row this call has written: in a prefill, the token at "
       "position p must stop at row p, or it reads tokens that come after it.",
       "a-token-attends-to-rows-0-to-p-only",
       [](DecodeRecipe& r) { r.reach = ref::AttentionReach::kWholeCall; },
       "no-causal-mask"},
      {"online-softmax-accumulator-not-rescaled", {CallCheckpoint::kAttnOut},
       "Your attnOut matches an online softmax that rescales its normaliser but not its accumulator when the "
       "running maximum grows: multiply all 64 accumulator values by exp(m_old - m_new) too.",
       "rescale-when-the-maximum-grows",
       [](DecodeRecipe& r) { r.rescale = ref::OnlineRescale::kNormaliserOnly; }},
      {"online-softmax-not-rescaled", {CallCheckpoint::kAttnOut},
       "Your attnOut matches an online softmax that never rescales: when a score exceeds the running maximum, "
       "multiply the normaliser and the accumulator by exp(m_old - m_new) before adding the new term.",
       "rescale-when-the-maximum-grows",
       [](DecodeRecipe& r) { r.rescale = ref::OnlineRescale::kNeither; }},
  };
}

}  // namespace

std::span<const DecodeMisconception> DecodeMisconceptions() {
  static const std::vector<DecodeMisconception> catalogue = MakeCatalogue();
  return catalogue;
}

bool RestatedByStage2(std::string_view blockId) {
  for (const DecodeMisconception& m : DecodeMisconceptions()) {
    if (!m.restates.empty() && m.restates == blockId) return true;
  }
  return false;
}

std::vector<Candidate> DecodeCandidates(
    ref::CallCheckpoint checkpoint, const Tolerance& tolerance, const std::string& lessonPath,
    const std::function<std::optional<MistakenView>(const ref::DecodeRecipe&)>& evaluate,
    const std::function<bool(const DecodeMisconception&)>& consider) {
  std::vector<Candidate> candidates;
  for (const DecodeMisconception& m : DecodeMisconceptions()) {
    if (!m.ShowsAt(checkpoint) || (consider && !consider(m))) continue;
    const std::optional<MistakenView> view = evaluate(m.Flipped());
    if (!view || view->got.empty() || !Matches(view->got, view->expected, tolerance)) continue;
    candidates.push_back({m.Hit(ref::CallCheckpointName(checkpoint), lessonPath),
                          FitOf(view->got, view->expected, tolerance)});
  }
  return candidates;
}

}  // namespace wb::stage02
