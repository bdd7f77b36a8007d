#include "model/config/gguf_config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "model/config/first_error.h"
#include "model/files/tensor_view.h"

namespace wb::model {

namespace {

struct Architecture {
  std::string_view name;  // general.architecture
  Family family;
  RopePairing pairing;    // llama_model_rope_type() (llama.cpp's src/llama-model.cpp): NORM for
                          // llama, NEOX for the rest
};

constexpr Architecture kArchitectures[] = {
    {"llama", Family::kLlama, RopePairing::kAdjacent},
    {"qwen2", Family::kQwen2, RopePairing::kHalfSplit},
    {"qwen3", Family::kQwen3, RopePairing::kHalfSplit},
    {"qwen3moe", Family::kQwen3Moe, RopePairing::kHalfSplit},
    {"gemma3", Family::kGemma3Text, RopePairing::kHalfSplit},
    {"olmoe", Family::kOlmoe, RopePairing::kHalfSplit},
};

// Reads `{arch}.` keys of one file.
class ArchKeys {
 public:
  ArchKeys(const GgufFile& file, std::string_view arch) : file_(file), arch_(arch) {}

  std::string Key(std::string_view suffix) const { return fmt::format("{}.{}", arch_, suffix); }
  bool Has(std::string_view suffix) const { return file_.HasKey(Key(suffix)); }

  // A u32, or (llama.cpp's get_key_or_arr) an array with one equal value per layer.
  Expected<int> Count(std::string_view suffix, std::optional<int> fallback = std::nullopt) const {
    const std::string key = Key(suffix);
    const GgufValue* value = file_.FindValue(key);
    if (value == nullptr) {
      if (fallback) return *fallback;
      return BadData(fmt::format("{}: key '{}' is missing", file_.name(), key));
    }
    if (value->type == GgufValueType::kArray) {
      auto values = file_.GetU32Array(key);
      if (!values) return values.error();
      if (values->empty() || std::adjacent_find(values->begin(), values->end(), std::not_equal_to<>()) !=
                                 values->end()) {
        return BadData(fmt::format("{}: key '{}': per-layer values that differ are not supported", file_.name(), key));
      }
      return ToInt(key, values->front());
    }
    auto v = file_.GetU32(key);
    if (!v) return v.error();
    return ToInt(key, *v);
  }

  Expected<double> Real(std::string_view suffix, std::optional<double> fallback = std::nullopt) const {
    const std::string key = Key(suffix);
    if (!file_.HasKey(key) && fallback) return *fallback;
    auto v = file_.GetF32(key);
    if (!v) return v.error();
    return static_cast<double>(*v);
  }

  Error Wrong(std::string_view suffix, std::string_view what) const {
    return BadData(fmt::format("{}: key '{}': {}", file_.name(), Key(suffix), what));
  }

 private:
  Expected<int> ToInt(const std::string& key, uint32_t v) const {
    if (v > (1u << 30)) return BadData(fmt::format("{}: key '{}' is {}, too large", file_.name(), key, v));
    return static_cast<int>(v);
  }

