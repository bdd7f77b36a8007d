// The steps of reference/decoder/layer_steps.h, as the runner's local check uses them: fed
// the trace's own buffers each step gives the trace's buffer bit for bit (chain and local
// check agree by construction), a decode step (one row at position p over the keys of
// positions 0 .. p) gives row p of the trace, StepExpertFfn recomputes ffnOut from a given
// routing and refuses a malformed one, and buffers rounded to float (a student's) give
// results close to the trace's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "decoder_test_support.h"
#include "reference/decoder/layer_steps.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_layer_steps {

using ref::Checkpoint;
using ref::DecoderOptions;
using ref::StepContext;

namespace {

const std::vector<int>& kTokens = wbtest::TraceTokens();

using Fixture = wbtest::BoundFixture;

Fixture Open(const std::string& family, const char* file = "hf") {
  auto fixture = wbtest::OpenFixture(family, file);
  REQUIRE_MESSAGE(fixture.ok(), fixture.error().message);
  return std::move(*fixture);
}

bool Same(std::span<const double> a, std::span<const double> b) { return wbtest::SameBits(a, b); }

std::span<const double> Rows(std::span<const double> buffer, int width, int first, int count) {
  return buffer.subspan(static_cast<size_t>(first) * width, static_cast<size_t>(count) * width);
}

std::vector<double> ToFloat(std::span<const double> x) {
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = static_cast<float>(x[i]);
  return out;
}

double RelativeDiff(std::span<const double> a, std::span<const double> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(a[i]));
  }
  return diff / scale;
}

ref::DecoderTrace Trace(const Fixture& f, const DecoderOptions& options) {
  auto trace = ref::RunDecoderTrace(f.config(), f.weights, kTokens, ref::LogitPositions::kAll, options);
  REQUIRE_MESSAGE(trace.ok(), trace.error().message);
  return std::move(*trace);
}

// Options a cache and a misconception away from the defaults, so the steps' switches are
// exercised too.
std::vector<DecoderOptions> SomeOptions() {
  std::vector<DecoderOptions> all(3);
  all[1].cache.type = ref::CacheRowType::kInt8;
  all[1].windowOffByOne = true;
  all[2].cache.type = ref::CacheRowType::kF16;
  all[2].qkNormAfterRope = true;
  all[2].normWeightPlusOneAgain = true;
  return all;
}

}  // namespace

TEST_CASE("every step fed the trace's own buffers gives the trace's buffer, bit for bit") {
  for (const std::string& family : wbtest::Families()) {
    for (const DecoderOptions& options : SomeOptions()) {
      CAPTURE(family);
      CAPTURE(static_cast<int>(options.cache.type));
      const Fixture f = Open(family);
      const wb::model::ModelConfig& c = f.config();
      const int t = static_cast<int>(kTokens.size());
      const ref::DecoderTrace trace = Trace(f, options);

      auto embedded = ref::StepEmbedding(c, f.weights, options, kTokens);
      REQUIRE(embedded.ok());
      CHECK(Same(*embedded, trace.embeddings));
      std::span<const double> x = trace.embeddings;
      for (int layer = 0; layer < c.layerCount(); ++layer) {
        CAPTURE(layer);
        const StepContext ctx{c, f.weights, options, layer, 0, t};
        auto buffer = [&](Checkpoint cp) { return trace.Buffer(layer, cp); };
        CHECK(Same(ref::StepNorm1(ctx, x), buffer(Checkpoint::kNorm1)));
        auto qkv = ref::StepQkv(ctx, buffer(Checkpoint::kNorm1));
        REQUIRE(qkv.ok());
        CHECK(Same(qkv->q, buffer(Checkpoint::kQ)));
        CHECK(Same(qkv->k, buffer(Checkpoint::kK)));
        CHECK(Same(qkv->v, buffer(Checkpoint::kV)));
        const std::vector<double> keys = ref::StepStoredRows(ctx, buffer(Checkpoint::kK));
        const std::vector<double> values = ref::StepStoredRows(ctx, buffer(Checkpoint::kV));
        CHECK(Same(ref::StepAttention(ctx, buffer(Checkpoint::kQ), keys, values), buffer(Checkpoint::kAttnOut)));
        auto residual1 = ref::StepResidual1(ctx, buffer(Checkpoint::kAttnOut), x);
        REQUIRE(residual1.ok());
        CHECK(Same(*residual1, buffer(Checkpoint::kResidual1)));
        CHECK(Same(ref::StepNorm2(ctx, buffer(Checkpoint::kResidual1)), buffer(Checkpoint::kNorm2)));
        auto ffn = ref::StepFfn(ctx, buffer(Checkpoint::kNorm2));
        REQUIRE(ffn.ok());
        CHECK(Same(ffn->ffnOut, buffer(Checkpoint::kFfnOut)));
        CHECK(ffn->routing.expertIds == trace.routing[layer].expertIds);
        CHECK(Same(ffn->routing.expertWeights, trace.routing[layer].expertWeights));
        if (c.layers[layer].moe) {
          auto routed = ref::StepExpertFfn(ctx, buffer(Checkpoint::kNorm2), trace.routing[layer]);
          REQUIRE(routed.ok());
          CHECK(Same(*routed, buffer(Checkpoint::kFfnOut)));
        }
        CHECK(Same(ref::StepOutput(buffer(Checkpoint::kResidual1), buffer(Checkpoint::kFfnOut)),
                   buffer(Checkpoint::kOutput)));
        x = buffer(Checkpoint::kOutput);
      }
      const StepContext last{c, f.weights, options, c.layerCount() - 1, 0, t};
      auto final = ref::StepFinal(last, x);
      REQUIRE(final.ok());
      CHECK(Same(final->finalNorm, trace.finalNorm));
      CHECK(Same(final->logits, trace.logits.values));
    }
  }
}

