// RoPE properties of the reference: rotations keep norms, and q.k depends only on the
// distance between the two positions. Both pairings, both directions.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "common/splitmix64.h"
#include "reference/block/ops.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace rope_test {

namespace {

std::vector<double> RandomVector(uint64_t seed, size_t n) {
  wb::SplitMix64 rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = rng.NextSigned();
  return v;
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// One head of `dim` values rotated as if it sat at `position`.
std::vector<double> Rotated(std::vector<double> head, int position, ref::RopePairing pairing,
                            ref::RopeDirection direction = ref::RopeDirection::kForward) {
  const int dim = static_cast<int>(head.size());
  const auto inverse = ref::DefaultInverseFrequencies(dim, 10000.0);
  const ref::RopeTable table = ref::MakeRopeTable(position, 1, inverse);
  ref::ApplyRope(head, 1, 1, dim, table.cos, table.sin, pairing, direction);
  return head;
}

}  // namespace

TEST_CASE("the table holds cos and sin of t * 10000^(-f/32) for a 64-value head") {
  const auto inverse = ref::DefaultInverseFrequencies(64, 10000.0);
  const ref::RopeTable table = ref::MakeRopeTable(0, 9, inverse);
  for (int t : {0, 1, 8}) {
    for (int f : {0, 1, 17, 31}) {
      const double angle = t * std::pow(10000.0, -f / 32.0);
      CHECK(table.cos[t * 32 + f] == doctest::Approx(std::cos(angle)).epsilon(1e-15));
      CHECK(table.sin[t * 32 + f] == doctest::Approx(std::sin(angle)).epsilon(1e-15));
    }
  }
}

TEST_CASE("RoPE preserves the norm of every rotated pair") {
  for (auto pairing : {ref::RopePairing::kHalfSplit, ref::RopePairing::kAdjacent}) {
    const auto head = RandomVector(7, 64);
    const auto turned = Rotated(head, 123, pairing);
    for (int f = 0; f < 32; ++f) {
      const int a = pairing == ref::RopePairing::kHalfSplit ? f : 2 * f;
      const int b = pairing == ref::RopePairing::kHalfSplit ? f + 32 : 2 * f + 1;
      const double before = head[a] * head[a] + head[b] * head[b];
      const double after = turned[a] * turned[a] + turned[b] * turned[b];
      CHECK(after == doctest::Approx(before).epsilon(1e-13));
    }
    CHECK(turned != head);  // it did rotate something
  }
}

TEST_CASE("q.k after RoPE depends only on the distance between the positions") {
  const auto q = RandomVector(1, 64);
  const auto k = RandomVector(2, 64);
  for (auto pairing : {ref::RopePairing::kHalfSplit, ref::RopePairing::kAdjacent}) {
    const double base = Dot(Rotated(q, 7, pairing), Rotated(k, 3, pairing));
    for (int shift : {1, 10, 1000}) {
      CHECK(Dot(Rotated(q, 7 + shift, pairing), Rotated(k, 3 + shift, pairing)) ==
            doctest::Approx(base).epsilon(1e-10));
    }
    // A different distance gives a different score: the property is not vacuous.
    CHECK(std::fabs(Dot(Rotated(q, 8, pairing), Rotated(k, 3, pairing)) - base) > 1e-6);
  }
}

TEST_CASE("the two pairings and the two directions are different rotations") {
  const auto head = RandomVector(3, 64);
  const auto half = Rotated(head, 5, ref::RopePairing::kHalfSplit);
  const auto adjacent = Rotated(head, 5, ref::RopePairing::kAdjacent);
  const auto reversed = Rotated(head, 5, ref::RopePairing::kHalfSplit, ref::RopeDirection::kReversed);
  CHECK(half != adjacent);
  CHECK(half != reversed);
  // Turning back undoes turning forward.
  const auto back = Rotated(half, 5, ref::RopePairing::kHalfSplit, ref::RopeDirection::kReversed);
  for (size_t i = 0; i < head.size(); ++i) CHECK(back[i] == doctest::Approx(head[i]).epsilon(1e-13));
}

TEST_CASE("position 0 is the identity rotation") {
  const auto head = RandomVector(4, 64);
  CHECK(Rotated(head, 0, ref::RopePairing::kHalfSplit) == head);
}

}  // namespace rope_test
