// Chat prompts for `./workbook generate --chat`: the conversation, the model's own chat
// template rendered by the workbook's Jinja interpreter (model/chat/jinja.h), and the BOS rule.
//
// Contract: RenderChatPrompt renders the template (GGUF tokenizer.chat_template, or the HF
// folder's tokenizer_config.json chat_template / chat_template.jinja) with the variables
// transformers' apply_chat_template passes: messages, tools (none), documents (none),
// add_generation_prompt (true: the prompt ends with the assistant's turn opened) and the
// tokenizer's special tokens (bos_token, eos_token, when the tokenizer has them). The text is
// what Jinja would give, or an error naming the template's line and, for a construct the
// interpreter does not run, the construct. ChatPromptIds adds the tokenizer's BOS in front
// of the rendered text's ids only when the template wrote none and the tokenizer adds BOS
// (llama.cpp's rule; transformers adds none, and both agree whenever the template writes
// BOS itself). Errors are values: kBadUsage for a messages file or conversation the user gave,
// kBadData for the model's template.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/expected.h"

namespace wb::generate {

// A --messages file: a JSON list of objects, each with "role" (a string) and "content" (a
// string, or null when the message has "tool_calls"); other members are passed to the
// template as they are. Errors name the file and the message (1-based) that is wrong.
Expected<nlohmann::ordered_json> ReadChatMessages(const std::string& path);

// The conversation: --system first (when not empty), the file's messages, then `prompt` as
// the user's message (generate passes --prompt, even an empty one, unless a messages file
// was given without --prompt).
nlohmann::ordered_json ChatConversation(const std::string& system, const nlohmann::ordered_json& fileMessages,
                                        const std::optional<std::string>& prompt);

struct ChatSpecialTokens {
  std::optional<std::string> bos;  // the BOS token's text ("<s>", "<|begin_of_text|>")
  std::optional<std::string> eos;
};

// The prompt text: `templateText` rendered for `messages` with add_generation_prompt. Errors:
// an empty template ("this model has no chat template; run without --chat"); the template's
// own error or refusal ("the chat template, line N: ...").
Expected<std::string> RenderChatPrompt(std::string_view templateText, const nlohmann::ordered_json& messages,
                                       const ChatSpecialTokens& specialTokens);

// The ids of the rendered prompt (encoded with special tokens parsed and nothing added) with
// BOS put in front when the template wrote none (`ids` does not start with it) and the
// tokenizer adds BOS (`addsBos`).
std::vector<int32_t> ChatPromptIds(std::vector<int32_t> ids, std::optional<int32_t> bos, bool addsBos);

}  // namespace wb::generate
