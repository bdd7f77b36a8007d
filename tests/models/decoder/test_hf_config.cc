// ModelConfig from config.json: each family's class defaults, the three RoPE forms, the
// per-layer rules, and the exact text of every rejection.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "model/config/hf_config.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_hf_config {

using wb::model::Activation;
using wb::model::BlockNorms;
using wb::model::EmbeddingScale;
using wb::model::Family;
using wb::model::ModelConfig;
using wb::model::NormShift;
using wb::model::ParseHfConfig;
using wb::model::QkNorm;
using wb::model::RopeScaling;
using Json = nlohmann::json;

namespace {

// Only the keys that have no class default we rely on: 32 heads so every family's default
// kv-head count (8, 32, 4) divides them; 12 layers so Gemma's period 6 shows twice.
Json Minimal(const std::string& modelType) {
  return Json{{"model_type", modelType}, {"vocab_size", 64},      {"hidden_size", 1024},
              {"intermediate_size", 64}, {"num_hidden_layers", 12}, {"num_attention_heads", 32}};
}

ModelConfig Parse(const Json& j) {
  auto c = ParseHfConfig(j.dump(), "config.json");
  REQUIRE_MESSAGE(c.ok(), c.error().message);
  return *c;
}

std::string Rejection(const Json& j) {
  auto c = ParseHfConfig(j.dump(), "config.json");
  REQUIRE_FALSE(c.ok());
  return c.error().message;
}

int SlidingCount(const ModelConfig& c) {
  int n = 0;
  for (const auto& l : c.layers) n += l.sliding ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("llama defaults: kv heads = heads, head_dim = H/heads, eps 1e-6, theta 1e4, untied, no bias") {
  const ModelConfig c = Parse(Minimal("llama"));
  CHECK(c.family == Family::kLlama);
  CHECK(c.kvHeads == 32);
  CHECK(c.headDim == 32);
  CHECK(c.rmsEps == 1e-6);
  CHECK(c.rope.theta == 1e4);
  CHECK(c.rope.scaling == RopeScaling::kNone);
  CHECK(c.maxPositions == 2048);
  CHECK_FALSE(c.tiedHead);
  CHECK_FALSE(c.qkvBias);
  CHECK_FALSE(c.outputBias);
  CHECK(c.qkNorm == QkNorm::kNone);
  CHECK(c.activation == Activation::kSilu);
  CHECK(SlidingCount(c) == 0);
  CHECK(c.ffn == 64);
  CHECK_FALSE(c.anyMoe());
  CHECK(c.attentionScale == doctest::Approx(1.0 / std::sqrt(32.0)).epsilon(1e-15));
}

TEST_CASE("llama attention_bias gives q, k, v and o biases") {
  Json j = Minimal("llama");
  j["attention_bias"] = true;
  const ModelConfig c = Parse(j);
  CHECK(c.qkvBias);
  CHECK(c.outputBias);
}

TEST_CASE("mistral defaults: 8 kv heads and a 4096 window on every layer; null turns it off") {
  ModelConfig c = Parse(Minimal("mistral"));
  CHECK(c.kvHeads == 8);
  CHECK(c.slidingWindow == 4096);
  CHECK(SlidingCount(c) == 12);
  CHECK(c.maxPositions == 131072);
  Json j = Minimal("mistral");
  j["sliding_window"] = nullptr;
  c = Parse(j);
  CHECK(SlidingCount(c) == 0);
}

TEST_CASE("mixtral defaults: eps 1e-5, theta 1e6, 8 experts top 2, always renormalised, no window") {
  const ModelConfig c = Parse(Minimal("mixtral"));
  CHECK(c.kvHeads == 8);
  CHECK(c.rmsEps == 1e-5);
  CHECK(c.rope.theta == 1e6);
  CHECK(c.experts == 8);
  CHECK(c.expertsPerToken == 2);
  CHECK(c.expertFfn == 64);
  CHECK(c.renormaliseTopK);
  CHECK(c.ffn == 0);
  CHECK(SlidingCount(c) == 0);
  Json alias = Minimal("mixtral");
  alias["num_experts"] = 4;  // the attribute alias of num_local_experts
  CHECK(Parse(alias).experts == 4);
}

TEST_CASE("qwen2 defaults: q/k/v bias without o bias, 32 kv heads") {
  const ModelConfig c = Parse(Minimal("qwen2"));
  CHECK(c.kvHeads == 32);
  CHECK(c.qkvBias);
  CHECK_FALSE(c.outputBias);
  CHECK(c.maxPositions == 32768);
  CHECK(c.qkNorm == QkNorm::kNone);
}

TEST_CASE("qwen3 defaults: head_dim 128 and per-head QK-norm; null head_dim means H/heads") {
  ModelConfig c = Parse(Minimal("qwen3"));
  CHECK(c.headDim == 128);
  CHECK(c.qkNorm == QkNorm::kPerHead);
  CHECK(c.attentionScale == doctest::Approx(1.0 / std::sqrt(128.0)).epsilon(1e-15));
  Json j = Minimal("qwen3");
  j["head_dim"] = nullptr;
  CHECK(Parse(j).headDim == 32);
}

TEST_CASE("qwen3_moe defaults: 4 kv heads, 128 experts top 8 of width 768, not renormalised, all MoE") {
  const ModelConfig c = Parse(Minimal("qwen3_moe"));
  CHECK(c.kvHeads == 4);
  CHECK(c.headDim == 32);
  CHECK(c.experts == 128);
  CHECK(c.expertsPerToken == 8);
  CHECK(c.expertFfn == 768);
  CHECK_FALSE(c.renormaliseTopK);
  CHECK_FALSE(c.anyDense());
  CHECK(c.qkNorm == QkNorm::kPerHead);
}

TEST_CASE("qwen3_moe dense layers: mlp_only_layers and decoder_sparse_step") {
  Json j = Minimal("qwen3_moe");
  j["num_hidden_layers"] = 4;
  j["decoder_sparse_step"] = 2;  // MoE iff (i + 1) % 2 == 0: layers 1 and 3
  j["mlp_only_layers"] = Json::array({3});
  j["num_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  const ModelConfig c = Parse(j);
  CHECK_FALSE(c.layers[0].moe);
  CHECK(c.layers[1].moe);
  CHECK_FALSE(c.layers[2].moe);
  CHECK_FALSE(c.layers[3].moe);
  CHECK(c.ffn == 64);  // the dense layers' width
}

TEST_CASE("gemma3_text defaults: every sixth layer global, sandwich (1 + w) norms, scaled embeddings") {
  const ModelConfig c = Parse(Minimal("gemma3_text"));
  CHECK(c.kvHeads == 4);
  CHECK(c.headDim == 256);
  CHECK(c.tiedHead);
  CHECK(c.slidingWindow == 4096);
  for (int i = 0; i < 12; ++i) CHECK_MESSAGE(c.layers[i].sliding == (i != 5 && i != 11), "layer ", i);
  CHECK(c.rope.theta == 1e6);
  REQUIRE(c.hasLocalRope);
  CHECK(c.localRope.theta == 1e4);
  CHECK(c.localRope.scaling == RopeScaling::kNone);
  CHECK(c.activation == Activation::kGeluTanh);
  CHECK(c.blockNorms == BlockNorms::kSandwich);
  CHECK(c.normShift == NormShift::kAddOne);
  CHECK(c.embeddingScale == EmbeddingScale::kSqrtHidden);
  CHECK(c.qkNorm == QkNorm::kPerHead);
  CHECK(c.attentionScale == 1.0 / 16.0);  // query_pre_attn_scalar 256
  CHECK(c.finalLogitSoftcap == 0);
}

TEST_CASE("gemma3_text layers: layer_types wins, else sliding_window_pattern") {
  Json j = Minimal("gemma3_text");
  j["num_hidden_layers"] = 6;
  j["sliding_window_pattern"] = 3;
  ModelConfig c = Parse(j);
  CHECK(c.layers[0].sliding);
  CHECK(c.layers[1].sliding);
  CHECK_FALSE(c.layers[2].sliding);
  CHECK_FALSE(c.layers[5].sliding);
  j["layer_types"] = Json::array({"full_attention", "sliding_attention", "full_attention", "sliding_attention",
                                  "full_attention", "sliding_attention"});
  c = Parse(j);
  CHECK_FALSE(c.layers[0].sliding);
  CHECK(c.layers[5].sliding);
  j["hidden_act"] = "silu";  // Gemma3MLP reads hidden_activation only
  CHECK(Parse(j).activation == Activation::kGeluTanh);
  j["query_pre_attn_scalar"] = 64;
  j["final_logit_softcapping"] = 30.0;
  c = Parse(j);
  CHECK(c.attentionScale == 0.125);
  CHECK(c.finalLogitSoftcap == 30.0);
}

TEST_CASE("olmoe defaults: eps 1e-5, 64 experts top 8 not renormalised, whole-projection QK-norm") {
  const ModelConfig c = Parse(Minimal("olmoe"));
  CHECK(c.kvHeads == 32);
  CHECK(c.rmsEps == 1e-5);
  CHECK(c.experts == 64);
  CHECK(c.expertsPerToken == 8);
  CHECK(c.expertFfn == 64);
  CHECK_FALSE(c.renormaliseTopK);
  CHECK(c.qkNorm == QkNorm::kWholeProjection);
  CHECK(c.maxPositions == 4096);
}

TEST_CASE("RoPE form 1: rope_theta + rope_scaling, with either type key") {
  Json j = Minimal("llama");
  j["rope_theta"] = 500000.0;
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  ModelConfig c = Parse(j);
  CHECK(c.rope.theta == 500000.0);
  CHECK(c.rope.scaling == RopeScaling::kLinear);
  CHECK(c.rope.factor == 2.0);
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  c = Parse(j);
  CHECK(c.rope.scaling == RopeScaling::kLlama3);
  CHECK(c.rope.factor == 8.0);
  CHECK(c.rope.lowFreqFactor == 1.0);
  CHECK(c.rope.highFreqFactor == 4.0);
  CHECK(c.rope.originalContext == 8192.0);
  j["rope_scaling"] = nullptr;
  CHECK(Parse(j).rope.scaling == RopeScaling::kNone);
}

TEST_CASE("RoPE form 2: flat rope_parameters, YaRN with its defaults") {
  Json j = Minimal("qwen2");
  j["max_position_embeddings"] = 128;
  j["rope_parameters"] = {{"rope_type", "yarn"}, {"rope_theta", 20000.0}, {"factor", 4.0}};
  ModelConfig c = Parse(j);
  CHECK(c.rope.theta == 20000.0);
  CHECK(c.rope.scaling == RopeScaling::kYarn);
  CHECK(c.rope.originalContext == 128.0);  // falls back to max_position_embeddings
  CHECK(c.rope.betaFast == 32.0);
  CHECK(c.rope.betaSlow == 1.0);
  CHECK(c.rope.truncate);
  CHECK(c.rope.attentionFactor == doctest::Approx(0.1 * std::log(4.0) + 1.0).epsilon(1e-15));
  j["rope_parameters"]["mscale"] = 2.0;
  j["rope_parameters"]["mscale_all_dim"] = 1.0;
  c = Parse(j);
  CHECK(c.rope.attentionFactor ==
        doctest::Approx((0.2 * std::log(4.0) + 1.0) / (0.1 * std::log(4.0) + 1.0)).epsilon(1e-15));
  j["rope_parameters"]["attention_factor"] = 1.5;
  CHECK(Parse(j).rope.attentionFactor == 1.5);
}

TEST_CASE("RoPE form 3: Gemma's nested sets; a legacy rope_scaling joins full_attention only") {
  Json j = Minimal("gemma3_text");
  j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 2000000.0}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 5000.0}}}};
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  const ModelConfig c = Parse(j);
  CHECK(c.rope.theta == 2000000.0);
  CHECK(c.rope.scaling == RopeScaling::kLinear);
  CHECK(c.rope.factor == 8.0);
  CHECK(c.localRope.theta == 5000.0);
  CHECK(c.localRope.scaling == RopeScaling::kNone);
}

