// The draw itself: the documented use of SplitMix64, the same seed giving the same tokens,
// and frequencies over many draws matching the probabilities.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runner/generate/sampler.h"
#include "tests/generate/sampler_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_sampler_draws {

using generate_test::CountDraws;
using generate_test::LogitsOf;
using generate_test::PlainSettings;
using wb::generate::Sampler;
using wb::generate::SamplerSettings;

namespace {

std::vector<int32_t> Sequence(uint64_t seed, const std::vector<float>& logits, int length) {
  Sampler sampler(PlainSettings(seed), static_cast<int>(logits.size()));
  std::vector<int32_t> tokens;
  for (int i = 0; i < length; ++i) tokens.push_back(sampler.Sample(logits, {}));
  return tokens;
}

}  // namespace

TEST_CASE("the draw is the documented one: u from the top 53 bits of SplitMix64") {
  // Four equal logits: every weight is exactly exp(0) = 1, the total 4, the order by id, so
  // the token is floor(4u). SplitMix64 from seed 0 (Steele, Lea and Flood 2014; the values of
  // Vigna's reference splitmix64.c) begins 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4,
  // 0x06c45d188009454f, 0xf88bb8a8724c81ec: u = 0.883..., 0.431..., 0.026..., 0.970...,
  // so 4u = 3.53, 1.73, 0.11, 3.88.
  const std::vector<float> uniform = {0.25f, 0.25f, 0.25f, 0.25f};
  CHECK(Sequence(0, uniform, 4) == std::vector<int32_t>{3, 1, 0, 3});
}

TEST_CASE("the same seed gives the same tokens; another seed, others") {
  const std::vector<float> uniform(8, 0.0f);
  const std::vector<int32_t> first = Sequence(42, uniform, 64);
  CHECK(Sequence(42, uniform, 64) == first);
  // Two seeds agreeing on 64 draws out of 8 tokens would happen with probability 8^-64.
  CHECK(Sequence(43, uniform, 64) != first);
  CHECK(Sequence(0, uniform, 64) != first);
}

TEST_CASE("frequencies over 20000 draws match the probabilities") {
  constexpr int kDraws = 20000;
  const std::array probabilities = {0.1, 0.4, 0.2, 0.3};
  // The same distribution twice: logits log p at temperature 1, and 2 log p at temperature 2.
  for (const double temperature : {1.0, 2.0}) {
    CAPTURE(temperature);
    SamplerSettings settings = PlainSettings(2024);
    settings.temperature = static_cast<float>(temperature);
    const std::vector<int> counts = CountDraws(settings, LogitsOf(probabilities, temperature), kDraws);
    for (size_t id = 0; id < probabilities.size(); ++id) {
      CAPTURE(id);
      const double p = probabilities[id];
      const double standardError = std::sqrt(p * (1.0 - p) / kDraws);
      const double frequency = static_cast<double>(counts[id]) / kDraws;
      CHECK(std::abs(frequency - p) < 4.0 * standardError);
    }
  }
}

}  // namespace test_sampler_draws
