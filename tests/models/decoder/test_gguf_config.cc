// ModelConfig from GGUF metadata and the tensor table: the fixtures read as their HF
// twins, llama.cpp's reader defaults, tensor-table inference, Gemma's llama.cpp rules, and
// the exact text of every rejection.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "decoder_test_support.h"
#include "reference/decoder/rope_frequencies.h"
#include "reference/gen/gguf_writer.h"
#include "model/config/config.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_gguf_config {

using wb::model::Family;
using wb::model::LoadModelConfig;
using wb::model::ModelConfig;
using wb::model::QkNorm;
using wb::model::RopePairing;
using wb::model::RopeScaling;
namespace fx = ref::fixtures;
namespace fs = std::filesystem;

namespace {

std::vector<std::byte> F32Zeros(uint64_t count) { return std::vector<std::byte>(count * 4); }

// A GGUF with the keys every test needs (2 layers unless `layers` says otherwise, hidden 32,
// 4 heads over 2, ffn 64) and token_embd [64, 32]; `more` adds keys and tensors.
std::string WriteGguf(const wbtest::TempDir& dir, const std::string& arch, std::function<void(fx::GgufWriter&)> more,
                      int layers = 2) {
  fx::GgufWriter w;
  w.AddString("general.architecture", arch);
  w.AddU32(arch + ".context_length", 128);
  w.AddU32(arch + ".embedding_length", 32);
  w.AddU32(arch + ".block_count", layers);
  w.AddU32(arch + ".feed_forward_length", 64);
  w.AddU32(arch + ".attention.head_count", 4);
  w.AddF32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.AddTensor("token_embd.weight", wb::TensorType::kF32, {64, 32}, F32Zeros(64 * 32));
  more(w);
  static int counter = 0;
  const std::string path = (dir.path() / ("m" + std::to_string(counter++) + ".gguf")).string();
  REQUIRE(fx::WriteFileBytes(path, w.Serialize()).ok());
  return path;
}

ModelConfig Load(const std::string& path) {
  auto c = LoadModelConfig(path);
  REQUIRE_MESSAGE(c.ok(), c.error().message);
  return *c;
}

std::string Rejection(const std::string& path) {
  auto c = LoadModelConfig(path);
  REQUIRE_FALSE(c.ok());
  return c.error().message;
}

void Nothing(fx::GgufWriter&) {}

}  // namespace

TEST_CASE("each fixture's GGUF reads as its HF config, but for the file-layout switches") {
  for (const std::string& family : wbtest::Families()) {
    CAPTURE(family);
    const ModelConfig hf = Load((wbtest::FixtureDir(family) / "hf").string());
    const ModelConfig gguf = Load((wbtest::FixtureDir(family) / "model.gguf").string());
    // mistral is stored as llama (the converter registers it on LlamaModel).
    CHECK(gguf.family == (hf.family == Family::kMistral ? Family::kLlama : hf.family));
    CHECK(gguf.vocab == hf.vocab);
    CHECK(gguf.hidden == hf.hidden);
    CHECK(gguf.heads == hf.heads);
    CHECK(gguf.kvHeads == hf.kvHeads);
    CHECK(gguf.headDim == hf.headDim);
    CHECK(gguf.ffn == hf.ffn);
    CHECK(gguf.experts == hf.experts);
    CHECK(gguf.expertsPerToken == hf.expertsPerToken);
    CHECK(gguf.expertFfn == hf.expertFfn);
    CHECK(gguf.maxPositions == hf.maxPositions);
    REQUIRE(gguf.layerCount() == hf.layerCount());
    for (int i = 0; i < hf.layerCount(); ++i) {
      CHECK(gguf.layers[i].sliding == hf.layers[i].sliding);
      CHECK(gguf.layers[i].moe == hf.layers[i].moe);
    }
    CHECK(gguf.rmsEps == doctest::Approx(hf.rmsEps).epsilon(1e-7));  // stored as f32
    CHECK(gguf.slidingWindow == hf.slidingWindow);
    CHECK(gguf.qkNorm == hf.qkNorm);
    CHECK(gguf.qkvBias == hf.qkvBias);
    CHECK(gguf.outputBias == hf.outputBias);
    CHECK(gguf.blockNorms == hf.blockNorms);
    CHECK(gguf.activation == hf.activation);
    CHECK(gguf.embeddingScale == hf.embeddingScale);
    CHECK(gguf.attentionScale == hf.attentionScale);
    CHECK(gguf.tiedHead == hf.tiedHead);
    CHECK(gguf.renormaliseTopK == hf.renormaliseTopK);
    CHECK(gguf.hasLocalRope == hf.hasLocalRope);
    // The same frequencies, whether from bands (HF) or the converter's divisors (GGUF).
    const auto a = ref::ComputeRopeFrequencies(hf.rope, hf.headDim);
    const auto b = ref::ComputeRopeFrequencies(gguf.rope, gguf.headDim);
    for (size_t i = 0; i < a.inverse.size(); ++i) CHECK(b.inverse[i] == doctest::Approx(a.inverse[i]).epsilon(1e-12));
    CHECK(b.attentionFactor == doctest::Approx(a.attentionFactor).epsilon(1e-7));
    // What differs is how the file stores the model.
    const bool llamaFamily = hf.family == Family::kLlama || hf.family == Family::kMistral || hf.family == Family::kMixtral;
    CHECK(hf.ropePairing == RopePairing::kHalfSplit);
    CHECK(gguf.ropePairing == (llamaFamily ? RopePairing::kAdjacent : RopePairing::kHalfSplit));
    CHECK(gguf.normShift == wb::model::NormShift::kNone);
    CHECK(gguf.format == wb::model::WeightFormat::kGguf);
  }
}