TEST_CASE("Gemma's v4 form: rope_theta with rope_scaling global, rope_local_base_freq local, unscaled") {
  Json j = Minimal("gemma3_text");
  j["rope_theta"] = 1000000.0;
  j["rope_local_base_freq"] = 20000.0;
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  const ModelConfig c = Parse(j);
  CHECK(c.rope.scaling == RopeScaling::kLinear);
  CHECK(c.localRope.theta == 20000.0);
  CHECK(c.localRope.scaling == RopeScaling::kNone);
}

TEST_CASE("rejections name the file and the key, word for word") {
  Json j = Minimal("phi3");
  CHECK(Rejection(j) ==
        "config.json: model_type: \"phi3\" is not supported (supported: llama, mistral, mixtral, qwen2, qwen3, "
        "qwen3_moe, gemma3_text, olmoe)");
  j = Minimal("olmoe");
  j["clip_qkv"] = 8.0;
  CHECK(Rejection(j) == "config.json: clip_qkv: clamping q, k and v is not supported; it must be null");
  j = Minimal("qwen2");
  j["use_sliding_window"] = true;
  CHECK(Rejection(j) ==
        "config.json: use_sliding_window: sliding windows are not supported for Qwen models; set it to false");
  j = Minimal("qwen3_moe");
  j["use_sliding_window"] = true;
  CHECK(Rejection(j) ==
        "config.json: use_sliding_window: sliding windows are not supported for Qwen models; set it to false");
  j = Minimal("llama");
  j["mlp_bias"] = true;
  CHECK(Rejection(j) == "config.json: mlp_bias: FFN biases are not supported");
  j = Minimal("llama");
  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  CHECK(Rejection(j) ==
        "config.json: rope_scaling.type: \"dynamic\" is not supported (supported: default, linear, llama3, yarn)");
  j = Minimal("qwen3");
  j["rope_parameters"] = {{"rope_type", "longrope"}, {"rope_theta", 1e4}};
  CHECK(Rejection(j) ==
        "config.json: rope_parameters.rope_type: \"longrope\" is not supported (supported: default, linear, "
        "llama3, yarn)");
  j = Minimal("llama");
  j["partial_rotary_factor"] = 0.5;
  CHECK(Rejection(j) == "config.json: partial_rotary_factor: partial rotary embeddings are not supported");
  j = Minimal("llama");
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  CHECK(Rejection(j) == "config.json: rope_scaling.low_freq_factor: missing");
  j = Minimal("llama");
  j["num_attention_heads"] = "32";
  CHECK(Rejection(j) == "config.json: num_attention_heads: expected an integer, got \"32\"");
  j = Minimal("llama");
  j.erase("hidden_size");
  CHECK(Rejection(j) == "config.json: hidden_size: missing");
  j = Minimal("gemma3");
  CHECK(Rejection(j) ==
        "config.json: model_type: \"gemma3\" is the multimodal Gemma 3; only its text model (gemma3_text) is "
        "supported");
  j = Minimal("qwen2");
  j["head_dim"] = 64;
  CHECK(Rejection(j) ==
        "config.json: head_dim: qwen2 ignores head_dim and uses hidden_size / num_attention_heads = 32; a "
        "different value (64) is not supported");
  j = Minimal("gemma3_text");
  j["hidden_activation"] = "gelu";
  CHECK(Rejection(j) ==
        "config.json: hidden_activation: \"gelu\" is not supported (supported: silu, gelu_pytorch_tanh)");
  CHECK(ParseHfConfig("{\"model_type\": ", "config.json").error().message == "config.json: not valid JSON");
}

