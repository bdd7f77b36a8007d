// ValidateSamplerSettings: the defaults and the edges of every range pass; a value outside
// one is a usage error that names the flag and the value.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "runner/generate/sampler.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_sampler_settings {

using wb::generate::SamplerSettings;
using wb::generate::ValidateSamplerSettings;

namespace {

std::string ErrorOf(const SamplerSettings& settings) {
  const wb::Status status = ValidateSamplerSettings(settings);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().kind == wb::ErrorKind::kBadUsage);
  return status.error().message;
}

}  // namespace

TEST_CASE("the defaults and the edges of the ranges pass") {
  CHECK(ValidateSamplerSettings(SamplerSettings{}).ok());
  SamplerSettings edges;
  edges.temperature = 0.0f;
  edges.topK = 0;
  edges.topP = 1.0f;
  edges.minP = 0.0f;
  edges.repeatPenalty = 1e-3f;
  edges.repeatLastN = 0;
  CHECK(ValidateSamplerSettings(edges).ok());
}

TEST_CASE("each bad value names its flag") {
  SamplerSettings s;
  s.topP = 1.5f;
  CHECK(ErrorOf(s) == "--top-p must be in (0, 1], got 1.5");
  s.topP = 0.0f;
  CHECK(ErrorOf(s) == "--top-p must be in (0, 1], got 0");

  s = {};
  s.minP = 1.0f;
  CHECK(ErrorOf(s) == "--min-p must be in [0, 1), got 1");
  s.minP = -0.25f;
  CHECK(ErrorOf(s) == "--min-p must be in [0, 1), got -0.25");

  s = {};
  s.temperature = -0.5f;
  CHECK(ErrorOf(s) == "--temperature must be >= 0 (0 picks the most likely token), got -0.5");
  s.temperature = std::numeric_limits<float>::quiet_NaN();
  CHECK(ErrorOf(s).starts_with("--temperature must be >= 0"));

  s = {};
  s.topK = -1;
  CHECK(ErrorOf(s) == "--top-k must be >= 0 (0 turns it off), got -1");

  s = {};
  s.repeatPenalty = 0.0f;
  CHECK(ErrorOf(s) == "--repeat-penalty must be > 0 (1 turns it off), got 0");

  s = {};
  s.repeatLastN = -1;
  CHECK(ErrorOf(s) == "--repeat-last-n must be >= 0, got -1");
}

}  // namespace test_sampler_settings
