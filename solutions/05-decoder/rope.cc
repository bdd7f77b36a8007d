// Rotary position embeddings (RoFormer, Su et al., 2021): each pair of a q or k head turns by
// an angle proportional to the position, so a score q_p · k_j depends on p - j only.
//
// The frequencies come with the model (Model::rope, Model::localRope: model/config/
// rope_frequencies.h, the scaling of transformers' modeling_rope_utils.py already applied);
// this file turns them into angles for the call's positions and rotates the heads.
#include <cmath>
#include <cstddef>

#include "decoder_parts.h"

namespace decoder_parts {

void RopeAngles(const wb::model::RopeFrequencies& rope, int firstPosition, int n, float* cos, float* sin) {
  const int pairs = static_cast<int>(rope.inverse.size());
  for (int i = 0; i < n; ++i) {
    for (int f = 0; f < pairs; ++f) {
      // The angle in double: at position 100000 a float angle is off by up to 2^-8 radians
      // (half the spacing of floats there), and cos and sin would carry that error into every
      // score. In double it is exact to ~1e-11; only cos and sin are rounded, once.
      const double angle = static_cast<double>(firstPosition + i) * rope.inverse[f];
      const size_t at = static_cast<size_t>(i) * pairs + f;
      // YaRN scales cos and sin by its attention factor (1 for every other scaling), which
      // scales every score by its square: transformers multiplies the tables, as here.
      cos[at] = static_cast<float>(std::cos(angle) * rope.attentionFactor);
      sin[at] = static_cast<float>(std::sin(angle) * rope.attentionFactor);
    }
  }
}

void RotateHeads(float* x, int n, int heads, int headDim, const float* cos, const float* sin,
                 wb::model::RopePairing pairing) {
  const int pairs = headDim / 2;
  // Which values pair up. transformers' rotate_half pairs value f with f + hd/2 (the halves
  // of the head); llama.cpp's converter permutes a llama's q and k rows so the same pairs sit
  // side by side, (2f, 2f + 1), and its GGUF files are rotated that way (ggml's "NORM" rope).
  // Either way the rotation of a pair is the same; only the addresses differ.
  const int firstStride = pairing == wb::model::RopePairing::kHalfSplit ? 1 : 2;
  const int secondOffset = pairing == wb::model::RopePairing::kHalfSplit ? pairs : 1;
  for (int i = 0; i < n; ++i) {
    const float* c = cos + static_cast<size_t>(i) * pairs;
    const float* s = sin + static_cast<size_t>(i) * pairs;
    for (int h = 0; h < heads; ++h) {
      float* head = x + (static_cast<size_t>(i) * heads + h) * headDim;
      for (int f = 0; f < pairs; ++f) {
        float& first = head[f * firstStride];
        float& second = head[f * firstStride + secondOffset];
        const float a = first;  // both old values are read before either is written
        const float b = second;
        first = a * c[f] - b * s[f];
        second = a * s[f] + b * c[f];
      }
    }
  }
}

}  // namespace decoder_parts
