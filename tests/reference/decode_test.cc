// The stage-2 reference: a sequence split into calls over a cache gives the whole
// sequence's buffers, the one-pass softmax is the softmax, and each switch of the decode
// recipe changes what it claims to change, and only where the lesson says it shows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/splitmix64.h"
#include "contracts/stage02_decode.h"
#include "reference/block/block.h"
#include "reference/block/ops.h"
#include "reference/decode/call_checkpoints.h"
#include "reference/decode/decode.h"
#include "reference/gen/block_data.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace decode_test {

namespace {

using ref::Checkpoint;

std::vector<double> RandomVector(uint64_t seed, size_t n, double scale = 1.0) {
  wb::SplitMix64 rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = rng.NextSigned() * scale;
  return v;
}

double MaxDifference(std::span<const double> a, std::span<const double> b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(a[i] - b[i]);
    if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d;
  }
  return worst;
}

// A sequence of `tokens` rows, its tables for every cache position, and the weights.
struct Sequence {
  ref::BlockShape shape = ref::Stage1Shape();
  std::vector<float> weights;
  std::vector<double> x, cos, sin;

  explicit Sequence(int tokens) {
    weights = ref::GenerateBlockWeights(shape, ref::kBlockWeightSeed).values;
    const auto xf = ref::GenerateInputRows(7, tokens, shape.model, 1.0);
    x.assign(xf.begin(), xf.end());
    std::vector<float> c, s;
    ref::MakeFloatRopeTables(MAX_T, shape.headDim, ref::kRopeBase, c, s);
    cos.assign(c.begin(), c.end());
    sin.assign(s.begin(), s.end());
  }
  int tokens() const { return static_cast<int>(x.size()) / shape.model; }
  ref::BlockWeights w() const { return ref::ViewPacked(shape, weights); }

  ref::BlockState Whole() const {
    const size_t rows = static_cast<size_t>(tokens()) * shape.ropePairs();
    const ref::BlockInputs in{.rows = tokens(),
                              .x = x,
                              .ropeCos = std::span<const double>(cos).first(rows),
                              .ropeSin = std::span<const double>(sin).first(rows)};
    return ref::RunBlock(shape, {}, w(), in);
  }

  // The block run call by call: each call's projections from its own rows, its keys and
  // values appended to a cache, attention over the cache. One state per call.
  std::vector<ref::BlockState> ByCalls(const std::vector<int>& steps, const ref::DecodeRecipe& recipe = {}) const {
    std::vector<double> keys(static_cast<size_t>(MAX_T) * shape.kvWidth(), NAN);
    std::vector<double> values(keys.size(), NAN);
    std::vector<ref::BlockState> states;
    for (const ref::DecodeCall& call : ref::CallsFor(steps)) {
      const auto in = ref::CallInputs(call, ref::CallRows(x, shape.model, call), cos, sin, shape.ropePairs(), recipe);
      ref::BlockState s;
      for (Checkpoint c : ref::kCheckpointOrder) {
        if (c == Checkpoint::kAttnOut) {
          const auto cachedKeys = ref::CachedKeyRows(shape, w(), call, s[ref::Index(Checkpoint::kNorm1)],
                                                     s[ref::Index(Checkpoint::kK)], recipe);
          const auto& v = s[ref::Index(Checkpoint::kV)];
          for (int t = 0; t < call.n; ++t) {
            const size_t row = static_cast<size_t>(ref::CacheRowFor(call, t, recipe)) * shape.kvWidth();
            std::copy_n(cachedKeys.begin() + static_cast<long>(t) * shape.kvWidth(), shape.kvWidth(), keys.begin() + static_cast<long>(row));
            std::copy_n(v.begin() + static_cast<long>(t) * shape.kvWidth(), shape.kvWidth(), values.begin() + static_cast<long>(row));
          }
          s[ref::Index(c)].resize(static_cast<size_t>(call.n) * shape.qWidth());
          ref::AttendCached(s[ref::Index(Checkpoint::kQ)], keys, values, call, shape, {}, recipe, s[ref::Index(c)]);
        } else {
          s[ref::Index(c)] = ref::ComputeCheckpoint(c, shape, {}, w(), in, s);
        }
      }
      states.push_back(std::move(s));
    }
    return states;
  }
};

