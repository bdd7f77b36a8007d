// Each step of the sampler's chain on small hand-made logits: greedy, top-k, a vanishing
// temperature, min-p, top-p and the repetition penalty. Every expectation is worked out by
// hand from the rule as sampler.h states it.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "runner/generate/sampler.h"
#include "tests/generate/sampler_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_sampler_rules {

using generate_test::CountDraws;
using generate_test::LogitsOf;
using generate_test::PlainSettings;
using wb::generate::Sampler;
using wb::generate::SamplerSettings;

namespace {

int32_t Greedy(const std::vector<float>& logits, const std::vector<int32_t>& history, float penalty,
               int lastN = 64) {
  SamplerSettings settings = PlainSettings();
  settings.temperature = 0.0f;
  settings.repeatPenalty = penalty;
  settings.repeatLastN = lastN;
  Sampler sampler(settings, static_cast<int>(logits.size()));
  return sampler.Sample(logits, history);
}

// The tokens ever picked in 4000 draws.
std::set<int32_t> DrawnSet(const SamplerSettings& settings, const std::vector<float>& logits) {
  const std::vector<int> counts = CountDraws(settings, logits, 4000);
  std::set<int32_t> drawn;
  for (size_t id = 0; id < counts.size(); ++id) {
    if (counts[id] > 0) drawn.insert(static_cast<int32_t>(id));
  }
  return drawn;
}

// Probabilities 0.15, 0.5, 0.05, 0.3 for ids 0..3, so the sorted order is 1, 3, 0, 2 with
// running sums 0.5, 0.8, 0.95, 1.
const std::vector<float> kShuffled = LogitsOf(std::array{0.15, 0.5, 0.05, 0.3});

}  // namespace

TEST_CASE("greedy: the argmax, ties to the lower id") {
  CHECK(Greedy({1.0f, 3.0f, 3.0f, 2.0f}, {}, 1.0f) == 1);
  CHECK(Greedy({5.0f, -1.0f, 5.0f}, {}, 1.0f) == 0);
  CHECK(Greedy({-4.0f, -3.0f, -2.5f, -2.5f}, {}, 1.0f) == 2);
}

TEST_CASE("top-k 1: the argmax whatever the seed") {
  const std::vector<float> logits = {0.5f, 1.9f, 2.0f, -1.0f};
  for (uint64_t seed = 0; seed < 100; ++seed) {
    SamplerSettings settings = PlainSettings(seed);
    settings.topK = 1;
    Sampler sampler(settings, 4);
    CHECK(sampler.Sample(logits, {}) == 2);
  }
}

TEST_CASE("top-k 2 keeps the two highest logits") {
  SamplerSettings settings = PlainSettings(5);
  settings.topK = 2;
  CHECK(DrawnSet(settings, kShuffled) == std::set<int32_t>{1, 3});
}

TEST_CASE("a temperature near 0: the argmax whatever the seed") {
  // The runner-up is 0.1 below the top: at T = 1e-3 its weight is e^-100, about 4e-44.
  const std::vector<float> logits = {0.5f, 2.0f, 1.9f, -1.0f};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    SamplerSettings settings = PlainSettings(seed);
    settings.temperature = 1e-3f;
    Sampler sampler(settings, 4);
    CHECK(sampler.Sample(logits, {}) == 1);
  }
}

TEST_CASE("min-p drops what is below minP times the top probability") {
  // Top probability 0.5; minP 0.2 puts the floor at 0.1: id 2 (0.05) goes, id 0 (0.15) stays.
  SamplerSettings settings = PlainSettings(11);
  settings.minP = 0.2f;
  const std::vector<int> counts = CountDraws(settings, kShuffled, 4000);
  CHECK(counts[2] == 0);
  CHECK(counts[0] > 0);
  CHECK(counts[1] > 0);
  CHECK(counts[3] > 0);
  // Without min-p the same draws do reach id 2 (0.05 of 4000 is about 200).
  CHECK(CountDraws(PlainSettings(11), kShuffled, 4000)[2] > 0);
  // minP 0.7 puts the floor at 0.35: only id 1 stays.
  settings.minP = 0.7f;
  CHECK(DrawnSet(settings, kShuffled) == std::set<int32_t>{1});
}

