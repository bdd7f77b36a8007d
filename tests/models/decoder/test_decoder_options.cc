// RunDecoderTrace with DecoderOptions (reference/decoder/decoder_options.h): default and
// kF32 options give the plain trace bit for bit; f16 and int8 cache emulation change
// attention's output slightly and nothing upstream of it; each misconception switch changes
// the checkpoint where it first acts and nothing before it; the trace's routing and final
// norm are the ones the logits come from.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "decoder_test_support.h"
#include "model/files/tensor_view.h"
#include "reference/block/ops.h"
#include "reference/decoder/decoder_options.h"
#include "reference/decoder/streamed_ops.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_decoder_options {

using ref::Checkpoint;
using ref::DecoderOptions;

namespace {

const std::vector<int>& kTokens = wbtest::TraceTokens();

using Fixture = wbtest::BoundFixture;

Fixture Open(const std::string& family, const char* file = "hf") {
  auto fixture = wbtest::OpenFixture(family, file);
  REQUIRE_MESSAGE(fixture.ok(), fixture.error().message);
  return std::move(*fixture);
}

ref::DecoderTrace Trace(const wb::model::ModelConfig& c, const wb::model::ModelWeights& w,
                        const DecoderOptions& options) {
  auto trace = ref::RunDecoderTrace(c, w, kTokens, ref::LogitPositions::kAll, options);
  REQUIRE_MESSAGE(trace.ok(), trace.error().message);
  return std::move(*trace);
}

ref::DecoderTrace Trace(const Fixture& f, const DecoderOptions& options) { return Trace(f.config(), f.weights, options); }

bool Same(std::span<const double> a, std::span<const double> b) { return wbtest::SameBits(a, b); }

bool SameBuffer(const ref::DecoderTrace& a, const ref::DecoderTrace& b, int layer, Checkpoint c) {
  return Same(a.Buffer(layer, c), b.Buffer(layer, c));
}

// Every buffer, routing and logit of a and b, bit for bit.
bool SameTrace(const ref::DecoderTrace& a, const ref::DecoderTrace& b) {
  if (!Same(a.embeddings, b.embeddings) || a.layers.size() != b.layers.size()) return false;
  for (size_t layer = 0; layer < a.layers.size(); ++layer) {
    for (Checkpoint c : ref::kCheckpointOrder) {
      if (!SameBuffer(a, b, static_cast<int>(layer), c)) return false;
    }
    if (a.routing[layer].expertIds != b.routing[layer].expertIds ||
        !Same(a.routing[layer].expertWeights, b.routing[layer].expertWeights)) {
      return false;
    }
  }
  return Same(a.finalNorm, b.finalNorm) && Same(a.logits.values, b.logits.values);
}

// The checkpoints of `layer` before `first` (in kCheckpointOrder) agree bit for bit, and
// `first` differs; every earlier layer and the embeddings agree entirely.
void ChangesFrom(const ref::DecoderTrace& base, const ref::DecoderTrace& flipped, int layer, Checkpoint first) {
  CHECK(Same(base.embeddings, flipped.embeddings));
  for (int l = 0; l < layer; ++l) {
    for (Checkpoint c : ref::kCheckpointOrder) CHECK(SameBuffer(base, flipped, l, c));
  }
  for (Checkpoint c : ref::kCheckpointOrder) {
    CAPTURE(ref::CheckpointName(c));
    if (c == first) {
      CHECK_FALSE(SameBuffer(base, flipped, layer, c));
      break;
    }
    CHECK(SameBuffer(base, flipped, layer, c));
  }
  CHECK_FALSE(Same(base.logits.values, flipped.logits.values));
}

double RelativeDiff(std::span<const double> a, std::span<const double> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(a[i]));
  }
  return diff / scale;
}

}  // namespace

TEST_CASE("default and kF32 options give the plain trace, bit for bit, for every fixture") {
  for (const std::string& family : wbtest::Families()) {
    for (const char* file : {"hf", "model.gguf"}) {
      CAPTURE(family);
      CAPTURE(file);
      const Fixture f = Open(family, file);
      auto plain = ref::RunDecoderTrace(f.config(), f.weights, kTokens);
      REQUIRE(plain.ok());
      CHECK(SameTrace(*plain, Trace(f, DecoderOptions{})));
      DecoderOptions f32;
      f32.cache.type = ref::CacheRowType::kF32;
      f32.cache.group = 4;  // read for int8 only
      CHECK(SameTrace(*plain, Trace(f, f32)));
    }
  }
}