TEST_CASE("llama.cpp's reader defaults: kv heads, key_length, freq_base, vocab from token_embd") {
  wbtest::TempDir dir;
  const ModelConfig c = Load(WriteGguf(dir, "llama", Nothing));
  CHECK(c.family == Family::kLlama);
  CHECK(c.kvHeads == 4);
  CHECK(c.headDim == 8);
  CHECK(c.rope.theta == 10000.0);
  CHECK(c.vocab == 64);
  CHECK(c.tiedHead);  // no output.weight
  CHECK_FALSE(c.qkvBias);
  CHECK(c.qkNorm == QkNorm::kNone);
  CHECK(c.ropePairing == RopePairing::kAdjacent);
  CHECK_FALSE(c.anyMoe());
}

TEST_CASE("tensor-table inference: head, biases, QK-norm kind, MoE layers, rope_freqs") {
  wbtest::TempDir dir;
  ModelConfig c = Load(WriteGguf(dir, "qwen3", [](fx::GgufWriter& w) {
    w.AddTensor("output.weight", wb::TensorType::kF32, {64, 32}, F32Zeros(64 * 32));
    w.AddTensor("blk.0.attn_q.bias", wb::TensorType::kF32, {32}, F32Zeros(32));
    w.AddTensor("blk.0.attn_q_norm.weight", wb::TensorType::kF32, {8}, F32Zeros(8));
  }));
  CHECK_FALSE(c.tiedHead);
  CHECK(c.qkvBias);
  CHECK_FALSE(c.outputBias);
  CHECK(c.qkNorm == QkNorm::kPerHead);
  CHECK(c.ropePairing == RopePairing::kHalfSplit);
  c = Load(WriteGguf(dir, "olmoe", [](fx::GgufWriter& w) {
    w.AddU32("olmoe.expert_count", 4);
    w.AddU32("olmoe.expert_used_count", 2);
    w.AddTensor("blk.0.attn_output.bias", wb::TensorType::kF32, {32}, F32Zeros(32));
    w.AddTensor("blk.0.attn_q_norm.weight", wb::TensorType::kF32, {32}, F32Zeros(32));
    w.AddTensor("blk.1.ffn_gate_inp.weight", wb::TensorType::kF32, {4, 32}, F32Zeros(4 * 32));
  }));
  CHECK(c.outputBias);
  CHECK(c.qkNorm == QkNorm::kWholeProjection);
  CHECK_FALSE(c.layers[0].moe);
  CHECK(c.layers[1].moe);
  CHECK(c.expertFfn == 64);  // feed_forward_length is OLMoE's expert width
  CHECK_FALSE(c.renormaliseTopK);  // llama.cpp's olmoe graph never renormalises
  c = Load(WriteGguf(dir, "llama", [](fx::GgufWriter& w) {
    std::vector<std::byte> divisors;
    for (float f : {1.0f, 2.0f, 4.0f, 4.0f}) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      for (int i = 0; i < 4; ++i) divisors.push_back(static_cast<std::byte>(bits >> (8 * i)));
    }
    w.AddTensor("rope_freqs.weight", wb::TensorType::kF32, {4}, divisors);
  }));
  CHECK(c.rope.scaling == RopeScaling::kLlama3);
  CHECK(c.rope.frequencyDivisors == std::vector<double>{1.0, 2.0, 4.0, 4.0});
}