TEST_CASE("a decode step: one row at position p over the keys of 0 .. p gives row p of the trace") {
  for (const std::string& family : wbtest::Families()) {
    for (const DecoderOptions& options : SomeOptions()) {
      CAPTURE(family);
      CAPTURE(static_cast<int>(options.cache.type));
      const Fixture f = Open(family);
      const wb::model::ModelConfig& c = f.config();
      const ref::DecoderTrace trace = Trace(f, options);
      const int h = c.hidden, q = c.qWidth(), kv = c.kvWidth();
      for (int layer = 0; layer < c.layerCount(); ++layer) {
        for (int p : {0, 5, static_cast<int>(kTokens.size()) - 1}) {
          CAPTURE(layer);
          CAPTURE(p);
          const StepContext ctx{c, f.weights, options, layer, p, 1};
          auto buffer = [&](Checkpoint cp, int width) { return Rows(trace.Buffer(layer, cp), width, p, 1); };
          auto qkv = ref::StepQkv(ctx, buffer(Checkpoint::kNorm1, h));
          REQUIRE(qkv.ok());
          CHECK(RelativeDiff(buffer(Checkpoint::kQ, q), qkv->q) < 1e-14);
          CHECK(RelativeDiff(buffer(Checkpoint::kK, kv), qkv->k) < 1e-14);
          CHECK(RelativeDiff(buffer(Checkpoint::kV, kv), qkv->v) < 1e-14);
          // The cache: rows 0 .. p of every position, each stored as the call stored it.
          const StepContext all{c, f.weights, options, layer, 0, p + 1};
          const auto keys = ref::StepStoredRows(all, Rows(trace.Buffer(layer, Checkpoint::kK), kv, 0, p + 1));
          const auto values = ref::StepStoredRows(all, Rows(trace.Buffer(layer, Checkpoint::kV), kv, 0, p + 1));
          CHECK(Same(ref::StepAttention(ctx, buffer(Checkpoint::kQ, q), keys, values), buffer(Checkpoint::kAttnOut, q)));
          auto ffn = ref::StepFfn(ctx, buffer(Checkpoint::kNorm2, h));
          REQUIRE(ffn.ok());
          CHECK(RelativeDiff(buffer(Checkpoint::kFfnOut, h), ffn->ffnOut) < 1e-14);
        }
      }
    }
  }
}