TEST_CASE("the trace's routing and final norm") {
  for (const std::string& family : wbtest::Families()) {
    CAPTURE(family);
    const Fixture f = Open(family);
    const wb::model::ModelConfig& c = f.config();
    const ref::DecoderTrace trace = Trace(f, DecoderOptions{});
    const size_t t = kTokens.size();
    REQUIRE(static_cast<int>(trace.routing.size()) == c.layerCount());
    for (int layer = 0; layer < c.layerCount(); ++layer) {
      CAPTURE(layer);
      const ref::ExpertRouting& r = trace.routing[layer];
      if (!c.layers[layer].moe) {
        CHECK(r.topK == 0);
        CHECK(r.expertIds.empty());
        CHECK(r.expertWeights.empty());
        continue;
      }
      CHECK(r.topK == c.expertsPerToken);
      REQUIRE(r.expertIds.size() == t * c.expertsPerToken);
      REQUIRE(r.expertWeights.size() == r.expertIds.size());
      for (size_t row = 0; row < t; ++row) {
        double sum = 0;
        for (int k = 0; k < r.topK; ++k) {
          const size_t at = row * r.topK + k;
          CHECK(r.expertIds[at] >= 0);
          CHECK(r.expertIds[at] < c.experts);
          if (k > 0) CHECK(r.expertWeights[at] <= r.expertWeights[at - 1]);  // largest first
          sum += r.expertWeights[at];
        }
        if (c.renormaliseTopK) CHECK(sum == doctest::Approx(1.0).epsilon(1e-12));
        else CHECK(sum < 1.0);
      }
    }
    // finalNorm: RMSNorm of the last output with the output norm; the logits its product.
    const auto last = trace.Buffer(c.layerCount() - 1, Checkpoint::kOutput);
    std::vector<double> normed(last.size());
    ref::RmsNorm(last, static_cast<int>(t), c.hidden, f.weights.outputNorm, c.rmsEps, ref::NormEpsilon::kInside,
                 ref::NormWeight::kApplied, normed);
    CHECK(Same(trace.finalNorm, normed));
    auto lastOnly = ref::RunDecoderTrace(c, f.weights, kTokens, ref::LogitPositions::kLast, DecoderOptions{});
    REQUIRE(lastOnly.ok());
    CHECK(Same(lastOnly->finalNorm, std::span<const double>(normed).subspan((t - 1) * c.hidden)));
  }
}

TEST_CASE("f16 and int8 caches change attention slightly, and nothing upstream of it") {
  for (const std::string& family : wbtest::Families()) {
    CAPTURE(family);
    const Fixture f = Open(family);
    const ref::DecoderTrace base = Trace(f, DecoderOptions{});
    for (ref::CacheRowType type : {ref::CacheRowType::kF16, ref::CacheRowType::kInt8}) {
      CAPTURE(static_cast<int>(type));
      DecoderOptions options;
      options.cache.type = type;
      const ref::DecoderTrace cached = Trace(f, options);
      ChangesFrom(base, cached, 0, Checkpoint::kAttnOut);
      const double bound = type == ref::CacheRowType::kF16 ? 2e-3 : 3e-2;
      for (int layer = 0; layer < f.config().layerCount(); ++layer) {
        CAPTURE(layer);
        const double d = RelativeDiff(base.Buffer(layer, Checkpoint::kAttnOut), cached.Buffer(layer, Checkpoint::kAttnOut));
        CHECK(d > 0);
        CHECK(d < bound);
      }
      CHECK(RelativeDiff(base.logits.values, cached.logits.values) < bound);
    }
  }
}

TEST_CASE("int8: the contract's group against a group straddling two heads") {
  const Fixture f = Open("gemma3_text");  // headDim 16, two kv heads: group 16
  REQUIRE(f.config().headDim == 16);
  DecoderOptions right;
  right.cache.type = ref::CacheRowType::kInt8;
  DecoderOptions explicitGroup = right;
  explicitGroup.cache.group = 16;
  DecoderOptions straddling = right;
  straddling.cache.group = 32;
  const ref::DecoderTrace a = Trace(f, right);
  CHECK(SameTrace(a, Trace(f, explicitGroup)));
  ChangesFrom(a, Trace(f, straddling), 0, Checkpoint::kAttnOut);
}

