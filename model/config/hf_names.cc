#include "model/config/hf_names.h"

#include <charconv>

#include <fmt/format.h>

namespace wb::model {

namespace {

struct NamePair {
  std::string_view gguf;  // after "blk.N."
  std::string_view hf;    // after "model.layers.N."
};

// gguf-py's tensor_mapping.py (llama.cpp), the rows every family shares.
constexpr NamePair kBlockNames[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_output.bias", "self_attn.o_proj.bias"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

// Gemma 3's sandwich norms (GGUF ATTN_POST_NORM, FFN_PRE_NORM, FFN_POST_NORM).
constexpr NamePair kGemmaNormNames[] = {
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
};

}  // namespace

std::optional<std::pair<int, std::string>> SplitBlockName(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  int layer = 0;
  const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), layer);
  if (error != std::errc() || end == name.data() || end == name.data() + name.size() || *end != '.') {
    return std::nullopt;
  }
  return std::make_pair(layer, std::string(end + 1, name.data() + name.size()));
}

std::vector<std::string> HfNamesFor(std::string_view ggufName, Family family) {
  if (ggufName == "token_embd.weight") return {"model.embed_tokens.weight"};
  if (ggufName == "output_norm.weight") return {"model.norm.weight"};
  if (ggufName == "output.weight") return {"lm_head.weight"};
  const auto block = SplitBlockName(ggufName);
  if (!block) return {};
  const auto& [layer, rest] = *block;
  const std::string prefix = fmt::format("model.layers.{}.", layer);
  if (family == Family::kGemma3Text) {
    for (const NamePair& p : kGemmaNormNames) {
      if (p.gguf == rest) return {prefix + std::string(p.hf)};
    }
  } else if (rest == "ffn_norm.weight") {
    return {prefix + "post_attention_layernorm.weight"};
  }
  if (rest == "ffn_gate_inp.weight") {
    // Mixtral's router; transformers v5 renames it mlp.gate (models/mixtral/modeling_mixtral.py).
    if (family == Family::kMixtral) return {prefix + "block_sparse_moe.gate.weight", prefix + "mlp.gate.weight"};
    return {prefix + "mlp.gate.weight"};
  }
  for (const NamePair& p : kBlockNames) {
    if (p.gguf == rest) return {prefix + std::string(p.hf)};
  }
  return {};
}

std::vector<HfExpertSlice> HfExpertSlices(std::string_view stackedName, int expert, Family family) {
  const auto block = SplitBlockName(stackedName);
  if (!block) return {};
  const auto& [layer, rest] = *block;
  // Which projection: Mixtral's w1 (gate), w3 (up), w2 (down).
  std::string_view projection;
  std::string_view mixtralName;
  int fusedBlock = 0;
  if (rest == "ffn_gate_exps.weight") {
    projection = "gate_proj", mixtralName = "w1", fusedBlock = 0;
  } else if (rest == "ffn_up_exps.weight") {
    projection = "up_proj", mixtralName = "w3", fusedBlock = 1;
  } else if (rest == "ffn_down_exps.weight") {
    projection = "down_proj", mixtralName = "w2";
  } else {
    return {};
  }
  const std::string prefix = fmt::format("model.layers.{}.", layer);
  std::vector<HfExpertSlice> out;
  if (family == Family::kMixtral) {
    out.push_back({fmt::format("{}block_sparse_moe.experts.{}.{}.weight", prefix, expert, mixtralName)});
  } else {
    out.push_back({fmt::format("{}mlp.experts.{}.{}.weight", prefix, expert, projection)});
  }
  // transformers v5 fused experts, with or without a ".weight" suffix.
  const bool down = projection == "down_proj";
  const std::string fused = prefix + (down ? "mlp.experts.down_proj" : "mlp.experts.gate_up_proj");
  for (const std::string& name : {fused, fused + ".weight"}) {
    out.push_back({name, true, down ? 1 : 2, down ? 0 : fusedBlock});
  }
  return out;
}

}  // namespace wb::model