TEST_CASE("llama with experts is mixtral, renormalised unless expert_weights_norm says no") {
  wbtest::TempDir dir;
  auto experts = [](fx::GgufWriter& w) {
    w.AddU32("llama.expert_count", 4);
    w.AddU32("llama.expert_used_count", 2);
    for (int i = 0; i < 2; ++i) {
      w.AddTensor("blk." + std::to_string(i) + ".ffn_gate_inp.weight", wb::TensorType::kF32, {4, 32}, F32Zeros(128));
    }
  };
  ModelConfig c = Load(WriteGguf(dir, "llama", experts));
  CHECK(c.family == Family::kMixtral);
  CHECK(c.renormaliseTopK);
  CHECK(c.ffn == 0);
  CHECK(c.expertFfn == 64);
  c = Load(WriteGguf(dir, "qwen3moe", [](fx::GgufWriter& w) {
    w.AddU32("qwen3moe.expert_count", 4);
    w.AddU32("qwen3moe.expert_used_count", 2);
    w.AddU32("qwen3moe.expert_feed_forward_length", 16);
    w.AddTensor("blk.0.ffn_gate_inp.weight", wb::TensorType::kF32, {4, 32}, F32Zeros(128));
  }));
  CHECK(c.renormaliseTopK);  // llama.cpp hard-codes it for qwen3moe (D8)
  CHECK(c.expertFfn == 16);
  CHECK(c.ffn == 64);  // layer 1 is dense
  c = Load(WriteGguf(dir, "qwen3moe", [](fx::GgufWriter& w) {
    w.AddU32("qwen3moe.expert_count", 4);
    w.AddU32("qwen3moe.expert_used_count", 2);
    w.AddBool("qwen3moe.expert_weights_norm", false);
    w.AddTensor("blk.0.ffn_gate_inp.weight", wb::TensorType::kF32, {4, 32}, F32Zeros(128));
  }));
  CHECK_FALSE(c.renormaliseTopK);
}

TEST_CASE("RoPE scaling keys: a factor without a type is linear; yarn with its keys") {
  wbtest::TempDir dir;
  ModelConfig c = Load(WriteGguf(dir, "qwen2", [](fx::GgufWriter& w) { w.AddF32("qwen2.rope.scaling.factor", 4.0f); }));
  CHECK(c.rope.scaling == RopeScaling::kLinear);
  CHECK(c.rope.factor == 4.0);
  c = Load(WriteGguf(dir, "qwen2", [](fx::GgufWriter& w) {
    w.AddString("qwen2.rope.scaling.type", "yarn");
    w.AddF32("qwen2.rope.scaling.factor", 4.0f);
    w.AddU32("qwen2.rope.scaling.original_context_length", 32);
    w.AddF32("qwen2.rope.scaling.yarn_beta_fast", 16.0f);
  }));
  CHECK(c.rope.scaling == RopeScaling::kYarn);
  CHECK(c.rope.originalContext == 32.0);
  CHECK(c.rope.betaFast == 16.0);
  CHECK(c.rope.betaSlow == 1.0);
  CHECK(c.rope.attentionFactor == doctest::Approx(1.0 + 0.1 * std::log(4.0)).epsilon(1e-12));
}

