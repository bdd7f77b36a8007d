#include "misconceptions.h"

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

std::optional<MisconceptionHit> Diagnose(
    ref::Checkpoint checkpoint, std::span<const float> got, const Tolerance& tolerance,
    const std::string& lessonPath,
    const std::function<std::vector<double>(const ref::BlockRecipe&)>& compute) {
  for (const BlockMisconception& m : BlockMisconceptions()) {
    if (!m.ShowsAt(checkpoint)) continue;
    if (Matches(got, compute(m.Flipped()), tolerance)) return m.Hit(ref::CheckpointName(checkpoint), lessonPath);
  }
  return std::nullopt;
}

}  // namespace wb