TEST_CASE("qkNormAfterRope: q and k change on a QK-norm family, norm1 and v do not") {
  for (const char* family : {"qwen3", "olmoe", "gemma3_text"}) {
    CAPTURE(family);
    const Fixture f = Open(family);
    DecoderOptions options;
    options.qkNormAfterRope = true;
    const ref::DecoderTrace base = Trace(f, DecoderOptions{});
    const ref::DecoderTrace flipped = Trace(f, options);
    ChangesFrom(base, flipped, 0, Checkpoint::kQ);
    CHECK_FALSE(SameBuffer(base, flipped, 0, Checkpoint::kK));
    CHECK(SameBuffer(base, flipped, 0, Checkpoint::kV));
  }
  const Fixture llama = Open("llama");  // no QK-norm: nothing to reorder
  DecoderOptions options;
  options.qkNormAfterRope = true;
  CHECK(SameTrace(Trace(llama, DecoderOptions{}), Trace(llama, options)));
}

TEST_CASE("qkNormSkipped: q and k change on a QK-norm family, norm1 and v do not; nothing changes without one") {
  for (const char* family : {"qwen3", "olmoe", "gemma3_text"}) {
    CAPTURE(family);
    const Fixture f = Open(family);
    DecoderOptions options;
    options.qkNormSkipped = true;
    const ref::DecoderTrace base = Trace(f, DecoderOptions{});
    const ref::DecoderTrace flipped = Trace(f, options);
    ChangesFrom(base, flipped, 0, Checkpoint::kQ);
    CHECK_FALSE(SameBuffer(base, flipped, 0, Checkpoint::kK));
    CHECK(SameBuffer(base, flipped, 0, Checkpoint::kV));
  }
  const Fixture llama = Open("llama");
  DecoderOptions options;
  options.qkNormSkipped = true;
  CHECK(SameTrace(Trace(llama, DecoderOptions{}), Trace(llama, options)));
}

TEST_CASE("ropeNotApplied: q and k change from position 1 on, v does not") {
  for (const std::string& family : wbtest::Families()) {
    CAPTURE(family);
    const Fixture f = Open(family);
    const wb::model::ModelConfig& c = f.config();
    DecoderOptions options;
    options.ropeNotApplied = true;
    const ref::DecoderTrace base = Trace(f, DecoderOptions{});
    const ref::DecoderTrace flipped = Trace(f, options);
    ChangesFrom(base, flipped, 0, Checkpoint::kQ);
    CHECK(SameBuffer(base, flipped, 0, Checkpoint::kV));
    const size_t width = static_cast<size_t>(c.qWidth());
    CHECK_FALSE(Same(base.Buffer(0, Checkpoint::kQ).subspan(width, width),
                     flipped.Buffer(0, Checkpoint::kQ).subspan(width, width)));
  }
}

TEST_CASE("windowOnAllLayers: gemma3's global layer attends within the window too; its sliding layers do not change") {
  const Fixture f = Open("gemma3_text");
  const wb::model::ModelConfig& c = f.config();
  REQUIRE(c.layers[0].sliding);
  REQUIRE_FALSE(c.layers[2].sliding);
  REQUIRE(c.slidingWindow < static_cast<int>(kTokens.size()));
  DecoderOptions options;
  options.windowOnAllLayers = true;
  const ref::DecoderTrace base = Trace(f, DecoderOptions{});
  const ref::DecoderTrace flipped = Trace(f, options);
  ChangesFrom(base, flipped, 2, Checkpoint::kAttnOut);
  const Fixture mistral = Open("mistral");  // every layer slides already
  CHECK(SameTrace(Trace(mistral, DecoderOptions{}), Trace(mistral, options)));
}