TEST_CASE("StepExpertFfn: ffnOut from a given routing; a malformed routing is refused") {
  const Fixture f = Open("qwen3_moe");
  const wb::model::ModelConfig& c = f.config();
  const DecoderOptions options;
  const ref::DecoderTrace trace = Trace(f, options);
  const int t = static_cast<int>(kTokens.size());
  const StepContext ctx{c, f.weights, options, 0, 0, t};
  REQUIRE(c.layers[0].moe);
  const auto norm2 = trace.Buffer(0, Checkpoint::kNorm2);

  // A student's routing with the two experts of row 0 swapped in order: the same sum.
  ref::ExpertRouting swapped = trace.routing[0];
  std::swap(swapped.expertIds[0], swapped.expertIds[1]);
  std::swap(swapped.expertWeights[0], swapped.expertWeights[1]);
  auto same = ref::StepExpertFfn(ctx, norm2, swapped);
  REQUIRE(same.ok());
  CHECK(RelativeDiff(trace.Buffer(0, Checkpoint::kFfnOut), *same) < 1e-14);

  // Another expert for row 0: row 0 changes, the other rows do not.
  ref::ExpertRouting other = trace.routing[0];
  for (int e = 0; e < c.experts; ++e) {
    if (e != other.expertIds[0] && e != other.expertIds[1]) {
      other.expertIds[1] = e;
      break;
    }
  }
  auto changed = ref::StepExpertFfn(ctx, norm2, other);
  REQUIRE(changed.ok());
  CHECK_FALSE(Same(Rows(*changed, c.hidden, 0, 1), Rows(trace.Buffer(0, Checkpoint::kFfnOut), c.hidden, 0, 1)));
  CHECK(Same(Rows(*changed, c.hidden, 1, t - 1), Rows(trace.Buffer(0, Checkpoint::kFfnOut), c.hidden, 1, t - 1)));

  ref::ExpertRouting bad = trace.routing[0];
  bad.expertIds[3] = c.experts;
  auto refused = ref::StepExpertFfn(ctx, norm2, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == wb::ErrorKind::kBadUsage);
  ref::ExpertRouting shortRouting = trace.routing[0];
  shortRouting.expertIds.pop_back();
  CHECK_FALSE(ref::StepExpertFfn(ctx, norm2, shortRouting).ok());

  // A dense layer has no experts to route to.
  const Fixture dense = Open("qwen3_moe", "hf-dense-layer");
  int denseLayer = -1;
  for (int l = 0; l < dense.config().layerCount(); ++l) {
    if (!dense.config().layers[l].moe) denseLayer = l;
  }
  REQUIRE(denseLayer >= 0);
  const StepContext denseCtx{dense.config(), dense.weights, options, denseLayer, 0, t};
  CHECK_FALSE(ref::StepExpertFfn(denseCtx, norm2, trace.routing[0]).ok());
  auto routing = ref::StepRouting(denseCtx, norm2);
  REQUIRE(routing.ok());
  CHECK(routing->topK == 0);
}

TEST_CASE("a student's float buffers give results close to the trace's") {
  for (const std::string& family : wbtest::Families()) {
    CAPTURE(family);
    const Fixture f = Open(family);
    const wb::model::ModelConfig& c = f.config();
    const DecoderOptions options;
    const ref::DecoderTrace trace = Trace(f, options);
    const int t = static_cast<int>(kTokens.size());
    for (int layer = 0; layer < c.layerCount(); ++layer) {
      CAPTURE(layer);
      const StepContext ctx{c, f.weights, options, layer, 0, t};
      auto buffer = [&](Checkpoint cp) { return trace.Buffer(layer, cp); };
      auto qkv = ref::StepQkv(ctx, ToFloat(buffer(Checkpoint::kNorm1)));
      REQUIRE(qkv.ok());
      CHECK(RelativeDiff(buffer(Checkpoint::kQ), qkv->q) < 1e-5);
      const auto attn = ref::StepAttention(ctx, ToFloat(buffer(Checkpoint::kQ)), ToFloat(buffer(Checkpoint::kK)),
                                           ToFloat(buffer(Checkpoint::kV)));
      CHECK(RelativeDiff(buffer(Checkpoint::kAttnOut), attn) < 1e-5);
      auto ffn = ref::StepFfn(ctx, ToFloat(buffer(Checkpoint::kNorm2)));
      REQUIRE(ffn.ok());
      CHECK(RelativeDiff(buffer(Checkpoint::kFfnOut), ffn->ffnOut) < 1e-5);
    }
  }
}

}  // namespace test_layer_steps