// Attention of `queries` query rows at positions first .. over `keys` rows of k and v.
struct Heads {
  ref::BlockShape shape = ref::Stage1Shape();
  std::vector<double> Two(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                          int first) const {
    const int queries = static_cast<int>(q.size()) / shape.qWidth();
    std::vector<double> out(q.size());
    ref::Attend(q, k, v, {.queries = queries, .firstQueryPosition = first, .keys = first + queries, .window = 0},
                shape, {}, out);
    return out;
  }
  std::vector<double> Online(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                             int first, ref::OnlineRescale rescale) const {
    const int queries = static_cast<int>(q.size()) / shape.qWidth();
    std::vector<double> out(q.size());
    ref::DecodeRecipe recipe;
    recipe.rescale = rescale;
    ref::AttendOnline(q, std::span<const double>(k).first(static_cast<size_t>(first + queries) * shape.kvWidth()),
                      std::span<const double>(v).first(static_cast<size_t>(first + queries) * shape.kvWidth()),
                      queries, first, shape, {}, recipe, out);
    return out;
  }
};

}  // namespace

TEST_CASE("calls continue where the previous one stopped") {
  const auto calls = ref::CallsFor(std::vector<int>{5, 1, 1, 3});
  REQUIRE(calls.size() == 4);
  CHECK(calls[0].pos == 0);
  CHECK(calls[1].pos == 5);
  CHECK(calls[2].pos == 6);
  CHECK(calls[3].pos == 7);
  CHECK(calls[3].n == 3);
  const ref::DecodeCall call{.pos = 6, .n = 2};
  CHECK(ref::RopeRowFor(call, 1, {}) == 7);
  CHECK(ref::CacheRowFor(call, 1, {}) == 7);
  ref::DecodeRecipe within;
  within.ropePosition = ref::RopePosition::kWithinCall;
  within.cacheRow = ref::CacheRow::kWithinCall;
  CHECK(ref::RopeRowFor(call, 1, within) == 1);
  CHECK(ref::CacheRowFor(call, 1, within) == 1);
}

TEST_CASE("the one-pass softmax with rescaling is the softmax") {
  const Heads heads;
  const auto q = RandomVector(1, 3 * 512, 3.0);  // scores of several units: the maximum moves
  const auto k = RandomVector(2, 40 * 128, 3.0);
  const auto v = RandomVector(3, 40 * 128);
  CHECK(MaxDifference(heads.Online(q, k, v, 37, ref::OnlineRescale::kBoth), heads.Two(q, k, v, 37)) < 1e-12);
}

TEST_CASE("forgetting to rescale changes nothing while the maximum stays put, and much once it grows") {
  const Heads heads;
  // One query whose head 0 scores key j as (sign) * j: falling scores keep the first maximum.
  std::vector<double> q(512, 0.0);
  for (int h = 0; h < 8; ++h) q[h * 64] = 8.0;  // score_j = k_j[0] for every head of group 0 and 1
  auto keysScoring = [](double step) {
    std::vector<double> k(6 * 128, 0.0);
    for (int j = 0; j < 6; ++j) k[j * 128] = k[j * 128 + 64] = step * j;
    return k;
  };
  const auto v = RandomVector(4, 6 * 128);
  const auto falling = keysScoring(-0.7);
  const auto rising = keysScoring(+0.7);
  for (auto rescale : {ref::OnlineRescale::kNormaliserOnly, ref::OnlineRescale::kNeither}) {
    CAPTURE(static_cast<int>(rescale));
    CHECK(MaxDifference(heads.Online(q, falling, v, 5, rescale), heads.Two(q, falling, v, 5)) < 1e-12);
    CHECK(MaxDifference(heads.Online(q, rising, v, 5, rescale), heads.Two(q, rising, v, 5)) > 0.05);
  }
  // The two mistakes are different functions.
  CHECK(MaxDifference(heads.Online(q, rising, v, 5, ref::OnlineRescale::kNormaliserOnly),
                      heads.Online(q, rising, v, 5, ref::OnlineRescale::kNeither)) > 0.05);
}

TEST_CASE("a sequence split into calls over a cache gives the whole sequence's buffers") {
  const Sequence seq(9);
  const ref::BlockState whole = seq.Whole();
  for (const std::vector<int>& steps : {std::vector<int>{9}, {5, 1, 1, 1, 1}, {1, 1, 7}, {4, 5}}) {
    CAPTURE(steps.size());
    const auto calls = ref::CallsFor(steps);
    const auto states = seq.ByCalls(steps);
    for (size_t s = 0; s < calls.size(); ++s) {
      for (Checkpoint c : ref::kCheckpointOrder) {
        CAPTURE(ref::CheckpointName(c));
        const auto expected = ref::CallRows(whole[ref::Index(c)], ref::CheckpointWidth(c, seq.shape), calls[s]);
        CHECK(MaxDifference(states[s][ref::Index(c)], expected) < 1e-9);
      }
    }
  }
}