TEST_CASE("localBaseOnAllLayers: the global layer's q and k change, the sliding layers do not") {
  const Fixture f = Open("gemma3_text");
  const wb::model::ModelConfig& c = f.config();
  REQUIRE(c.hasLocalRope);
  REQUIRE(c.layers[0].sliding);
  REQUIRE(c.layers[1].sliding);
  REQUIRE_FALSE(c.layers[2].sliding);
  DecoderOptions options;
  options.localBaseOnAllLayers = true;
  const ref::DecoderTrace base = Trace(f, DecoderOptions{});
  const ref::DecoderTrace flipped = Trace(f, options);
  ChangesFrom(base, flipped, 2, Checkpoint::kQ);
  CHECK_FALSE(SameBuffer(base, flipped, 2, Checkpoint::kK));
  CHECK(SameBuffer(base, flipped, 2, Checkpoint::kV));
}

TEST_CASE("routerSoftmaxOverTopK: the weights and ffnOut change where the top-k is not renormalised") {
  const Fixture f = Open("olmoe");
  REQUIRE_FALSE(f.config().renormaliseTopK);
  REQUIRE(f.config().layers[0].moe);
  DecoderOptions options;
  options.routerSoftmaxOverTopK = true;
  const ref::DecoderTrace base = Trace(f, DecoderOptions{});
  const ref::DecoderTrace flipped = Trace(f, options);
  ChangesFrom(base, flipped, 0, Checkpoint::kFfnOut);
  CHECK(base.routing[0].expertIds == flipped.routing[0].expertIds);
  CHECK_FALSE(Same(base.routing[0].expertWeights, flipped.routing[0].expertWeights));
  // Each row's weights now sum to 1.
  for (size_t row = 0; row < kTokens.size(); ++row) {
    double sum = 0;
    for (int k = 0; k < flipped.routing[0].topK; ++k) sum += flipped.routing[0].expertWeights[row * flipped.routing[0].topK + k];
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-12));
  }
  // With renormalisation (mixtral) it is the same routing, to rounding.
  const Fixture mixtral = Open("mixtral");
  REQUIRE(mixtral.config().renormaliseTopK);
  const ref::DecoderTrace m0 = Trace(mixtral, DecoderOptions{});
  const ref::DecoderTrace m1 = Trace(mixtral, options);
  CHECK(m0.routing[0].expertIds == m1.routing[0].expertIds);
  CHECK(RelativeDiff(m0.logits.values, m1.logits.values) < 1e-12);
}

TEST_CASE("tiesToHigherId: with a router tie the other expert is chosen") {
  const Fixture f = Open("mixtral");
  const wb::model::ModelConfig& c = f.config();
  REQUIRE(c.layers[0].moe);
  REQUIRE(c.experts == 4);
  REQUIRE(c.expertsPerToken == 2);
  // Router rows 2r, r, r, -2r (r: the stored row 0): for any input, experts 1 and 2 tie
  // exactly, and at the top-2 boundary (the largest logit is 2a or -2a).
  std::vector<float> r(c.hidden);
  REQUIRE(f.weights.layers[0].router.ReadRows(0, 1, r).ok());
  std::vector<float> router;
  for (float scale : {2.0f, 1.0f, 1.0f, -2.0f}) {
    for (float v : r) router.push_back(scale * v);
  }
  wb::model::ModelWeights tied = f.weights;
  wb::model::WeightMatrix& m = tied.layers[0].router;
  m.tensor.type = wb::TensorType::kF32;
  m.tensor.shape = {4, static_cast<uint64_t>(c.hidden)};
  m.tensor.data = std::as_bytes(std::span<const float>(router));
  m.firstRow = 0;

  DecoderOptions options;
  options.tiesToHigherId = true;
  const ref::DecoderTrace base = Trace(c, tied, DecoderOptions{});
  const ref::DecoderTrace flipped = Trace(c, tied, options);
  ChangesFrom(base, flipped, 0, Checkpoint::kFfnOut);
  for (size_t row = 0; row < kTokens.size(); ++row) {
    CAPTURE(row);
    CHECK(base.routing[0].expertIds[row * 2 + 1] == 1);
    CHECK(flipped.routing[0].expertIds[row * 2 + 1] == 2);
  }
  // Without a tie the rule changes nothing.
  CHECK(SameTrace(Trace(f, DecoderOptions{}), Trace(f, options)));
}

TEST_CASE("normWeightPlusOneAgain: norm1 changes first") {
  for (const char* family : {"gemma3_text", "llama"}) {
    CAPTURE(family);
    const Fixture f = Open(family);
    DecoderOptions options;
    options.normWeightPlusOneAgain = true;
    ChangesFrom(Trace(f, DecoderOptions{}), Trace(f, options), 0, Checkpoint::kNorm1);
  }
}

