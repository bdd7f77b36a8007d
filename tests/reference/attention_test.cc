// Attention properties of the reference: one token's weight is exactly 1, the GQA map,
// the causal mask, max subtraction, the window.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "common/splitmix64.h"
#include "reference/block/ops.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace attention_test {

namespace {

std::vector<double> RandomVector(uint64_t seed, size_t n, double scale = 1.0) {
  wb::SplitMix64 rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = rng.NextSigned() * scale;
  return v;
}

struct Attention {
  ref::BlockShape shape = ref::Stage1Shape();
  ref::BlockRecipe recipe;
  std::vector<double> Run(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                          int window = 0) const {
    const int tokens = static_cast<int>(q.size()) / shape.qWidth();
    std::vector<double> out(q.size());
    ref::Attend(q, k, v, {.queries = tokens, .firstQueryPosition = 0, .keys = tokens, .window = window}, shape,
                recipe, out);
    return out;
  }
};

}  // namespace

TEST_CASE("a single token attends to itself with weight exactly 1") {
  Attention a;
  const auto q = RandomVector(1, 512, 50.0);  // large scores change nothing: exp(0) / exp(0)
  const auto k = RandomVector(2, 128, 50.0);
  const auto v = RandomVector(3, 128);
  const auto out = a.Run(q, k, v);
  for (int h = 0; h < 8; ++h) {
    for (int c = 0; c < 64; ++c) CHECK(out[h * 64 + c] == v[(h / 4) * 64 + c]);  // bit for bit
  }
}

TEST_CASE("query head h reads key/value head h / 4; the interleaved map reads h % 2") {
  CHECK(ref::KvHeadFor(0, ref::Stage1Shape(), ref::HeadMap::kGrouped) == 0);
  CHECK(ref::KvHeadFor(3, ref::Stage1Shape(), ref::HeadMap::kGrouped) == 0);
  CHECK(ref::KvHeadFor(4, ref::Stage1Shape(), ref::HeadMap::kGrouped) == 1);
  CHECK(ref::KvHeadFor(7, ref::Stage1Shape(), ref::HeadMap::kGrouped) == 1);
  CHECK(ref::KvHeadFor(1, ref::Stage1Shape(), ref::HeadMap::kInterleaved) == 1);
  CHECK(ref::KvHeadFor(6, ref::Stage1Shape(), ref::HeadMap::kInterleaved) == 0);
  // Through Attend: KV head 0 holds 1s and KV head 1 holds 2s.
  Attention a;
  std::vector<double> v(128, 1.0);
  for (int c = 64; c < 128; ++c) v[c] = 2.0;
  const auto out = a.Run(RandomVector(4, 512), RandomVector(5, 128), v);
  for (int h = 0; h < 8; ++h) CHECK(out[h * 64] == (h < 4 ? 1.0 : 2.0));
}

TEST_CASE("the causal mask: later tokens never change earlier outputs") {
  Attention a;
  const int T = 5;
  auto q = RandomVector(6, T * 512);
  auto k = RandomVector(7, T * 128);
  auto v = RandomVector(8, T * 128);
  const auto before = a.Run(q, k, v);
  for (int c = 0; c < 128; ++c) {
    k[4 * 128 + c] += 3.0;  // change the last token's key and value
    v[4 * 128 + c] -= 3.0;
  }
  const auto after = a.Run(q, k, v);
  for (int i = 0; i < 4 * 512; ++i) CHECK(after[i] == before[i]);
  bool lastChanged = false;
  for (int i = 4 * 512; i < 5 * 512; ++i) lastChanged = lastChanged || after[i] != before[i];
  CHECK(lastChanged);
  // Without the mask the first token does see the change.
  a.recipe.mask = ref::Mask::kNone;
  CHECK(a.Run(q, k, v)[0] != doctest::Approx(before[0]));
}

TEST_CASE("max subtraction keeps huge scores finite; the naive float softmax overflows") {
  Attention a;
  const int T = 3;
  const auto q = RandomVector(9, T * 512, 40.0);  // scores in the hundreds
  const auto k = RandomVector(10, T * 128, 40.0);
  const auto v = RandomVector(11, T * 128);
  for (double x : a.Run(q, k, v)) CHECK(std::isfinite(x));
  a.recipe.softmax = ref::Softmax::kNaiveFloat;
  int nonFinite = 0;
  for (double x : a.Run(q, k, v)) nonFinite += std::isfinite(x) ? 0 : 1;
  CHECK(nonFinite > 0);
}

TEST_CASE("a sliding window shows a query exactly the keys p - W < j <= p") {
  Attention a;
  const int T = 6;
  const auto q = RandomVector(12, T * 512);
  const auto k = RandomVector(13, T * 128);
  // Value rows that identify their position: v[j] = j everywhere.
  std::vector<double> v(T * 128);
  for (int j = 0; j < T; ++j) {
    for (int c = 0; c < 128; ++c) v[j * 128 + c] = j;
  }
  const auto out = a.Run(q, k, v, /*window=*/2);
  // Token 5 sees keys 4 and 5 only, so its output is a mix of 4 and 5.
  CHECK(out[5 * 512] > 4.0);
  CHECK(out[5 * 512] < 5.0);
  // Token 0 sees itself only.
  CHECK(out[0] == 0.0);
}

TEST_CASE("the excludes-self mask leaves the first token with no key at all") {
  Attention a;
  a.recipe.mask = ref::Mask::kExcludesSelf;
  const auto out = a.Run(RandomVector(14, 2 * 512), RandomVector(15, 2 * 128), RandomVector(16, 2 * 128));
  CHECK(std::isnan(out[0]));
  CHECK(std::isfinite(out[512]));
}

}  // namespace attention_test