TEST_CASE("top-p keeps the smallest prefix whose mass reaches p") {
  SamplerSettings settings = PlainSettings(3);
  settings.topP = 0.4f;  // 0.5 >= 0.4 at once
  CHECK(DrawnSet(settings, kShuffled) == std::set<int32_t>{1});
  settings.topP = 0.75f;  // 0.5 < 0.75 <= 0.8
  CHECK(DrawnSet(settings, kShuffled) == std::set<int32_t>{1, 3});
  settings.topP = 0.9f;  // 0.8 < 0.9 <= 0.95
  CHECK(DrawnSet(settings, kShuffled) == std::set<int32_t>{0, 1, 3});
  settings.topP = 1.0f;
  CHECK(DrawnSet(settings, kShuffled) == std::set<int32_t>{0, 1, 2, 3});
}

TEST_CASE("top-p: reaching p exactly is enough") {
  // Four equal logits weigh exactly 1 each (total 4), in id order: p = 0.5 is reached exactly
  // by the first two, p = 0.25 by the first one, with no rounding anywhere.
  const std::vector<float> uniform(4, 0.0f);
  SamplerSettings settings = PlainSettings(9);
  settings.topP = 0.5f;
  CHECK(DrawnSet(settings, uniform) == std::set<int32_t>{0, 1});
  settings.topP = 0.25f;
  CHECK(DrawnSet(settings, uniform) == std::set<int32_t>{0});
}

TEST_CASE("repetition penalty: a positive logit is divided, a negative one multiplied") {
  // 2.0 / 2 = 1.0 falls below 1.5.
  CHECK(Greedy({2.0f, 1.5f, -1.0f}, {}, 2.0f) == 0);
  CHECK(Greedy({2.0f, 1.5f, -1.0f}, {0}, 2.0f) == 1);
  // -1.0 * 2 = -2.0 falls below -1.5 (dividing would have raised it to -0.5).
  CHECK(Greedy({-1.0f, -1.5f, -3.0f}, {0}, 2.0f) == 1);
  // -1.0 * 1.2 = -1.2 stays above -1.5.
  CHECK(Greedy({-1.0f, -1.5f, -3.0f}, {0}, 1.2f) == 0);
  // A penalty below 1 rewards repetition: -1.5 * 0.5 = -0.75 rises above -1.0.
  CHECK(Greedy({-1.0f, -1.5f, -3.0f}, {1}, 0.5f) == 1);
}

TEST_CASE("repetition penalty: once per distinct token, over the last repeatLastN") {
  // Penalised once, 2.0 -> 1.0 still beats 0.9; twice (0.5) it would not.
  CHECK(Greedy({2.0f, 0.9f}, {0, 0, 0}, 2.0f) == 0);
  // History {0, 2}: with repeatLastN 1 only id 2 is penalised and id 0 (2.0) wins; with 2,
  // id 0 drops to 1.0 and id 1 (1.5) wins.
  CHECK(Greedy({2.0f, 1.5f, 1.2f}, {0, 2}, 2.0f, 1) == 0);
  CHECK(Greedy({2.0f, 1.5f, 1.2f}, {0, 2}, 2.0f, 2) == 1);
  CHECK(Greedy({2.0f, 1.5f, 1.2f}, {0, 2}, 2.0f, 0) == 0);
  // A sampler used twice penalises from the history it is given, not from an earlier call.
  SamplerSettings settings = PlainSettings();
  settings.temperature = 0.0f;
  settings.repeatPenalty = 2.0f;
  Sampler sampler(settings, 3);
  const std::vector<float> logits = {2.0f, 1.5f, 1.2f};
  const std::vector<int32_t> first = {0};
  CHECK(sampler.Sample(logits, first) == 1);
  CHECK(sampler.Sample(logits, {}) == 0);
}

}  // namespace test_sampler_rules
