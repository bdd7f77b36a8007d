#include "model/config/hf_config.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/config/first_error.h"
#include "model/config/hf_rope.h"
#include "model/config/json_keys.h"

namespace wb::model {

namespace {

constexpr int kFromHeads = -1;      // a default computed from other keys
constexpr int kNotAField = -2;      // head_dim: the class has no such key (qwen2, olmoe)

// The defaults of transformers' config classes
// (src/transformers/models/<family>/configuration_<family>.py).
struct FamilyDefaults {
  Family family;
  std::string_view modelType;
  int kvHeads;          // num_key_value_heads when absent (kFromHeads: = num_attention_heads)
  int headDim;          // head_dim when absent (kFromHeads: hidden / heads)
  double rmsEps;
  double ropeTheta;
  bool tiedHead;
  int maxPositions;
  int slidingWindow;    // sliding_window when absent (0: none)
};

constexpr FamilyDefaults kFamilies[] = {
    {Family::kLlama, "llama", kFromHeads, kFromHeads, 1e-6, 1e4, false, 2048, 0},
    {Family::kMistral, "mistral", 8, kFromHeads, 1e-6, 1e4, false, 131072, 4096},
    {Family::kMixtral, "mixtral", 8, kFromHeads, 1e-5, 1e6, false, 131072, 0},
    {Family::kQwen2, "qwen2", 32, kNotAField, 1e-6, 1e4, false, 32768, 0},
    {Family::kQwen3, "qwen3", 32, 128, 1e-6, 1e4, false, 32768, 0},
    {Family::kQwen3Moe, "qwen3_moe", 4, kFromHeads, 1e-6, 1e4, false, 32768, 0},
    {Family::kGemma3Text, "gemma3_text", 4, 256, 1e-6, 1e6, true, 131072, 4096},
    {Family::kOlmoe, "olmoe", kFromHeads, kNotAField, 1e-5, 1e4, false, 4096, 0},
};

const FamilyDefaults* FindFamily(std::string_view modelType) {
  for (const FamilyDefaults& f : kFamilies) {
    if (f.modelType == modelType) return &f;
  }
  return nullptr;
}

bool IsQwen(Family f) { return f == Family::kQwen2 || f == Family::kQwen3 || f == Family::kQwen3Moe; }

// hidden_act / hidden_activation: the two activations the families use.
Expected<Activation> ReadActivation(const JsonKeys& keys, Family family) {
  // Gemma3MLP reads hidden_activation (a hidden_act key is never used); the others hidden_act.
  const bool gemma = family == Family::kGemma3Text;
  const std::string key = gemma ? "hidden_activation" : "hidden_act";
  const std::string fallback = gemma ? "gelu_pytorch_tanh" : "silu";
  auto name = keys.String(key, fallback);
  if (!name) return name.error();
  if (*name == "silu" || *name == "swish") return Activation::kSilu;
  if (*name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  return keys.Wrong(key, fmt::format("\"{}\" is not supported (supported: silu, gelu_pytorch_tanh)", *name));
}

// head_dim, by the family's rule (its configuration_<family>.py and modeling code).
Expected<int> ReadHeadDim(const JsonKeys& keys, const FamilyDefaults& f, int hidden, int heads) {
  const int derived = hidden % heads == 0 ? hidden / heads : 0;
  if (f.headDim == kNotAField) {
    // The modeling code computes hidden / heads and never reads a head_dim key.
    auto given = keys.NullableInt("head_dim", derived, derived);
    if (!given) return given.error();
    if (*given != derived) {
      return keys.Wrong("head_dim", fmt::format("{} ignores head_dim and uses hidden_size / num_attention_heads = {}; "
                                                "a different value ({}) is not supported",
                                                f.modelType, derived, *given));
    }
  } else if (keys.Find("head_dim") == nullptr && f.headDim != kFromHeads) {
    return f.headDim;  // absent: the class default (qwen3 128, gemma3 256)
  } else if (keys.Has("head_dim")) {
    return keys.Int("head_dim");
  }
  // null, or absent where the default is hidden / heads.
  if (derived == 0) {
    return keys.Wrong("num_attention_heads", fmt::format("does not divide hidden_size {} and head_dim is not given",
                                                         hidden));
  }
  return derived;
}

// Per-layer sliding flags (layer_types, or the rule of each family's config
// class: __post_init__ for qwen2/qwen3, Gemma3TextConfig in models/gemma3/modular_gemma3.py).
Status ReadWindows(const JsonKeys& keys, const FamilyDefaults& f, ModelConfig& c) {
  FirstError e;
  if (IsQwen(f.family)) {
    // Qwen nulls sliding_window unless use_sliding_window; the reference implements no
    // Qwen windows, so the switch must be off.
    if (e.Take(keys.Bool("use_sliding_window", false))) {
      return keys.Wrong("use_sliding_window", "sliding windows are not supported for Qwen models; set it to false");
    }
    return e.ok() ? Status::Ok() : Status(e.error());
  }
  if (f.family == Family::kLlama || f.family == Family::kOlmoe) return Status::Ok();  // no window in the class
  c.slidingWindow = e.Take(keys.NullableInt("sliding_window", f.slidingWindow, 0));
  if (!e.ok()) return e.error();
  if (f.family != Family::kGemma3Text) {
    // Mistral and Mixtral: every layer, when the window is set.
    for (LayerRecipe& l : c.layers) l.sliding = c.slidingWindow > 0;
    return Status::Ok();
  }
  // Gemma 3: layer_types, else every `sliding_window_pattern`-th layer is global.
  if (keys.Has("layer_types")) {
    const nlohmann::json& types = *keys.Find("layer_types");
    if (!types.is_array() || types.size() != c.layers.size()) {
      return keys.Wrong("layer_types", fmt::format("expected a list of {} layer types", c.layers.size()));
    }
    for (size_t i = 0; i < types.size(); ++i) {
      const std::string type = types[i].is_string() ? types[i].get<std::string>() : "";
      if (type != "sliding_attention" && type != "full_attention") {
        return keys.Wrong("layer_types",
                          fmt::format("entry {} is {}; expected \"sliding_attention\" or \"full_attention\"", i,
                                      types[i].dump()));
      }
      c.layers[i].sliding = type == "sliding_attention";
    }
    return Status::Ok();
  }
  const int pattern = e.Take(keys.Int("sliding_window_pattern", 6));
  if (!e.ok()) return e.error();
  if (pattern < 1) return keys.Wrong("sliding_window_pattern", fmt::format("must be positive, got {}", pattern));
  for (int i = 0; i < c.layerCount(); ++i) c.layers[i].sliding = (i + 1) % pattern != 0;
  return Status::Ok();
}

// Experts, per family (each family's configuration and sparse MoE block:
// MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock, OlmoeSparseMoeBlock).
Status ReadExperts(const JsonKeys& keys, Family family, int intermediate, ModelConfig& c) {
  FirstError e;
  switch (family) {
    case Family::kMixtral: {
      const std::string key = keys.Has("num_local_experts") || !keys.Has("num_experts") ? "num_local_experts"
                                                                                         : "num_experts";
      c.experts = e.Take(keys.Int(key, 8));
      c.expertsPerToken = e.Take(keys.Int("num_experts_per_tok", 2));
      c.expertFfn = intermediate;
      c.renormaliseTopK = true;  // MixtralSparseMoeBlock always divides by the top-k sum
      for (LayerRecipe& l : c.layers) l.moe = true;
      break;
    }
    case Family::kOlmoe: {
      const std::string key = keys.Has("num_experts") || !keys.Has("num_local_experts") ? "num_experts"
                                                                                         : "num_local_experts";
      c.experts = e.Take(keys.Int(key, 64));
      c.expertsPerToken = e.Take(keys.Int("num_experts_per_tok", 8));
      c.expertFfn = intermediate;  // OLMoE's intermediate_size is one expert's width
      c.renormaliseTopK = e.Take(keys.Bool("norm_topk_prob", false));
      for (LayerRecipe& l : c.layers) l.moe = true;
      break;
    }
    case Family::kQwen3Moe: {
      c.experts = e.Take(keys.Int("num_experts", 128));
      c.expertsPerToken = e.Take(keys.Int("num_experts_per_tok", 8));
      c.expertFfn = e.Take(keys.Int("moe_intermediate_size", 768));
      c.renormaliseTopK = e.Take(keys.Bool("norm_topk_prob", false));
      const int step = e.Take(keys.Int("decoder_sparse_step", 1));
      if (!e.ok()) return e.error();
      if (step < 1) return keys.Wrong("decoder_sparse_step", fmt::format("must be positive, got {}", step));
      std::vector<int> denseOnly;
      if (keys.Has("mlp_only_layers")) {
        const nlohmann::json& list = *keys.Find("mlp_only_layers");
        if (!list.is_array()) return keys.Wrong("mlp_only_layers", "expected a list of layer indices");
        for (const nlohmann::json& v : list) {
          if (!v.is_number_integer()) return keys.Wrong("mlp_only_layers", "expected a list of layer indices");
          denseOnly.push_back(v.get<int>());
        }
      }
      // Qwen3MoeDecoderLayer: MoE iff not listed, experts exist, and (i + 1) % step == 0.
      for (int i = 0; i < c.layerCount(); ++i) {
        const bool listed = std::find(denseOnly.begin(), denseOnly.end(), i) != denseOnly.end();
        c.layers[i].moe = !listed && c.experts > 0 && (i + 1) % step == 0;
      }
      break;
    }
    default: break;
  }
  return e.ok() ? Status::Ok() : Status(e.error());
}

}  // namespace

Expected<ModelConfig> ParseHfConfig(std::string_view text, const std::string& path) {
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return BadData(fmt::format("{}: not valid JSON", path));
  if (!root.is_object()) return BadData(fmt::format("{}: expected a JSON object", path));
  const JsonKeys keys(root, path);
  FirstError e;

  const std::string modelType = e.Take(keys.String("model_type"));
  if (!e.ok()) return e.error();
  const FamilyDefaults* f = FindFamily(modelType);
  if (f == nullptr) {
    if (modelType == "gemma3") {
      return keys.Wrong("model_type", "\"gemma3\" is the multimodal Gemma 3; only its text model (gemma3_text) "
                                      "is supported");
    }
    return keys.Wrong("model_type", fmt::format("\"{}\" is not supported (supported: llama, mistral, mixtral, "
                                                "qwen2, qwen3, qwen3_moe, gemma3_text, olmoe)",
                                                modelType));
  }

  ModelConfig c;
  c.family = f->family;
  c.format = WeightFormat::kHuggingFace;
  c.source = path;
  c.vocab = e.Take(keys.Int("vocab_size"));
  c.hidden = e.Take(keys.Int("hidden_size"));
  c.layers.resize(std::clamp(e.Take(keys.Int("num_hidden_layers")), 0, 1 << 16));
  c.heads = e.Take(keys.Int("num_attention_heads"));
  const int intermediate =
      e.Take(keys.Int("intermediate_size", f->family == Family::kQwen3Moe ? std::optional<int>(6144) : std::nullopt));
  if (!e.ok()) return e.error();
  if (c.heads <= 0) return keys.Wrong("num_attention_heads", fmt::format("must be positive, got {}", c.heads));
  c.kvHeads = e.Take(keys.NullableInt("num_key_value_heads", f->kvHeads == kFromHeads ? c.heads : f->kvHeads,
                                      c.heads));
  c.headDim = e.Take(ReadHeadDim(keys, *f, c.hidden, c.heads));
  c.rmsEps = e.Take(keys.Number("rms_norm_eps", f->rmsEps));
  c.maxPositions = e.Take(keys.Int("max_position_embeddings", f->maxPositions));
  c.tiedHead = e.Take(keys.Bool("tie_word_embeddings", f->tiedHead));
  c.activation = e.Take(ReadActivation(keys, f->family));
  if (!e.ok()) return e.error();

  // Options the families have but the reference does not implement.
  if (e.Take(keys.Bool("mlp_bias", false))) return keys.Wrong("mlp_bias", "FFN biases are not supported");
  if (f->family == Family::kOlmoe && keys.Has("clip_qkv")) {
    return keys.Wrong("clip_qkv", "clamping q, k and v is not supported; it must be null");
  }

  // Biases (each family's attention module): Qwen2 always has q/k/v bias and no o bias;
  // Mistral and Mixtral have none; the rest follow attention_bias for q, k, v and o alike.
  if (f->family == Family::kQwen2) {
    c.qkvBias = true;
  } else if (f->family != Family::kMistral && f->family != Family::kMixtral) {
    c.qkvBias = c.outputBias = e.Take(keys.Bool("attention_bias", false));
  }

  const bool gemma = f->family == Family::kGemma3Text;
  c.qkNorm = f->family == Family::kOlmoe                                             ? QkNorm::kWholeProjection
             : (gemma || f->family == Family::kQwen3 || f->family == Family::kQwen3Moe) ? QkNorm::kPerHead
                                                                                       : QkNorm::kNone;
  c.ropePairing = RopePairing::kHalfSplit;  // HF's rotate_half, every family
  if (gemma) {
    c.blockNorms = BlockNorms::kSandwich;
    c.normShift = NormShift::kAddOne;
    c.embeddingScale = EmbeddingScale::kSqrtHidden;
    // Gemma3Attention: scaling = query_pre_attn_scalar ** -0.5.
    const double scalar = e.Take(keys.Number("query_pre_attn_scalar", 256.0));
    c.attentionScale = scalar > 0 ? 1.0 / std::sqrt(scalar) : 0.0;
    c.finalLogitSoftcap = e.Take(keys.Number("final_logit_softcapping", 0.0));
  } else {
    c.attentionScale = c.headDim > 0 ? 1.0 / std::sqrt(static_cast<double>(c.headDim)) : 0.0;
  }

  e.Check(ReadWindows(keys, *f, c));
  e.Check(ReadExperts(keys, f->family, intermediate, c));
  if (!e.ok()) return e.error();
  c.ffn = c.anyDense() ? intermediate : 0;

  const HfRope rope = e.Take(ParseHfRope(keys, f->ropeTheta, gemma ? std::optional<double>(1e4) : std::nullopt,
                                         c.maxPositions));
  if (!e.ok()) return e.error();
  c.rope = rope.global;
  if (rope.local) {
    c.hasLocalRope = true;
    c.localRope = *rope.local;
  }

  if (Status s = ValidateConfig(c); !s.ok()) return s.error();
  return c;
}

}  // namespace wb::model
