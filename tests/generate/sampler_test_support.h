// What the sampler tests share: settings with every filter off, logits made from hand-chosen
// probabilities, and counts of what many draws pick.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runner/generate/sampler.h"

namespace generate_test {

// Temperature 1 and no filter: a draw follows softmax(logits) exactly.
inline wb::generate::SamplerSettings PlainSettings(uint64_t seed = 0) {
  wb::generate::SamplerSettings settings;
  settings.temperature = 1.0f;
  settings.topK = 0;
  settings.topP = 1.0f;
  settings.minP = 0.0f;
  settings.repeatPenalty = 1.0f;
  settings.seed = seed;
  return settings;
}

// Logits whose softmax is `probabilities` (they sum to 1): log p, scaled by `scale` so that a
// temperature of `scale` gives the same distribution back.
template <size_t N>
std::vector<float> LogitsOf(const std::array<double, N>& probabilities, double scale = 1.0) {
  std::vector<float> logits;
  for (const double p : probabilities) logits.push_back(static_cast<float>(scale * std::log(p)));
  return logits;
}

// How often each token is picked in `draws` calls of one sampler, with no history.
inline std::vector<int> CountDraws(const wb::generate::SamplerSettings& settings, const std::vector<float>& logits,
                                   int draws) {
  wb::generate::Sampler sampler(settings, static_cast<int>(logits.size()));
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < draws; ++i) ++counts.at(static_cast<size_t>(sampler.Sample(logits, {})));
  return counts;
}

}  // namespace generate_test
