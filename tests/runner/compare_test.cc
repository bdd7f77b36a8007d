// Comparison and observation: tolerance arithmetic, poison detection, NaN handling, and
// what the runner says it can see.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "runner/compare/compare.h"
#include "runner/diagnose/observations.h"
#include "runner/isolation/shared_layout.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace compare_test {

namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

const wb::Tolerance kTight{.absoluteOfRms = 1e-3, .relative = 1e-3};

}  // namespace

TEST_CASE("elements pass within atol + rtol |expected|, with atol scaled by the RMS") {
  const std::vector<double> expected = {3.0, -4.0, 0.0, 5.0};  // rms = sqrt(50/4) = 3.5355
  std::vector<float> got = {3.0f, -4.0f, 0.0f, 5.0f};
  got[2] = 0.0035f;  // atol = 3.5355e-3: inside
  auto c = wb::Compare(got, expected, kTight);
  CHECK(c.pass());
  CHECK(c.atol == doctest::Approx(3.5355339e-3));
  got[2] = 0.0036f;  // outside
  c = wb::Compare(got, expected, kTight);
  CHECK(c.failing == 1);
  CHECK(c.hasWorst);
  CHECK(c.worstIndex == 2);
  CHECK(c.maxAbsError == doctest::Approx(0.0036));
}

TEST_CASE("poisoned, poison-derived, NaN and inf elements are told apart") {
  const std::vector<double> expected(6, 1.0);
  const std::vector<float> got = {1.0f, FromBits(wb::shm::kPoisonWord), FromBits(wb::shm::kPoisonQuietedWord),
                                  NAN, INFINITY, 1.0f};
  const auto c = wb::Compare(got, expected, kTight);
  CHECK(c.failing == 4);
  CHECK(c.unwritten == 1);
  CHECK(c.fromUnwritten == 1);
  CHECK(c.nanCount == 1);
  CHECK(c.infCount == 1);
  CHECK(c.worstIndex == 1);  // the first broken element is reported first
  CHECK(wb::StateOf(got[1]) == wb::ElementState::kUnwritten);
  CHECK(wb::StateOf(-got[2]) == wb::ElementState::kFromUnwritten);
}

TEST_CASE("arithmetic on the poison gives the quieted poison on this machine") {
  volatile float poison = FromBits(wb::shm::kPoisonWord);
  const float sum = poison + 1.0f;
  CHECK(wb::StateOf(sum) == wb::ElementState::kFromUnwritten);
}

TEST_CASE("Matches accepts an undefined expectation only with a non-finite or zero value") {
  const std::vector<double> expected = {NAN, 1.0};
  CHECK(wb::Matches(std::vector<float>{NAN, 1.0f}, expected, kTight));
  CHECK(wb::Matches(std::vector<float>{0.0f, 1.0f}, expected, kTight));
  CHECK(!wb::Matches(std::vector<float>{0.5f, 1.0f}, expected, kTight));
  CHECK(!wb::Matches(std::vector<float>{FromBits(wb::shm::kPoisonWord), 1.0f}, std::vector<double>{1.0, 1.0}, kTight));
}

TEST_CASE("observations: tokens, heads, a common factor, flipped signs, unwritten elements") {
  // 4 tokens x 2 heads of 2 values.
  std::vector<double> expected(16);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = 1.0 + 0.1 * static_cast<double>(i);
  const wb::BufferGeometry heads{.rows = 4, .width = 4, .headDim = 2};

  std::vector<float> got(expected.begin(), expected.end());
  for (int c = 0; c < 4; ++c) got[3 * 4 + c] *= 2.0f;  // token 3 only, every value doubled
  const std::string tokenThree = wb::Observe(got, expected, kTight, heads);
  CHECK(tokenThree.find("only token 3 is off") != std::string::npos);
  CHECK(tokenThree.find("2 times the expected value") != std::string::npos);

  got.assign(expected.begin(), expected.end());
  for (int t = 0; t < 4; ++t) {
    for (int c = 2; c < 4; ++c) got[t * 4 + c] = -got[t * 4 + c];  // head 1 negated
  }
  const std::string headOne = wb::Observe(got, expected, kTight, heads);
  CHECK(headOne.find("only head 1 is off") != std::string::npos);
  CHECK(headOne.find("the signs are flipped") != std::string::npos);

  got.assign(expected.begin(), expected.end());
  for (int t = 0; t < 4; ++t) got[t * 4 + 3] = FromBits(wb::shm::kPoisonWord);
  CHECK(wb::Observe(got, expected, kTight, heads) == "4 elements never written (head 1 of every token)");

  got.assign(expected.begin(), expected.end());
  for (int i = 8; i < 16; ++i) got[i] = NAN;
  CHECK(wb::Observe(got, expected, kTight, heads) == "NaN or inf from token 2 on");
}

TEST_CASE("ranges are compressed") {
  CHECK(wb::Ranges({0, 1, 2, 5, 7, 8}) == "0-2, 5, 7-8");
  CHECK(wb::Ranges({4}) == "4");
}

}  // namespace compare_test
