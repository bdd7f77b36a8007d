// RoPE frequencies per scaling type, against values worked out by hand from the formulas of
// transformers' src/transformers/modeling_rope_utils.py.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "reference/decoder/rope_frequencies.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_rope_frequencies {

using ref::ComputeRopeFrequencies;
using wb::model::Rope;
using wb::model::RopeScaling;

namespace {

// θ = 1e4 over 8 dimensions: θ^(-2i/8) = 10^-i exactly in value, so the pairs turn at
// 1, 0.1, 0.01, 0.001 radians per position (wavelengths 2π·10^i).
Rope Base() {
  Rope r;
  r.theta = 1e4;
  return r;
}

void CheckClose(double got, double expected) { CHECK(got == doctest::Approx(expected).epsilon(1e-14)); }

}  // namespace

TEST_CASE("default: theta^(-2i/d)") {
  const auto f = ComputeRopeFrequencies(Base(), 8);
  REQUIRE(f.inverse.size() == 4);
  CheckClose(f.inverse[0], 1.0);
  CheckClose(f.inverse[1], 0.1);
  CheckClose(f.inverse[2], 0.01);
  CheckClose(f.inverse[3], 0.001);
  CHECK(f.attentionFactor == 1.0);
}

TEST_CASE("linear: every frequency divided by the factor") {
  Rope r = Base();
  r.scaling = RopeScaling::kLinear;
  r.factor = 2.0;
  const auto f = ComputeRopeFrequencies(r, 8);
  CheckClose(f.inverse[0], 0.5);
  CheckClose(f.inverse[3], 0.0005);
}

TEST_CASE("llama3: short wavelengths kept, long ones divided, the band between blended") {
  Rope r = Base();
  r.scaling = RopeScaling::kLlama3;
  r.factor = 4.0;
  r.lowFreqFactor = 1.0;
  r.highFreqFactor = 4.0;
  r.originalContext = 256.0;  // kept below 64, divided above 256: pairs 0, 1 kept; 2, 3 divided
  auto f = ComputeRopeFrequencies(r, 8);
  CheckClose(f.inverse[0], 1.0);
  CheckClose(f.inverse[1], 0.1);
  CheckClose(f.inverse[2], 0.0025);
  CheckClose(f.inverse[3], 0.00025);
  r.originalContext = 1024.0;  // band [256, 1024]: pair 2 (wavelength 200π ≈ 628) is blended
  f = ComputeRopeFrequencies(r, 8);
  const double s = (1024.0 / (200.0 * std::numbers::pi) - 1.0) / 3.0;  // ≈ 0.2099
  CheckClose(f.inverse[2], 0.01 * ((1.0 - s) / 4.0 + s));
  CheckClose(f.inverse[1], 0.1);
  CheckClose(f.inverse[3], 0.00025);
}

TEST_CASE("llama3 from GGUF: rope_freqs divisors replace the bands") {
  Rope r = Base();
  r.scaling = RopeScaling::kLlama3;
  r.frequencyDivisors = {1.0, 2.0, 4.0, 8.0};
  const auto f = ComputeRopeFrequencies(r, 8);
  CheckClose(f.inverse[1], 0.05);
  CheckClose(f.inverse[3], 0.000125);
}

TEST_CASE("yarn: the ramp between floor(low) and ceil(high), and the attention factor") {
  // d = 16, θ = 1e4, L0 = 4096: low = 16 ln(4096/(64π)) / (2 ln 1e4) ≈ 2.62 -> 2,
  // high = 16 ln(4096/(2π)) / (2 ln 1e4) ≈ 5.63 -> 6; ramp r_i = (i - 2) / 4 clamped.
  Rope r = Base();
  r.scaling = RopeScaling::kYarn;
  r.factor = 4.0;
  r.originalContext = 4096.0;
  r.attentionFactor = 1.25;
  const auto f = ComputeRopeFrequencies(r, 16);
  const auto plain = ComputeRopeFrequencies(Base(), 16);
  const double ramp[8] = {0, 0, 0, 0.25, 0.5, 0.75, 1, 1};
  for (int i = 0; i < 8; ++i) {
    CHECK_MESSAGE(f.inverse[i] == doctest::Approx(plain.inverse[i] * (ramp[i] / 4.0 + (1.0 - ramp[i]))).epsilon(1e-14),
                  "pair ", i);
  }
  CHECK(f.attentionFactor == 1.25);
  r.truncate = false;  // low 2.62, high 5.63: pair 4 sits at (4 - 2.62) / 3.01 of the ramp
  const auto g = ComputeRopeFrequencies(r, 16);
  const double low = 16 * std::log(4096.0 / (64 * std::numbers::pi)) / (2 * std::log(1e4));
  const double high = 16 * std::log(4096.0 / (2 * std::numbers::pi)) / (2 * std::log(1e4));
  const double t = (4 - low) / (high - low);
  CHECK(g.inverse[4] == doctest::Approx(plain.inverse[4] * (t / 4.0 + 1.0 - t)).epsilon(1e-14));
  CHECK(g.inverse[4] != doctest::Approx(f.inverse[4]).epsilon(1e-6));
}

}  // namespace test_rope_frequencies