TEST_CASE("each decode switch shows first where the catalogue says, and only in calls that can show it") {
  const Sequence seq(8);
  const std::vector<int> steps = {5, 1, 2};
  const auto right = seq.ByCalls(steps);
  auto firstDifference = [&](const ref::DecodeRecipe& recipe) {
    const auto wrong = seq.ByCalls(steps, recipe);
    for (size_t s = 0; s < steps.size(); ++s) {
      for (Checkpoint c : ref::kCheckpointOrder) {
        if (MaxDifference(wrong[s][ref::Index(c)], right[s][ref::Index(c)]) > 1e-6) {
          return std::to_string(s + 1) + "." + std::string(ref::CheckpointName(c));
        }
      }
    }
    return std::string("none");
  };
  ref::DecodeRecipe r;
  r.ropePosition = ref::RopePosition::kWithinCall;
  CHECK(firstDifference(r) == "2.q");  // the first call is at position 0
  r = {};
  r.cachedKeys = ref::CachedKeys::kBeforeRope;
  CHECK(firstDifference(r) == "1.attnOut");  // of the nine buffers; the runner sees it at kCache
  r = {};
  r.reach = ref::AttentionReach::kWholeCall;
  CHECK(firstDifference(r) == "1.attnOut");
  r = {};
  r.rescale = ref::OnlineRescale::kNeither;
  CHECK(firstDifference(r) == "1.attnOut");
  r = {};
  r.cacheRow = ref::CacheRow::kWithinCall;
  CHECK(firstDifference(r) == "2.attnOut");  // step 2 overwrites row 0 and reads row 5, never written
  // A single-token call is the same with or without the reach mistake.
  r = {};
  r.reach = ref::AttentionReach::kWholeCall;
  const auto single = seq.ByCalls({1, 1, 1}, r);
  const auto singleRight = seq.ByCalls({1, 1, 1});
  for (size_t s = 0; s < 3; ++s) {
    CHECK(MaxDifference(single[s][ref::Index(Checkpoint::kOutput)], singleRight[s][ref::Index(Checkpoint::kOutput)]) == 0);
  }
}

TEST_CASE("cached keys before RoPE are the unrotated projections; after RoPE, the k rows") {
  const Sequence seq(3);
  const auto whole = seq.Whole();
  const ref::DecodeCall call{.pos = 0, .n = 3};
  const auto& norm1 = whole[ref::Index(Checkpoint::kNorm1)];
  const auto& k = whole[ref::Index(Checkpoint::kK)];
  CHECK(ref::CachedKeyRows(seq.shape, seq.w(), call, norm1, k, {}) == k);
  ref::DecodeRecipe before;
  before.cachedKeys = ref::CachedKeys::kBeforeRope;
  const auto unrotated = ref::CachedKeyRows(seq.shape, seq.w(), call, norm1, k, before);
  // Position 0 is not rotated at all; positions 1 and 2 are.
  CHECK(MaxDifference(std::span<const double>(unrotated).first(128), std::span<const double>(k).first(128)) < 1e-12);
  CHECK(MaxDifference(std::span<const double>(unrotated).subspan(128), std::span<const double>(k).subspan(128)) > 0.1);
}

TEST_CASE("the call checkpoints put the cache write between v and attnOut") {
  CHECK(ref::kCallCheckpointOrder.size() == 12);
  CHECK(ref::CallCheckpointName(ref::kCallCheckpointOrder[3]) == "v");
  CHECK(ref::CallCheckpointName(ref::kCallCheckpointOrder[4]) == "cacheOtherRows");
  CHECK(ref::CallCheckpointName(ref::kCallCheckpointOrder[5]) == "kCache");
  CHECK(ref::CallCheckpointName(ref::kCallCheckpointOrder[6]) == "vCache");
  CHECK(ref::CallCheckpointName(ref::kCallCheckpointOrder[7]) == "attnOut");
  int block = 0;
  for (auto c : ref::kCallCheckpointOrder) {
    if (auto b = ref::BlockCheckpointOf(c)) CHECK(*b == ref::kCheckpointOrder[block++]);
  }
  CHECK(block == 9);
}

}  // namespace decode_test
