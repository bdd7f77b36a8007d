#include "misconceptions.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wb {
namespace {

using ref::BlockRecipe;
using ref::Checkpoint;

std::vector<BlockMisconception> MakeCatalogue() {
  return {
      {"rope-adjacent-pairs", {Checkpoint::kQ, Checkpoint::kK},
       "Your {buffer} matches RoPE on adjacent pairs (2f, 2f+1); this block rotates the pairs (f, f+32) of "
       "each 64-value head.",
       "rope-rotates-the-pairs-f-f32",
       [](BlockRecipe& r) { r.ropePairing = ref::RopePairing::kAdjacent; }},
      {"rope-reversed", {Checkpoint::kQ, Checkpoint::kK},
       "Your {buffer} matches RoPE turned the wrong way (the sine's sign flipped); a pair (a, b) becomes "
       "(a cos - b sin, a sin + b cos).",
       "rope-rotates-the-pairs-f-f32",
       [](BlockRecipe& r) { r.ropeDirection = ref::RopeDirection::kReversed; }},
      {"rope-not-applied", {Checkpoint::kQ, Checkpoint::kK},
       "Your {buffer} is not rotated at all: it is the projection as it is, before RoPE. Rotate every head of "
       "q and k with its token's row of the tables; without it, attention cannot tell one position from another.",
       "rope-rotates-the-pairs-f-f32",
       [](BlockRecipe& r) { r.ropeTargets = ref::RopeTargets::kNone; }},
      {"rope-on-v", {Checkpoint::kV},
       "Your v has been rotated by RoPE; only q and k are rotated, v stays as projected.",
       "rope-rotates-the-pairs-f-f32",
       [](BlockRecipe& r) { r.ropeTargets = ref::RopeTargets::kQueryKeyValue; }},
      {"gqa-interleaved", {Checkpoint::kAttnOut},
       "Your attnOut matches query head h reading key/value head h % 2; this block maps it to h / 4 "
       "(heads 0-3 read KV head 0, heads 4-7 read KV head 1).",
       "query-head-h-reads-kv-head-h4",
       [](BlockRecipe& r) { r.headMap = ref::HeadMap::kInterleaved; }},
      {"no-causal-mask", {Checkpoint::kAttnOut},
       "Your attnOut matches attention without the causal mask: token t also looks at later tokens; its keys "
       "must stop at j = t.",
       "causal-mask-and-a-stable-softmax",
       [](BlockRecipe& r) { r.mask = ref::Mask::kNone; }},
      {"mask-excludes-self", {Checkpoint::kAttnOut},
       "Your attnOut matches attention that stops one key short (j < t instead of j <= t): each token must "
       "attend to itself too.",
       "causal-mask-and-a-stable-softmax",
       [](BlockRecipe& r) { r.mask = ref::Mask::kExcludesSelf; }},
      {"no-max-subtraction", {Checkpoint::kAttnOut},
       "Your attnOut overflows exactly like a softmax that does not subtract the row maximum: exp of a large "
       "score is inf in float. Subtract the largest score before exponentiating.",
       "causal-mask-and-a-stable-softmax",
       [](BlockRecipe& r) { r.softmax = ref::Softmax::kNaiveFloat; }},
      {"no-score-scale", {Checkpoint::kAttnOut},
       "Your attnOut matches attention without the 1/sqrt(64) = 1/8 scale on the scores.",
       "causal-mask-and-a-stable-softmax",
       [](BlockRecipe& r) { r.scoreScale = ref::ScoreScale::kMissing; }},
      {"missing-epsilon", {Checkpoint::kNorm1, Checkpoint::kNorm2},
       "Your {buffer} matches RMSNorm without RMS_EPS under the square root; it only shows on rows as small "
       "as these, where it keeps the division from blowing up.",
       "rmsnorm",
       [](BlockRecipe& r) { r.normEpsilon = ref::NormEpsilon::kMissing; }},
      {"missing-norm-weight", {Checkpoint::kNorm1, Checkpoint::kNorm2},
       "Your {buffer} is normalised but not multiplied by its weight vector (rms1 for norm1, rms2 for norm2).",
       "rmsnorm",
       [](BlockRecipe& r) { r.normWeight = ref::NormWeight::kMissing; }},
      {"residual-from-normalised", {Checkpoint::kResidual1},
       "Your residual1 adds the attention output to norm1, the normalised stream; in a pre-norm block it is "
       "added to x, the block's input.",
       "pre-norm-the-residual-stream-is-never-normalised",
       [](BlockRecipe& r) { r.residualSource = ref::ResidualSource::kNormalised; }},
      {"residual1-without-x", {Checkpoint::kResidual1},
       "Your residual1 is WO . attnOut alone: the residual add is missing. Add x, the block's input, to it: "
       "the attention half adds to the stream, it does not replace it.",
       "pre-norm-the-residual-stream-is-never-normalised",
       [](BlockRecipe& r) { r.residualSource = ref::ResidualSource::kNone; }},
      {"silu-on-up", {Checkpoint::kFfnOut},
       "Your ffnOut applies SiLU to the up projection; SiLU belongs on the gate: SiLU(gate) * up.",
       "the-gated-ffn",
       [](BlockRecipe& r) { r.gatedBranch = ref::GatedBranch::kUp; }},
      {"output-from-input", {Checkpoint::kOutput},
       "Your output adds the FFN result to x instead of residual1, so the attention half is lost from the "
       "stream.",
       "pre-norm-the-residual-stream-is-never-normalised",
       [](BlockRecipe& r) { r.outputResidual = ref::OutputResidual::kInput; }},
      {"output-without-residual1", {Checkpoint::kOutput},
       "Your output is ffnOut alone: the residual add is missing. Add residual1 to it: the FFN half adds to "
       "the stream, it does not replace it.",
       "pre-norm-the-residual-stream-is-never-normalised",
       [](BlockRecipe& r) { r.outputResidual = ref::OutputResidual::kNone; }},
  };
}

}  // namespace

