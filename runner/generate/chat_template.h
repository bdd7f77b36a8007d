// Chat prompts for `./workbook generate --chat`: which of five known layouts a model's chat
// template is, and the prompt text of a conversation in that layout.
//
// Contract: the workbook runs no Jinja. DetectChatFormat recognises a template (GGUF
// tokenizer.chat_template, or tokenizer_config.json's chat_template) by the special-token
// text each layout uses; FormatChat writes the layout out by hand, from its published
// description (cited in chat_template.cc). The prompt ends with the assistant's turn opened
// (Hugging Face's add_generation_prompt) and has no BOS: the tokenizer adds BOS as the model
// says. Special tokens appear as their text, to be parsed as special tokens when encoded.
// Errors are values: a usage error for a template the workbook cannot follow or a role it
// does not know.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/expected.h"

namespace wb::generate {

enum class ChatFormat { kChatMl, kLlama3, kGemma, kMistralInst, kZephyr };

// The layout of `templateText`, by its markers, in this order: ChatML "<|im_start|>",
// Llama 3 "<|start_header_id|>", Gemma "<start_of_turn>", Mistral "[INST]" (but not Llama 2's
// "<<SYS>>", whose system block is another layout), Zephyr "<|user|>" with "<|assistant|>"
// (but not Phi-3's "<|end|>", which ends its turns with another token). An empty template:
// "this model has no chat template; run without --chat"; one with none of the markers: "this
// model's chat template is not one the workbook knows (...); run without --chat", quoting its
// first 60 characters, the unprintable ones shown as escapes.
Expected<ChatFormat> DetectChatFormat(std::string_view templateText);

// "ChatML", "Llama 3", "Gemma", "Mistral [INST]", "Zephyr".
std::string ChatFormatName(ChatFormat format);

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// The prompt text for `messages` in `format`, ending with the assistant's turn opened, without
// BOS. Errors: no messages; a role other than system/user/assistant (named); for Gemma and
// Mistral, which have no system turn, a system message not followed by a user message.
Expected<std::string> FormatChat(ChatFormat format, std::span<const ChatMessage> messages);

}  // namespace wb::generate
