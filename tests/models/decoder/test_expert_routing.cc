// Top-k routing: softmax over all experts first, ties to the lower id, optional renorm.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "reference/decoder/expert_routing.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_expert_routing {

using ref::RouteToken;

TEST_CASE("equal probabilities go to the lower expert id") {
  const std::vector<double> logits = {1.0, 3.0, 3.0, 0.0};
  const auto two = RouteToken(logits, 2, false);
  REQUIRE(two.size() == 2);
  CHECK(two[0].expert == 1);
  CHECK(two[1].expert == 2);
  const auto one = RouteToken(logits, 1, false);
  CHECK(one[0].expert == 1);
  const std::vector<double> flat = {0.5, 0.5, 0.5, 0.5};
  const auto all = RouteToken(flat, 3, false);
  CHECK(all[0].expert == 0);
  CHECK(all[1].expert == 1);
  CHECK(all[2].expert == 2);
  CHECK(all[2].weight == doctest::Approx(0.25).epsilon(1e-15));
}

TEST_CASE("softmax over all experts, then top-k; renormalisation divides by the chosen sum") {
  // exp(log k) = k: probabilities 0.1, 0.2, 0.3, 0.4.
  const std::vector<double> logits = {std::log(1.0), std::log(2.0), std::log(3.0), std::log(4.0)};
  const auto raw = RouteToken(logits, 2, false);
  CHECK(raw[0].expert == 3);
  CHECK(raw[1].expert == 2);
  CHECK(raw[0].weight == doctest::Approx(0.4).epsilon(1e-14));
  CHECK(raw[1].weight == doctest::Approx(0.3).epsilon(1e-14));
  const auto renormalised = RouteToken(logits, 2, true);
  CHECK(renormalised[0].weight == doctest::Approx(4.0 / 7.0).epsilon(1e-14));
  CHECK(renormalised[1].weight == doctest::Approx(3.0 / 7.0).epsilon(1e-14));
}

TEST_CASE("large logits do not overflow") {
  const std::vector<double> logits = {1000.0, 999.0, -1000.0};
  const auto r = RouteToken(logits, 2, false);
  CHECK(r[0].expert == 0);
  CHECK(r[0].weight == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-14));
  CHECK(std::isfinite(r[1].weight));
}

TEST_CASE("a RoutingRule: the default is RouteToken's rule, bit for bit") {
  const std::vector<double> logits = {0.3, -1.2, 2.5, 0.7, 2.5, -0.1};
  for (bool renormalise : {false, true}) {
    const auto plain = RouteToken(logits, 3, renormalise);
    const auto ruled = RouteToken(logits, 3, renormalise, ref::RoutingRule{});
    REQUIRE(plain.size() == ruled.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      CHECK(plain[i].expert == ruled[i].expert);
      CHECK(plain[i].weight == ruled[i].weight);
    }
  }
}

TEST_CASE("tiesToHigherId: of equal probabilities the higher id first") {
  ref::RoutingRule rule;
  rule.tiesToHigherId = true;
  const std::vector<double> logits = {1.0, 3.0, 3.0, 0.0};
  const auto two = RouteToken(logits, 2, false, rule);
  CHECK(two[0].expert == 2);
  CHECK(two[1].expert == 1);
  const auto one = RouteToken(logits, 1, false, rule);
  CHECK(one[0].expert == 2);
  const std::vector<double> flat = {0.5, 0.5, 0.5, 0.5};
  const auto all = RouteToken(flat, 3, false, rule);
  CHECK(all[0].expert == 3);
  CHECK(all[1].expert == 2);
  CHECK(all[2].expert == 1);
}

TEST_CASE("softmaxOverTopK: the k largest logits, softmax over those only") {
  ref::RoutingRule rule;
  rule.softmaxOverTopK = true;
  // Logits log 1 .. log 4: the top two are experts 3 and 2, with weights 4/7 and 3/7.
  const std::vector<double> logits = {std::log(1.0), std::log(2.0), std::log(3.0), std::log(4.0)};
  const auto r = RouteToken(logits, 2, false, rule);
  CHECK(r[0].expert == 3);
  CHECK(r[1].expert == 2);
  CHECK(r[0].weight == doctest::Approx(4.0 / 7.0).epsilon(1e-14));
  CHECK(r[1].weight == doctest::Approx(3.0 / 7.0).epsilon(1e-14));
  // With renormalisation it is the teaching rule's routing, to rounding.
  const auto renormalised = RouteToken(logits, 2, true, rule);
  const auto right = RouteToken(logits, 2, true);
  CHECK(renormalised[0].weight == doctest::Approx(right[0].weight).epsilon(1e-14));
}

}  // namespace test_expert_routing
