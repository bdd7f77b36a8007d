// Per-pair RoPE frequencies of a ModelConfig's Rope, in float64 (transformers'
// src/transformers/modeling_rope_utils.py).
//
// Contract: ComputeRopeFrequencies(rope, headDim) returns inverse frequencies for the
// headDim/2 pairs and the factor cos and sin are multiplied by:
//   default  inv_i = θ^(-2i/d)                                 (_compute_default_rope_parameters)
//   linear   inv_i / factor                                    (_compute_linear_scaling_...)
//   llama3   by wavelength 2π/inv_i: below L0/hff kept, above L0/lff divided by factor, in
//            between (1 - s)·inv/factor + s·inv with s = (L0/wavelen - lff)/(hff - lff)
//            (_compute_llama3_parameters); or, from a GGUF, inv_i / rope_freqs[i]
//   yarn     inv_i/factor·r_i + inv_i·(1 - r_i), r_i = clamp((i - low)/(high - low), 0, 1),
//            low/high = floor/ceil of d·ln(L0/(2π·β))/(2·ln θ) for β = beta_fast/beta_slow,
//            clamped to [0, d - 1]; cos/sin times rope.attentionFactor (_compute_yarn_...)
// with d = headDim, all in double (transformers computes them in f32; see families.md).
// It is part of the model library because both sides need the same table: the reference
// decoder, and the stage-5 decoder a student writes, which is given it as provided code
// (position p's pair i turns by p · inverse[i] radians).
#pragma once

#include <vector>

#include "model/config/config.h"

namespace wb::model {

struct RopeFrequencies {
  std::vector<double> inverse;   // headDim / 2 entries
  double attentionFactor = 1.0;  // multiplies cos and sin
};

// θ^(-2i/headDim) for i in [0, headDim/2): the unscaled frequencies.
std::vector<double> DefaultInverseFrequencies(int headDim, double base);

RopeFrequencies ComputeRopeFrequencies(const Rope& rope, int headDim);

}  // namespace wb::model