TEST_CASE("validation: head groups, even head_dim, experts per token, a window for sliding layers") {
  Json j = Minimal("llama");
  j["num_key_value_heads"] = 5;
  CHECK(Rejection(j) == "config.json: 32 query heads do not split evenly into 5 key/value heads");
  j = Minimal("llama");
  j["head_dim"] = 33;
  CHECK(Rejection(j) == "config.json: headDim must be even (RoPE rotates pairs), got 33");
  j = Minimal("mixtral");
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 5;
  CHECK(Rejection(j) == "config.json: experts per token must lie in [1, 4], got 5");
  j = Minimal("olmoe");
  j["num_experts_per_tok"] = 0;
  CHECK(Rejection(j) == "config.json: experts per token must lie in [1, 64], got 0");
  j = Minimal("llama");
  j["rms_norm_eps"] = 0.0;
  CHECK(Rejection(j) == "config.json: rms epsilon must be positive, got 0");
  j = Minimal("llama");
  j["rope_theta"] = -1.0;
  CHECK(Rejection(j) == "config.json: rope theta must be positive, got -1");
  j = Minimal("gemma3_text");
  j["sliding_window"] = nullptr;
  CHECK(Rejection(j) == "config.json: sliding layers need a positive window, got 0");
  j = Minimal("llama");
  j["num_attention_heads"] = 1 << 16;
  j["num_key_value_heads"] = 1 << 16;
  j["head_dim"] = 1 << 16;
  CHECK(Rejection(j) == "config.json: heads x headDim = 4294967296 is more than the 1048576 the workbook allows");
  j = Minimal("llama");
  j["vocab_size"] = 0;
  CHECK(Rejection(j) == "config.json: vocab must be positive, got 0");
}

