// For every family: the HF and GGUF fixtures give the same logits from the reference, both
// match goldens.json, Q8_0 llama stays close to f16, and each family's switches matter
// (flip one and the logits move), so these fixtures can catch a wrong switch.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "decoder_test_support.h"
#include "reference/fixtures/make_fixtures.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_fixtures_agree {

using wb::model::ModelConfig;
namespace fs = std::filesystem;

namespace {

// HF bf16 and GGUF f16 hold the same numbers, so only the order of a few sums differs
// (interleaved vs half pairs) and GGUF's f32 epsilon (1e-5 as f32 is 1e-5·(1 - 2.5e-9)):
// both move logits of magnitude < 20 by ~1e-12. 1e-9 leaves room, and a real mismatch (one
// weight, one switch) moves them by 1e-3 or more.
constexpr double kSameModel = 1e-9;

// Q8_0 rounds each weight to the nearest of 255 levels of its block of 32, an error of at
// most 1/254 of the block's largest magnitude (~0.4%). Through two layers and the head the
// logits (|x| < 3) move by ~2e-2; 5e-2 is the bound, and more than 1e-4 shows the file
// really is quantized.
constexpr double kQ8Bound = 5e-2;
constexpr double kQ8AtLeast = 1e-4;

// A flipped switch must move some logit by at least this.
constexpr double kSwitchMatters = 1e-3;

ref::fixtures::Goldens LoadGoldens(const std::string& family, const std::string& file = "goldens.json") {
  const auto path = wbtest::FixtureDir(family) / file;
  auto g = ref::fixtures::ParseGoldens(wbtest::ReadFile(path), path.string());
  REQUIRE_MESSAGE(g.ok(), g.error().message);
  return *g;
}

std::vector<double> Flatten(const std::vector<std::vector<double>>& rows) {
  std::vector<double> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

ref::DecoderLogits Logits(const std::string& path, const std::vector<int>& tokens) {
  auto logits = wbtest::AllLogits(path, tokens);
  REQUIRE_MESSAGE(logits.ok(), logits.error().message);
  return *logits;
}

}  // namespace

TEST_CASE("every family: HF and GGUF agree, and both match goldens.json") {
  for (const std::string& family : wbtest::Families()) {
    CAPTURE(family);
    const ref::fixtures::Goldens goldens = LoadGoldens(family);
    CHECK(goldens.modelType == family);
    REQUIRE(goldens.tokens.size() == 12);
    const std::vector<double> expected = Flatten(goldens.logits);
    const auto hf = Logits((wbtest::FixtureDir(family) / "hf").string(), goldens.tokens);
    const auto gguf = Logits((wbtest::FixtureDir(family) / "model.gguf").string(), goldens.tokens);
    REQUIRE(hf.rows == 12);
    REQUIRE(hf.vocab == 64);
    const double hfVsGguf = wbtest::MaxAbsDiff(hf.values, gguf.values);
    const double hfVsGoldens = wbtest::MaxAbsDiff(hf.values, expected);
    const double ggufVsGoldens = wbtest::MaxAbsDiff(gguf.values, expected);
    MESSAGE(family, ": max |HF - GGUF| = ", hfVsGguf, ", |HF - goldens| = ", hfVsGoldens, ", |GGUF - goldens| = ",
            ggufVsGoldens);
    CHECK(hfVsGguf < kSameModel);
    CHECK(hfVsGoldens < kSameModel);
    CHECK(ggufVsGoldens < kSameModel);
    // Not a degenerate model: finite, and the positions differ.
    double largest = 0;
    for (double v : expected) largest = std::max(largest, std::abs(v));
    CHECK(std::isfinite(largest));
    CHECK(largest > 0.5);
    CHECK(wbtest::MaxAbsDiff(goldens.logits[0], goldens.logits[11]) > 0.1);
  }
}

// The switches llama.cpp's qwen3moe cannot load (a dense layer, attention biases) live in an
// HF-only checkpoint; the GGUF reader's dense-layer path is checked on a GGUF converted from
// it here, as the generator would write it.
TEST_CASE("the qwen3_moe dense-layer variant: HF, its goldens and a GGUF of it agree") {
  const fs::path folder = wbtest::FixtureDir("qwen3_moe") / "hf-dense-layer";
  const ref::fixtures::Goldens goldens = LoadGoldens("qwen3_moe", "goldens-dense-layer.json");
  CHECK(goldens.tokens == LoadGoldens("qwen3_moe").tokens);
  auto config = wb::model::LoadModelConfig(folder.string());
  REQUIRE_MESSAGE(config.ok(), config.error().message);
  REQUIRE(config->layers.size() == 3);
  CHECK(config->layers[0].moe);
  CHECK_FALSE(config->layers[1].moe);
  CHECK(config->layers[2].moe);
  CHECK(config->qkvBias);
  CHECK(config->outputBias);

  const auto hf = Logits(folder.string(), goldens.tokens);
  CHECK(wbtest::MaxAbsDiff(hf.values, Flatten(goldens.logits)) < kSameModel);
  // Not the default fixture under another name.
  CHECK(wbtest::MaxAbsDiff(goldens.logits[11], LoadGoldens("qwen3_moe").logits[11]) > kSwitchMatters);

  wbtest::TempDir scratch;
  const std::string path = (scratch.path() / "dense-layer.gguf").string();
  const wb::Status written = wbtest::WriteVariantGguf("qwen3_moe", "hf-dense-layer", path);
  REQUIRE_MESSAGE(written.ok(), written.error().message);
  auto ggufFile = wb::GgufFile::Open(path);
  REQUIRE(ggufFile.ok());
  CHECK(ggufFile->FindTensor("blk.0.ffn_gate_inp.weight") != nullptr);
  CHECK(ggufFile->FindTensor("blk.1.ffn_gate_inp.weight") == nullptr);  // the dense layer
  CHECK(ggufFile->FindTensor("blk.1.ffn_gate.weight") != nullptr);
  CHECK(wbtest::MaxAbsDiff(hf.values, Logits(path, goldens.tokens).values) < kSameModel);
}

TEST_CASE("llama Q8_0 stays within its bound of the f16 GGUF") {
  const ref::fixtures::Goldens goldens = LoadGoldens("llama");
  const auto f16 = Logits((wbtest::FixtureDir("llama") / "model.gguf").string(), goldens.tokens);
  const auto q8 = Logits((wbtest::FixtureDir("llama") / "model-q8_0.gguf").string(), goldens.tokens);
  const double diff = wbtest::MaxAbsDiff(f16.values, q8.values);
  MESSAGE("llama: max |Q8_0 - F16| = ", diff);
  CHECK(diff < kQ8Bound);
  CHECK(diff > kQ8AtLeast);
}

TEST_CASE("each fixture exercises its switches: flipping one moves the logits") {
  struct Flip {
    const char* family;
    const char* file;  // under the family's folder
    const char* what;
    std::function<void(ModelConfig&)> edit;
  };
  const std::vector<Flip> flips = {
      {"llama", "model.gguf", "half pairing on permuted rows",
       [](ModelConfig& c) { c.ropePairing = wb::model::RopePairing::kHalfSplit; }},
      {"llama", "hf", "interleaved pairing on HF rows",
       [](ModelConfig& c) { c.ropePairing = wb::model::RopePairing::kAdjacent; }},
      {"llama", "hf", "no llama3 scaling", [](ModelConfig& c) { c.rope.scaling = wb::model::RopeScaling::kNone; }},
      {"llama", "model.gguf", "rope_freqs all 1", [](ModelConfig& c) { c.rope.frequencyDivisors.assign(4, 1.0); }},
      {"mistral", "model.gguf", "no window", [](ModelConfig& c) { c.layers[1].sliding = false; }},
      {"mixtral", "hf", "no renormalisation", [](ModelConfig& c) { c.renormaliseTopK = false; }},
      {"mixtral", "hf", "top 1", [](ModelConfig& c) { c.expertsPerToken = 1; }},
      {"qwen2", "model.gguf", "no q/k/v bias", [](ModelConfig& c) { c.qkvBias = false; }},
      {"qwen2", "hf", "no YaRN", [](ModelConfig& c) { c.rope.scaling = wb::model::RopeScaling::kNone; }},
      {"qwen2", "hf", "YaRN without its attention factor", [](ModelConfig& c) { c.rope.attentionFactor = 1.0; }},
      {"qwen3", "hf", "no QK-norm", [](ModelConfig& c) { c.qkNorm = wb::model::QkNorm::kNone; }},
      {"qwen3", "hf", "theta 1e4", [](ModelConfig& c) { c.rope.theta = 1e4; }},
      {"qwen3_moe", "model.gguf", "not renormalised", [](ModelConfig& c) { c.renormaliseTopK = false; }},
      {"qwen3_moe", "hf", "top 1", [](ModelConfig& c) { c.expertsPerToken = 1; }},
      {"qwen3_moe", "hf-dense-layer", "no o bias", [](ModelConfig& c) { c.outputBias = false; }},
      {"qwen3_moe", "hf-dense-layer", "no q/k/v bias", [](ModelConfig& c) { c.qkvBias = false; }},
      {"gemma3_text", "hf", "norm weights w instead of 1 + w",
       [](ModelConfig& c) { c.normShift = wb::model::NormShift::kNone; }},
      {"gemma3_text", "hf", "no embedding scale",
       [](ModelConfig& c) { c.embeddingScale = wb::model::EmbeddingScale::kNone; }},
      {"gemma3_text", "model.gguf", "SiLU", [](ModelConfig& c) { c.activation = wb::model::Activation::kSilu; }},
      {"gemma3_text", "model.gguf", "attention scale 1/sqrt(8)",
       [](ModelConfig& c) { c.attentionScale = 1.0 / std::sqrt(8.0); }},
      {"gemma3_text", "hf", "no local base", [](ModelConfig& c) { c.hasLocalRope = false; }},
      {"gemma3_text", "hf", "no linear scaling", [](ModelConfig& c) { c.rope.scaling = wb::model::RopeScaling::kNone; }},
      {"olmoe", "model.gguf", "no QK-norm", [](ModelConfig& c) { c.qkNorm = wb::model::QkNorm::kNone; }},
      {"olmoe", "hf", "renormalised", [](ModelConfig& c) { c.renormaliseTopK = true; }},
  };
  for (const Flip& flip : flips) {
    const std::string family = flip.family, what = flip.what;
    CAPTURE(family);
    CAPTURE(what);
    const std::string path = (wbtest::FixtureDir(flip.family) / flip.file).string();
    const std::vector<int> tokens = LoadGoldens(flip.family).tokens;
    const auto base = Logits(path, tokens);
    auto flipped = wbtest::AllLogitsWith(path, tokens, flip.edit);
    REQUIRE_MESSAGE(flipped.ok(), flipped.error().message);
    CHECK(wbtest::MaxAbsDiff(base.values, flipped->values) > kSwitchMatters);
  }
}

}  // namespace test_fixtures_agree