TEST_CASE("gemma3: llama.cpp's period 6, or the pattern key; its attention-scale rule; local base") {
  wbtest::TempDir dir;
  auto window = [](fx::GgufWriter& w) { w.AddU32("gemma3.attention.sliding_window", 512); };
  ModelConfig c = Load(WriteGguf(dir, "gemma3", window, 12));
  for (int i = 0; i < 12; ++i) CHECK_MESSAGE(c.layers[i].sliding == (i != 5 && i != 11), "layer ", i);
  CHECK(c.slidingWindow == 512);
  CHECK(c.localRope.theta == 10000.0);
  CHECK(c.attentionScale == 1.0 / std::sqrt(8.0));  // 1/√headDim below 62 layers
  CHECK(c.blockNorms == wb::model::BlockNorms::kSandwich);
  CHECK(c.activation == wb::model::Activation::kGeluTanh);
  CHECK(c.embeddingScale == wb::model::EmbeddingScale::kSqrtHidden);
  c = Load(WriteGguf(dir, "gemma3", [](fx::GgufWriter& w) {
    w.AddU32("gemma3.attention.sliding_window", 512);
    w.AddU32("gemma3.attention.sliding_window_pattern", 3);
    w.AddF32("gemma3.rope.freq_base_swa", 20000.0f);
    w.AddF32("gemma3.attention.scale", 0.125f);
  }, 6));
  CHECK(c.layers[0].sliding);
  CHECK_FALSE(c.layers[2].sliding);
  CHECK_FALSE(c.layers[5].sliding);
  CHECK(c.localRope.theta == 20000.0);
  CHECK(c.attentionScale == 0.125);
  c = Load(WriteGguf(dir, "gemma3", [](fx::GgufWriter& w) {
    w.AddU32("gemma3.attention.sliding_window", 512);
    w.AddU32("gemma3.attention.key_length", 16);
    w.AddU32("gemma3.attention.value_length", 16);
  }, 62));
  CHECK(c.headDim == 16);
  CHECK(c.attentionScale == 1.0 / std::sqrt(8.0));  // 27B: 1/√(hidden/heads), not 1/√headDim
  c = Load(WriteGguf(dir, "gemma3", [](fx::GgufWriter& w) {
    w.AddU32("gemma3.attention.sliding_window", 512);
    w.AddBoolArray("gemma3.attention.sliding_window_pattern", {false, true, true});
  }, 3));
  CHECK_FALSE(c.layers[0].sliding);
  CHECK(c.layers[1].sliding);
}

TEST_CASE("rejections name the file and the key, word for word") {
  wbtest::TempDir dir;
  std::string path = WriteGguf(dir, "phi3", Nothing);
  CHECK(Rejection(path) == path +
                               ": key 'general.architecture': \"phi3\" is not supported (supported: llama, qwen2, "
                               "qwen3, qwen3moe, gemma3, olmoe)");
  path = WriteGguf(dir, "llama", [](fx::GgufWriter& w) { w.AddU32("llama.rope.dimension_count", 4); });
  CHECK(Rejection(path) == path +
                               ": key 'llama.rope.dimension_count': 4 rotates part of a head of 8: partial rotary "
                               "embeddings are not supported");
  path = WriteGguf(dir, "qwen3", [](fx::GgufWriter& w) {
    w.AddU32("qwen3.attention.key_length", 8);
    w.AddU32("qwen3.attention.value_length", 16);
  });
  CHECK(Rejection(path) == path + ": key 'qwen3.attention.value_length': 16 differs from key_length 8; not supported");
  path = WriteGguf(dir, "qwen2", [](fx::GgufWriter& w) { w.AddU32("qwen2.attention.sliding_window", 4); });
  CHECK(Rejection(path) == path + ": key 'qwen2.attention.sliding_window': sliding windows are not supported for qwen2");
  path = WriteGguf(dir, "qwen2", [](fx::GgufWriter& w) { w.AddString("qwen2.rope.scaling.type", "longrope"); });
  CHECK(Rejection(path) ==
        path + ": key 'qwen2.rope.scaling.type': \"longrope\" is not supported (supported: none, linear, yarn)");
  path = WriteGguf(dir, "llama", [](fx::GgufWriter& w) {
    w.AddU32("llama.expert_count", 4);
    w.AddU32("llama.expert_used_count", 5);
    w.AddTensor("blk.0.ffn_gate_inp.weight", wb::TensorType::kF32, {4, 32}, F32Zeros(128));
  });
  CHECK(Rejection(path) == path + ": experts per token must lie in [1, 4], got 5");
  path = WriteGguf(dir, "llama", [](fx::GgufWriter& w) { w.AddU32("llama.attention.head_count_kv", 3); });
  CHECK(Rejection(path) == path + ": 4 query heads do not split evenly into 3 key/value heads");
}

}  // namespace test_gguf_config