TEST_CASE("embeddingScaleMissing: Gemma's embeddings lose their √H, other families are unchanged") {
  const Fixture f = Open("gemma3_text");
  DecoderOptions options;
  options.embeddingScaleMissing = true;
  const ref::DecoderTrace base = Trace(f, DecoderOptions{});
  const ref::DecoderTrace flipped = Trace(f, options);
  REQUIRE(base.embeddings.size() == flipped.embeddings.size());
  const double scale = std::sqrt(static_cast<double>(f.config().hidden));
  for (size_t i = 0; i < base.embeddings.size(); ++i) CHECK(base.embeddings[i] == flipped.embeddings[i] * scale);
  CHECK_FALSE(Same(base.embeddings, flipped.embeddings));
  const Fixture llama = Open("llama");
  CHECK(SameTrace(Trace(llama, DecoderOptions{}), Trace(llama, options)));
}

TEST_CASE("windowOffByOne: a sliding layer's rows at p >= W change, earlier rows do not") {
  for (const char* family : {"mistral", "gemma3_text"}) {
    CAPTURE(family);
    const Fixture f = Open(family);
    const wb::model::ModelConfig& c = f.config();
    REQUIRE(c.layers[0].sliding);
    const int w = c.slidingWindow;
    REQUIRE(w < static_cast<int>(kTokens.size()));
    DecoderOptions options;
    options.windowOffByOne = true;
    const ref::DecoderTrace base = Trace(f, DecoderOptions{});
    const ref::DecoderTrace flipped = Trace(f, options);
    ChangesFrom(base, flipped, 0, Checkpoint::kAttnOut);
    const int width = c.qWidth();
    for (int p = 0; p < static_cast<int>(kTokens.size()); ++p) {
      CAPTURE(p);
      const auto a = base.Buffer(0, Checkpoint::kAttnOut).subspan(static_cast<size_t>(p) * width, width);
      const auto b = flipped.Buffer(0, Checkpoint::kAttnOut).subspan(static_cast<size_t>(p) * width, width);
      CHECK(Same(a, b) == (p < w));  // key p - W exists only from p = W on
    }
  }
  const Fixture llama = Open("llama");  // no sliding layer
  DecoderOptions options;
  options.windowOffByOne = true;
  CHECK(SameTrace(Trace(llama, DecoderOptions{}), Trace(llama, options)));
}

TEST_CASE("quantizeProductInputs: a Q8_0 model's products read Q8_0-rounded inputs; other types are unchanged") {
  // On the Q8_0 llama, q is the first product of a quantized matrix: norm1 stays, q moves by
  // about the 8-bit rounding of norm1 (well under 1 % of its RMS, never 0).
  const Fixture q8 = Open("llama", "model-q8_0.gguf");
  DecoderOptions options;
  options.quantizeProductInputs = true;
  const ref::DecoderTrace exact = Trace(q8, DecoderOptions{});
  const ref::DecoderTrace rounded = Trace(q8, options);
  CHECK(SameBuffer(exact, rounded, 0, Checkpoint::kNorm1));
  CHECK_FALSE(SameBuffer(exact, rounded, 0, Checkpoint::kQ));
  const auto a = exact.Buffer(0, Checkpoint::kQ);
  const auto b = rounded.Buffer(0, Checkpoint::kQ);
  double worst = 0;
  double sumSquares = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
    sumSquares += a[i] * a[i];
  }
  CHECK(worst < 0.05 * std::sqrt(sumSquares / static_cast<double>(a.size())));
  // The same switch on the f16 and bf16 files: nothing to round, the trace bit for bit.
  for (const char* file : {"model.gguf", "hf"}) {
    CAPTURE(file);
    const Fixture f = Open("llama", file);
    const ref::DecoderTrace plain = Trace(f, DecoderOptions{});
    const ref::DecoderTrace same = Trace(f, options);
    for (int layer = 0; layer < f.config().layerCount(); ++layer) {
      CHECK(SameBuffer(plain, same, layer, Checkpoint::kOutput));
    }
    CHECK(Same(plain.logits.values, same.logits.values));
  }
}

}  // namespace test_decoder_options