  const GgufFile& file_;
  std::string_view arch_;
};

// The element count of a tensor, or nullopt when it is absent.
std::optional<uint64_t> TensorElements(const GgufFile& file, std::string_view name) {
  const GgufTensorInfo* t = file.FindTensor(name);
  if (t == nullptr) return std::nullopt;
  return t->ElementCount();
}

// rope.scaling.* (the `{arch}.rope.scaling.*` keys of ggml's docs/gguf.md): linear or yarn; a
// factor without a type is linear.
Expected<Rope> ReadRopeScaling(const GgufFile& file, const ArchKeys& k, double theta, int contextLength) {
  FirstError e;
  Rope rope;
  rope.theta = theta;
  std::string type = e.Take(file.GetStringOr(k.Key("rope.scaling.type"), ""));
  double factor = 0;
  if (k.Has("rope.scaling.factor")) {
    factor = e.Take(k.Real("rope.scaling.factor"));
  } else if (k.Has("rope.scale_linear")) {
    factor = e.Take(k.Real("rope.scale_linear"));  // the older key for the same factor
  }
  if (!e.ok()) return e.error();
  if (type.empty()) type = factor != 0 && factor != 1 ? "linear" : "none";
  if (type == "none") return rope;
  if (type == "linear") {
    rope.scaling = RopeScaling::kLinear;
    rope.factor = factor;
    if (!(factor > 0)) return k.Wrong("rope.scaling.factor", fmt::format("must be positive, got {}", factor));
    return rope;
  }
  if (type == "yarn") {
    rope.scaling = RopeScaling::kYarn;
    rope.factor = factor;
    if (!(factor > 0)) return k.Wrong("rope.scaling.factor", fmt::format("must be positive, got {}", factor));
    rope.originalContext = e.Take(k.Count("rope.scaling.original_context_length", contextLength));
    rope.betaFast = e.Take(k.Real("rope.scaling.yarn_beta_fast", 32.0));
    rope.betaSlow = e.Take(k.Real("rope.scaling.yarn_beta_slow", 1.0));
    // ggml: mscale = attn_factor · (1 + 0.1 ln(1 / freq_scale)), freq_scale = 1 / factor.
    const double attnFactor = e.Take(k.Real("rope.scaling.attn_factor", 1.0));
    rope.attentionFactor = attnFactor * (factor > 1 ? 1.0 + 0.1 * std::log(factor) : 1.0);
    if (!e.ok()) return e.error();
    return rope;
  }
  return k.Wrong("rope.scaling.type", fmt::format("\"{}\" is not supported (supported: none, linear, yarn)", type));
}

// Gemma 3's sliding layers: a period, one bool per layer, or llama.cpp's period 6 (D3).
Status ReadGemmaPattern(const GgufFile& file, const ArchKeys& k, ModelConfig& c) {
  const std::string key = k.Key("attention.sliding_window_pattern");
  const GgufValue* value = file.FindValue(key);
  int period = 6;
  if (value != nullptr && value->type == GgufValueType::kArray) {
    const GgufArray& flags = value->array;
    if (flags.elementType != GgufValueType::kBool || flags.count != c.layers.size()) {
      return k.Wrong("attention.sliding_window_pattern",
                     fmt::format("expected {} bools (one per layer, true = sliding)", c.layers.size()));
    }
    for (size_t i = 0; i < c.layers.size(); ++i) c.layers[i].sliding = std::get<bool>(flags.Scalar(i));
    return Status::Ok();
  }
  if (value != nullptr) {
    auto p = k.Count("attention.sliding_window_pattern");
    if (!p) return p.error();
    period = *p;
    if (period < 1) return k.Wrong("attention.sliding_window_pattern", "must be positive");
  }
  // set_swa_pattern(n): layer il slides iff il % n < n - 1.
  for (int i = 0; i < c.layerCount(); ++i) c.layers[i].sliding = i % period < period - 1;
  return Status::Ok();
}

}  // namespace

Expected<ModelConfig> ModelConfigFromGguf(const GgufFile& file) {
  auto archName = file.GetString("general.architecture");
  if (!archName) return archName.error();
  const Architecture* arch = nullptr;
  for (const Architecture& a : kArchitectures) {
    if (a.name == *archName) arch = &a;
  }
  if (arch == nullptr) {
    return BadData(fmt::format("{}: key 'general.architecture': \"{}\" is not supported (supported: llama, qwen2, "
                               "qwen3, qwen3moe, gemma3, olmoe)",
                               file.name(), *archName));
  }
  const ArchKeys k(file, arch->name);
  FirstError e;
  ModelConfig c;
  c.format = WeightFormat::kGguf;
  c.source = file.name();
  c.family = arch->family;
  c.ropePairing = arch->pairing;

  c.hidden = e.Take(k.Count("embedding_length"));
  c.layers.resize(std::clamp(e.Take(k.Count("block_count")), 0, 1 << 16));
  c.heads = e.Take(k.Count("attention.head_count"));
  c.kvHeads = e.Take(k.Count("attention.head_count_kv", c.heads));
  c.maxPositions = e.Take(k.Count("context_length"));
  c.rmsEps = e.Take(k.Real("attention.layer_norm_rms_epsilon"));
  c.experts = e.Take(k.Count("expert_count", 0));
  c.expertsPerToken = e.Take(k.Count("expert_used_count", 0));
  if (!e.ok()) return e.error();
  if (c.heads <= 0) return k.Wrong("attention.head_count", "must be positive");
  if (c.family == Family::kLlama && c.experts > 0) c.family = Family::kMixtral;

  // Sizes of a head: key_length, else hidden / heads; RoPE must cover all of it.
  c.headDim = e.Take(k.Count("attention.key_length", c.hidden / c.heads));
  const int valueLength = e.Take(k.Count("attention.value_length", c.headDim));
  const int ropeDims = e.Take(k.Count("rope.dimension_count", c.headDim));
  if (!e.ok()) return e.error();
  if (valueLength != c.headDim) {
    return k.Wrong("attention.value_length", fmt::format("{} differs from key_length {}; not supported", valueLength,
                                                         c.headDim));
  }
  if (ropeDims != c.headDim) {
    return k.Wrong("rope.dimension_count", fmt::format("{} rotates part of a head of {}: partial rotary embeddings "
                                                       "are not supported",
                                                       ropeDims, c.headDim));
  }

  // Vocabulary: vocab_size, else the embedding's rows (Gemma's may be truncated, D7).
  const GgufTensorInfo* embedding = file.FindTensor("token_embd.weight");
  if (embedding == nullptr) return BadData(fmt::format("{}: tensor 'token_embd.weight' is missing", file.name()));
  const int embeddingRows = embedding->ne.size() == 2 ? static_cast<int>(std::min<uint64_t>(embedding->ne[1], 1u << 30)) : 0;
  c.vocab = e.Take(k.Count("vocab_size", embeddingRows));

  // Tensor-table switches.
  c.tiedHead = file.FindTensor("output.weight") == nullptr;
  c.qkvBias = file.FindTensor("blk.0.attn_q.bias") != nullptr;
  c.outputBias = file.FindTensor("blk.0.attn_output.bias") != nullptr;
  if (auto qNorm = TensorElements(file, "blk.0.attn_q_norm.weight")) {
    c.qkNorm = *qNorm == static_cast<uint64_t>(c.headDim) ? QkNorm::kPerHead : QkNorm::kWholeProjection;
  }
  for (int i = 0; i < c.layerCount(); ++i) {
    c.layers[i].moe = file.FindTensor(fmt::format("blk.{}.ffn_gate_inp.weight", i)) != nullptr;
  }

  // FFN widths: feed_forward_length is the dense width, and the expert width too unless
  // expert_feed_forward_length is given (mixtral and olmoe store the expert width there).
  const int feedForward = c.anyDense() || !k.Has("expert_feed_forward_length") ? e.Take(k.Count("feed_forward_length"))
                                                                                : 0;
  c.ffn = c.anyDense() ? feedForward : 0;
  if (c.anyMoe()) c.expertFfn = e.Take(k.Count("expert_feed_forward_length", feedForward));
  if (c.anyMoe()) {
    // build_moe_ffn's norm_w, as each llama.cpp graph sets it (src/models/<arch>.cpp).
    const bool llamaCppRenorm = c.family != Family::kOlmoe;
    c.renormaliseTopK = e.Take(file.GetBoolOr(k.Key("expert_weights_norm"), llamaCppRenorm));
  }

  // RoPE.
  const double theta = e.Take(k.Real("rope.freq_base", 10000.0));
  if (!e.ok()) return e.error();
  c.rope = e.Take(ReadRopeScaling(file, k, theta, c.maxPositions));
  if (!e.ok()) return e.error();
  if (const GgufTensorInfo* freqs = file.FindTensor("rope_freqs.weight")) {
    if (c.rope.scaling != RopeScaling::kNone) {
      return k.Wrong("rope.scaling.type", "rope_freqs.weight together with a scaling type is not supported");
    }
    auto divisors = DequantizeAll(ViewTensor(file, *freqs));
    if (!divisors) return divisors.error();
    c.rope.scaling = RopeScaling::kLlama3;
    c.rope.frequencyDivisors.assign(divisors->begin(), divisors->end());
  }

  c.attentionScale = 1.0 / std::sqrt(static_cast<double>(c.headDim));
  if (c.family == Family::kGemma3Text) {
    c.blockNorms = BlockNorms::kSandwich;
    c.activation = Activation::kGeluTanh;
    c.embeddingScale = EmbeddingScale::kSqrtHidden;
    c.normShift = NormShift::kNone;  // the converter stored 1 + w (Gemma3Model.modify_tensors)
    // llama.cpp ignores query_pre_attn_scalar: 1/√(hidden/heads) for the 62-layer 27B, else
    // 1/√headDim (D5); an explicit attention.scale wins.
    const double ruleScale = c.layerCount() == 62 ? 1.0 / std::sqrt(static_cast<double>(c.hidden / c.heads))
                                                  : c.attentionScale;
    c.attentionScale = e.Take(k.Real("attention.scale", ruleScale));
    c.finalLogitSoftcap = e.Take(k.Real("final_logit_softcapping", 0.0));
    c.slidingWindow = e.Take(k.Count("attention.sliding_window", 0));
    if (!e.ok()) return e.error();
    if (c.slidingWindow > 0) e.Check(ReadGemmaPattern(file, k, c));
    c.hasLocalRope = true;
    c.localRope.theta = e.Take(k.Real("rope.freq_base_swa", 10000.0));  // D4
  } else if (k.Has("attention.sliding_window")) {
    if (c.family != Family::kLlama && c.family != Family::kMixtral) {
      return k.Wrong("attention.sliding_window", fmt::format("sliding windows are not supported for {}", arch->name));
    }
    // Every layer, as Mistral's config does (HF semantics; llama.cpp ignores the key, D1).
    c.slidingWindow = e.Take(k.Count("attention.sliding_window"));
    for (LayerRecipe& l : c.layers) l.sliding = c.slidingWindow > 0;
  }
  if (!e.ok()) return e.error();
  if (Status s = ValidateConfig(c); !s.ok()) return s.error();
  return c;
}

}  // namespace wb::model