std::span<const BlockMisconception> BlockMisconceptions() {
  static const std::vector<BlockMisconception> catalogue = MakeCatalogue();
  return catalogue;
}

std::vector<Candidate> BlockCandidates(
    ref::Checkpoint checkpoint, std::span<const float> got, const Tolerance& tolerance,
    const std::string& lessonPath,
    const std::function<std::vector<double>(const ref::BlockRecipe&)>& compute,
    const std::function<bool(const BlockMisconception&)>& consider) {
  std::vector<Candidate> candidates;
  for (const BlockMisconception& m : BlockMisconceptions()) {
    if (!m.ShowsAt(checkpoint) || (consider && !consider(m))) continue;
    const std::vector<double> predicted = compute(m.Flipped());
    if (!Matches(got, predicted, tolerance)) continue;
    candidates.push_back({m.Hit(ref::CheckpointName(checkpoint), lessonPath), FitOf(got, predicted, tolerance)});
  }
  return candidates;
}

Recognition Diagnose(
    ref::Checkpoint checkpoint, std::span<const float> got, const Tolerance& tolerance,
    const std::string& lessonPath,
    const std::function<std::vector<double>(const ref::BlockRecipe&)>& compute) {
  return Choose(BlockCandidates(checkpoint, got, tolerance, lessonPath, compute));
}

double FitOf(std::span<const float> got, std::span<const double> predicted, const Tolerance& tolerance) {
  const double atol = tolerance.absoluteOfRms * Rms(predicted);
  double worst = 0;
  for (size_t i = 0; i < predicted.size() && i < got.size(); ++i) {
    const double g = got[i];
    const double p = predicted[i];
    if (!std::isfinite(g) || !std::isfinite(p)) {
      // As Matches: the same non-finite value agrees; under a NaN prediction, any non-finite or 0 does.
      const bool agrees = std::isnan(p) ? (!std::isfinite(g) || g == 0)
                                        : std::isinf(p) && std::isinf(g) && std::signbit(p) == std::signbit(g);
      if (!agrees) return std::numeric_limits<double>::infinity();
      continue;
    }
    const double allowed = atol + tolerance.relative * std::fabs(p);
    const double error = std::fabs(g - p);
    worst = std::max(worst, allowed > 0 ? error / allowed : (error > 0 ? std::numeric_limits<double>::infinity() : 0));
  }
  return worst;
}

Recognition Choose(std::vector<Candidate> candidates) {
  Recognition recognition;
  if (candidates.empty()) return recognition;
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.fit < b.fit; });
  // Entries with the same id (one mistake that two catalogues both know) are one candidate.
  std::vector<Candidate> distinct;
  for (auto& c : candidates) {
    const bool seen = std::any_of(distinct.begin(), distinct.end(),
                                  [&c](const Candidate& d) { return d.hit.id == c.hit.id; });
    if (!seen) distinct.push_back(std::move(c));
  }
  const bool alone = distinct.size() == 1;
  if (alone || (distinct[1].fit > kLooseMatch && distinct[0].fit * kClearlyCloser < distinct[1].fit)) {
    recognition.hit = std::move(distinct[0].hit);
    return recognition;
  }
  for (const auto& c : distinct) recognition.tied.push_back(c.hit.id);
  return recognition;
}

}  // namespace wb
