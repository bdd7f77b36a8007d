// RunDecoderTrace keeps what RunDecoder computes: for every family's HF and GGUF fixture, the
// trace's logits are RunDecoder's bit for bit, logits recomputed from the last layer's
// output are too, each layer's nine buffers have the shapes decoder.h documents, and the
// buffers chain (a layer's output is the stream the next layer normalises).
#include <doctest/doctest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "decoder_test_support.h"
#include "reference/block/ops.h"
#include "reference/decoder/streamed_ops.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_decoder_trace {

using ref::Checkpoint;

namespace {

// Twelve tokens inside every fixture's vocabulary (64), not in order, some repeated.
const std::vector<int>& kTokens = wbtest::TraceTokens();

wb::model::WeightSource OpenSource(const std::string& path) {
  auto source = wb::model::WeightSource::Open(path);
  REQUIRE_MESSAGE(source.ok(), source.error().message);
  return std::move(*source);
}

// Bound after the source has its place: the weights are views into it.
wb::model::ModelWeights Bind(const wb::model::WeightSource& source) {
  auto weights = wb::model::BindWeights(source.config(), source);
  REQUIRE_MESSAGE(weights.ok(), weights.error().message);
  return std::move(*weights);
}

// RMSNorm(x) · w over rows of the hidden width, as the decoder's norms compute it.
std::vector<double> Norm(const wb::model::ModelConfig& c, std::span<const double> x, const std::vector<float>& w) {
  std::vector<double> out(x.size());
  ref::RmsNorm(x, static_cast<int>(x.size()) / c.hidden, c.hidden, w, c.rmsEps, ref::NormEpsilon::kInside,
               ref::NormWeight::kApplied, out);
  return out;
}

std::vector<double> Vec(std::span<const double> s) { return {s.begin(), s.end()}; }

}  // namespace

TEST_CASE("every family: the trace's buffers have their shapes and give RunDecoder's logits") {
  for (const std::string& family : wbtest::Families()) {
    for (const char* file : {"hf", "model.gguf"}) {
      CAPTURE(family);
      CAPTURE(file);
      const wb::model::WeightSource source = OpenSource((wbtest::FixtureDir(family) / file).string());
      const wb::model::ModelWeights weights = Bind(source);
      const wb::model::ModelConfig& c = source.config();
      const int t = static_cast<int>(kTokens.size());

      auto trace = ref::RunDecoderTrace(c, weights, kTokens);
      REQUIRE_MESSAGE(trace.ok(), trace.error().message);
      auto logits = ref::RunDecoder(c, weights, kTokens, ref::LogitPositions::kAll);
      REQUIRE_MESSAGE(logits.ok(), logits.error().message);

      // Shapes: T rows of the documented width, for each of the nine buffers of each layer.
      CHECK(trace->tokens == t);
      CHECK(trace->embeddings.size() == static_cast<size_t>(t) * c.hidden);
      REQUIRE(static_cast<int>(trace->layers.size()) == c.layerCount());
      for (int layer = 0; layer < c.layerCount(); ++layer) {
        CAPTURE(layer);
        for (Checkpoint cp : ref::kCheckpointOrder) {
          CAPTURE(ref::CheckpointName(cp));
          const int width = cp == Checkpoint::kQ || cp == Checkpoint::kAttnOut ? c.qWidth()
                            : cp == Checkpoint::kK || cp == Checkpoint::kV     ? c.kvWidth()
                                                                               : c.hidden;
          CHECK(ref::CheckpointWidth(cp, trace->shape) == width);
          CHECK(trace->Buffer(layer, cp).size() == static_cast<size_t>(t) * width);
        }
      }

      // The trace's logits are RunDecoder's, exactly.
      CHECK(trace->logits.firstPosition == 0);
      CHECK(trace->logits.rows == t);
      CHECK(trace->logits.values == logits->values);

      // Recomputed from the last layer's output: final norm, head, softcap.
      const std::vector<double> last = Vec(trace->Buffer(c.layerCount() - 1, Checkpoint::kOutput));
      const std::vector<double> normed = Norm(c, last, weights.outputNorm);
      std::vector<double> recomputed(static_cast<size_t>(t) * weights.head.rows);
      REQUIRE(ref::ProjectStreamed(normed, t, weights.head, recomputed).ok());
      if (c.finalLogitSoftcap > 0) {
        for (double& v : recomputed) v = c.finalLogitSoftcap * std::tanh(v / c.finalLogitSoftcap);
      }
      CHECK(recomputed == logits->values);

      // The buffers chain: output = residual1 + ffnOut, and each layer's norm1 normalises the
      // stream the layer before left (the embeddings for layer 0).
      std::vector<double> stream = trace->embeddings;
      for (int layer = 0; layer < c.layerCount(); ++layer) {
        CAPTURE(layer);
        CHECK(Vec(trace->Buffer(layer, Checkpoint::kNorm1)) == Norm(c, stream, weights.layers[layer].attnNorm));
        CHECK(Vec(trace->Buffer(layer, Checkpoint::kNorm2)) ==
              Norm(c, trace->Buffer(layer, Checkpoint::kResidual1), weights.layers[layer].ffnNorm));
        std::vector<double> sum(stream.size());
        ref::Add(trace->Buffer(layer, Checkpoint::kResidual1), trace->Buffer(layer, Checkpoint::kFfnOut), sum);
        CHECK(sum == Vec(trace->Buffer(layer, Checkpoint::kOutput)));
        stream = Vec(trace->Buffer(layer, Checkpoint::kOutput));
      }
    }
  }
}

TEST_CASE("a trace of the last position only, and RunDecoder's last row") {
  const wb::model::WeightSource source = OpenSource((wbtest::FixtureDir("llama") / "hf").string());
  const wb::model::ModelWeights weights = Bind(source);
  auto trace = ref::RunDecoderTrace(source.config(), weights, kTokens, ref::LogitPositions::kLast);
  REQUIRE(trace.ok());
  auto last = ref::RunDecoder(source.config(), weights, kTokens, ref::LogitPositions::kLast);
  REQUIRE(last.ok());
  CHECK(trace->logits.rows == 1);
  CHECK(trace->logits.firstPosition == static_cast<int>(kTokens.size()) - 1);
  CHECK(trace->logits.values == last->values);
  // The layers still hold every position.
  CHECK(trace->Buffer(0, Checkpoint::kOutput).size() == kTokens.size() * source.config().hidden);
}

TEST_CASE("a token outside the vocabulary is refused by the trace too") {
  const wb::model::WeightSource source = OpenSource((wbtest::FixtureDir("llama") / "hf").string());
  const wb::model::ModelWeights weights = Bind(source);
  const std::vector<int> bad = {1, 64};
  auto trace = ref::RunDecoderTrace(source.config(), weights, bad);
  REQUIRE_FALSE(trace.ok());
  CHECK(trace.error().kind == wb::ErrorKind::kBadUsage);
}

}  // namespace test_decoder_trace
