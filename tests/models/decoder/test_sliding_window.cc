// Sliding windows: a query at p sees keys p - W < j <= p, in the attention operator and
// through the decoder on the Mistral and Gemma fixtures.
#include <doctest/doctest.h>

#include <vector>

#include "decoder_test_support.h"
#include "reference/block/ops.h"
#include "reference/fixtures/make_fixtures.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_sliding_window {

namespace {

std::vector<int> Prompt(const std::string& family) {
  auto g = ref::fixtures::ParseGoldens(wbtest::ReadFile(wbtest::FixtureDir(family) / "goldens.json"), family);
  return g.ok() ? g->tokens : std::vector<int>{};
}

bool RowsEqual(const ref::DecoderLogits& a, const ref::DecoderLogits& b, int r) {
  return wbtest::RowOf(a, r) == wbtest::RowOf(b, r);
}

}  // namespace

TEST_CASE("Attend with window W: exactly the keys p - W < j <= p, W of them once p >= W - 1") {
  // Equal scores (q = 0) and one-hot values: the output is the visible keys' average, so
  // output[j] > 0 exactly for the visible j.
  const int t = 7, w = 3;
  ref::BlockShape shape;
  shape.model = t;
  shape.qHeads = shape.kvHeads = 1;
  shape.headDim = t;
  shape.attentionScale = 1.0;
  std::vector<double> q(t * t, 0.0), k(t * t, 0.0), v(t * t, 0.0), out(t * t);
  for (int j = 0; j < t; ++j) v[j * t + j] = 1.0;
  ref::AttentionSpan span{t, 0, t, w};
  ref::Attend(q, k, v, span, shape, ref::BlockRecipe{}, out);
  for (int p = 0; p < t; ++p) {
    const int visible = std::min(p + 1, w);
    for (int j = 0; j < t; ++j) {
      const bool seen = p - w < j && j <= p;
      CHECK_MESSAGE(out[p * t + j] == doctest::Approx(seen ? 1.0 / visible : 0.0).epsilon(1e-15), "p ", p, " j ", j);
    }
  }
}

TEST_CASE("Mistral fixture: window 4 vs 5 changes position 4 first; a window >= T is no window") {
  const std::string path = (wbtest::FixtureDir("mistral") / "hf").string();
  const std::vector<int> tokens = Prompt("mistral");
  REQUIRE(tokens.size() == 12);
  auto w4 = wbtest::AllLogits(path, tokens);
  auto w5 = wbtest::AllLogitsWith(path, tokens, [](wb::model::ModelConfig& c) { c.slidingWindow = 5; });
  REQUIRE(w4.ok());
  REQUIRE(w5.ok());
  // Positions 0..3 see at most 4 keys either way; position 4 sees 1..4 with W = 4, 0..4 with W = 5.
  for (int p = 0; p < 4; ++p) CHECK_MESSAGE(RowsEqual(*w4, *w5, p), "position ", p);
  CHECK(wbtest::MaxAbsDiff(wbtest::RowOf(*w4, 4), wbtest::RowOf(*w5, 4)) > 1e-6);
  auto w12 = wbtest::AllLogitsWith(path, tokens, [](wb::model::ModelConfig& c) { c.slidingWindow = 12; });
  auto none = wbtest::AllLogitsWith(path, tokens, [](wb::model::ModelConfig& c) {
    for (auto& l : c.layers) l.sliding = false;
  });
  REQUIRE(w12.ok());
  REQUIRE(none.ok());
  CHECK(w12->values == none->values);
  CHECK(wbtest::MaxAbsDiff(w4->values, none->values) > 1e-3);
}

TEST_CASE("Gemma fixture: the sliding layers' window shows from position 4") {
  const std::string path = (wbtest::FixtureDir("gemma3_text") / "model.gguf").string();
  const std::vector<int> tokens = Prompt("gemma3_text");
  auto base = wbtest::AllLogits(path, tokens);
  auto noWindow = wbtest::AllLogitsWith(path, tokens, [](wb::model::ModelConfig& c) {
    for (auto& l : c.layers) l.sliding = false;
  });
  auto wider = wbtest::AllLogitsWith(path, tokens, [](wb::model::ModelConfig& c) { c.slidingWindow = 5; });
  REQUIRE(base.ok());
  REQUIRE(noWindow.ok());
  REQUIRE(wider.ok());
  // Unsliding also swaps the local RoPE base for the global one, so every position moves...
  CHECK(wbtest::MaxAbsDiff(base->values, noWindow->values) > 1e-3);
  // ...while a wider window moves nothing before position 4.
  for (int p = 0; p < 4; ++p) CHECK_MESSAGE(RowsEqual(*base, *wider, p), "position ", p);
  CHECK(wbtest::MaxAbsDiff(wbtest::RowOf(*base, 4), wbtest::RowOf(*wider, 4)) > 1e-6);
}

}  // namespace test_sliding_window
