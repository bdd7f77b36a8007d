// ModelConfig from a Hugging Face config.json.
//
// Contract: ParseHfConfig accepts model_type llama, mistral, mixtral, qwen2, qwen3,
// qwen3_moe, gemma3_text and olmoe. An absent key takes the default of transformers' config
// class for that family (src/transformers/models/<family>/configuration_<family>.py); the
// switches follow the family (the family table of docs/concepts/families.md). Options
// the reference does not implement are rejected with a message naming the file and the key:
// mlp_bias true, OLMoE's clip_qkv, Qwen's use_sliding_window true, a head_dim that qwen2 or
// olmoe would ignore, partial rotary factors, RoPE types other than default/linear/llama3/
// yarn. The result has passed ValidateConfig.
#pragma once

#include <string>
#include <string_view>

#include "model/config/config.h"

namespace wb::model {

// `text`: the file's contents; `path`: its name for messages.
Expected<ModelConfig> ParseHfConfig(std::string_view text, const std::string& path);

}  // namespace wb::model
