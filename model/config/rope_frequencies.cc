#include "model/config/rope_frequencies.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace wb::model {

namespace {

constexpr double kTwoPi = 2.0 * std::numbers::pi;

void ApplyLlama3Bands(const Rope& r, std::vector<double>& inverse) {
  const double lowWavelength = r.originalContext / r.lowFreqFactor;    // longer than this: slowed
  const double highWavelength = r.originalContext / r.highFreqFactor;  // shorter than this: kept
  for (double& inv : inverse) {
    const double wavelength = kTwoPi / inv;
    if (wavelength < highWavelength) continue;
    if (wavelength > lowWavelength) {
      inv /= r.factor;
      continue;
    }
    const double smooth = (r.originalContext / wavelength - r.lowFreqFactor) / (r.highFreqFactor - r.lowFreqFactor);
    inv = (1.0 - smooth) * inv / r.factor + smooth * inv;
  }
}

// The dimension whose pair turns `rotations` times over the original context.
double YarnCorrectionDim(double rotations, int dim, double base, double originalContext) {
  return dim * std::log(originalContext / (rotations * kTwoPi)) / (2.0 * std::log(base));
}

void ApplyYarn(const Rope& r, int dim, std::vector<double>& inverse) {
  double low = YarnCorrectionDim(r.betaFast, dim, r.theta, r.originalContext);
  double high = YarnCorrectionDim(r.betaSlow, dim, r.theta, r.originalContext);
  if (r.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // linear_ramp_factor's guard against a zero-width ramp
  for (size_t i = 0; i < inverse.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    inverse[i] = inverse[i] / r.factor * ramp + inverse[i] * (1.0 - ramp);
  }
}

}  // namespace

std::vector<double> DefaultInverseFrequencies(int headDim, double base) {
  std::vector<double> inverse(headDim / 2);
  for (int f = 0; f < headDim / 2; ++f) inverse[f] = std::pow(base, -2.0 * f / headDim);
  return inverse;
}

RopeFrequencies ComputeRopeFrequencies(const Rope& rope, int headDim) {
  RopeFrequencies out;
  out.inverse = DefaultInverseFrequencies(headDim, rope.theta);
  if (!rope.frequencyDivisors.empty()) {
    for (size_t i = 0; i < out.inverse.size(); ++i) out.inverse[i] /= rope.frequencyDivisors[i];
    return out;
  }
  switch (rope.scaling) {
    case RopeScaling::kNone: break;
    case RopeScaling::kLinear:
      for (double& inv : out.inverse) inv /= rope.factor;
      break;
    case RopeScaling::kLlama3: ApplyLlama3Bands(rope, out.inverse); break;
    case RopeScaling::kYarn:
      ApplyYarn(rope, headDim, out.inverse);
      out.attentionFactor = rope.attentionFactor;
      break;
  }
  return out;
}

}  // namespace wb::model
