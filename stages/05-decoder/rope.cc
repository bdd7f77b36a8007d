// Rotary position embeddings: each position's cos and sin, and the rotation of q and k.
//
// The frequencies come with the model: Model::rope and Model::localRope hold each pair's
// inverse frequency, the model's scaling (linear, llama3, YaRN) already applied, and the
// factor cos and sin are multiplied by (model/config/rope_frequencies.h).
#include <cmath>
#include <cstddef>

#include "decoder_parts.h"

namespace decoder_parts {

void RopeAngles(const wb::model::RopeFrequencies& rope, int firstPosition, int n, float* cos, float* sin) {
  // TODO 5a: cos and sin (n x pairs each, pairs = rope.inverse.size()): row i, pair f holds
  // the cosine and the sine of the angle (firstPosition + i) * rope.inverse[f], each times
  // rope.attentionFactor. The angle, its cos and its sin in double; only the results are
  // stored as float.
}

void RotateHeads(float* x, int n, int heads, int headDim, const float* cos, const float* sin,
                 wb::model::RopePairing pairing) {
  // TODO 5b: rotates in place every one of the `heads` heads of each of the n rows of x (rows
  // of heads * headDim), pair f of a head in row i by row i, entry f of cos and sin (rows of
  // headDim / 2): (a, b) becomes (a * cos - b * sin, a * sin + b * cos). The pair is values
  // (f, f + headDim / 2) of the head for RopePairing::kHalfSplit, (2f, 2f + 1) for kAdjacent.
}

}  // namespace decoder_parts