TEST_CASE("DescribeConfig spells out the switches a config implies") {
  const std::string gemma = wb::model::DescribeConfig(Parse(Minimal("gemma3_text")));
  for (const char* expected :
       {"family      gemma3_text (Hugging Face config from config.json)",
        "sizes       vocab 64, hidden 1024, 12 layers, 32 heads over 4 kv heads of 256, context 131072",
        "norms       sandwich (4 per layer), RMSNorm eps 1e-06, weights used as (1 + w), 1 added in f32 on load",
        "attention   scale 0.0625, q/k/v bias no, o bias no, QK-norm per head, before RoPE",
        "local rope  sliding layers: theta 10000", "sliding layers: 0 1 2 3 4 6 7 8 9 10",
        "embedding   scaled by sqrt(1024) = 32", "head        tied to the embedding matrix"}) {
    CHECK_MESSAGE(gemma.find(expected) != std::string::npos, expected, "\n", gemma);
  }
  Json j = Minimal("olmoe");
  j["num_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  const std::string olmoe = wb::model::DescribeConfig(Parse(j));
  CHECK(olmoe.find("experts     SiLU-gated, 4 experts of width 64, top 2 of a softmax over all, not renormalised; "
                   "layers: all") != std::string::npos);
  CHECK(olmoe.find("QK-norm over the whole q and k projections, before RoPE") != std::string::npos);
  CHECK(olmoe.find("window      none") != std::string::npos);
}

}  // namespace test_hf_config
