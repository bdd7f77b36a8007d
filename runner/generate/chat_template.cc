// The five chat layouts of chat_template.h, each written from its published description.
// In every layout below the generation prompt is what the model's own template appends for
// add_generation_prompt, and the BOS its template starts with is left to the tokenizer.
#include "runner/generate/chat_template.h"

#include <cstddef>
#include <optional>

#include <fmt/format.h>

namespace wb::generate {
namespace {

bool Contains(std::string_view text, std::string_view marker) { return text.find(marker) != std::string_view::npos; }

// The template's first characters, for an error message: printable ASCII as is, the rest as
// escapes, so a template full of newlines still quotes on one line.
std::string QuoteTemplateStart(std::string_view templateText) {
  constexpr size_t kQuoted = 60;
  std::string quoted;
  for (const char c : templateText.substr(0, kQuoted)) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      quoted += "\\n";
    } else if (c == '\t') {
      quoted += "\\t";
    } else if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (byte >= 0x20 && byte < 0x7f) {
      quoted += c;
    } else {
      quoted += fmt::format("\\x{:02x}", byte);
    }
  }
  return fmt::format("\"{}\"{}", quoted, templateText.size() > kQuoted ? "..." : "");
}

// Jinja's `trim` filter, as the Llama 3 and Gemma templates apply it to every message: leading
// and trailing whitespace (ASCII space, tab, newline, carriage return, vertical tab, form feed).
std::string_view Trim(std::string_view text) {
  constexpr std::string_view kWhitespace = " \t\n\r\v\f";
  const size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kWhitespace) - first + 1);
}

enum class Role { kSystem, kUser, kAssistant };

std::optional<Role> ParseRole(std::string_view role) {
  if (role == "system") return Role::kSystem;
  if (role == "user") return Role::kUser;
  if (role == "assistant") return Role::kAssistant;
  return std::nullopt;
}

// ChatML, OpenAI's openai-python chatml.md: every message is
//   <|im_start|>{role}\n{content}<|im_end|>\n
// and the assistant's turn opens with "<|im_start|>assistant\n". Content as given.
void AppendChatMl(std::string& prompt, std::string_view role, std::string_view content) {
  prompt += fmt::format("<|im_start|>{}\n{}<|im_end|>\n", role, content);
}

// Llama 3, Meta's model card ("Prompt format" of Meta-Llama-3-8B-Instruct, and
// llama.meta.com/docs/model-cards-and-prompt-formats/meta-llama-3): every message is
//   <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>
// after <|begin_of_text|> (the BOS, left to the tokenizer); the assistant's turn opens with
// "<|start_header_id|>assistant<|end_header_id|>\n\n". The model's chat_template trims each
// content (`message['content'] | trim`), and so does this.
void AppendLlama3(std::string& prompt, std::string_view role, std::string_view content) {
  prompt += fmt::format("<|start_header_id|>{}<|end_header_id|>\n\n{}<|eot_id|>", role, Trim(content));
}

// Gemma, Google's "Gemma formatting and system instructions" (ai.google.dev/gemma/docs/formatting):
// turns are "<start_of_turn>user\n" or "<start_of_turn>model\n", content, "<end_of_turn>\n"; the
// prompt prefix for the model's answer is "<start_of_turn>model\n". There is no system role:
// system instructions go at the start of the first user prompt, separated from it by a blank
// line, as Gemma 3's template writes it (system text + "\n\n" + user text). Its template trims
// each content, and so does this.
void AppendGemma(std::string& prompt, Role role, std::string_view systemPrefix, std::string_view content) {
  const std::string_view turn = role == Role::kAssistant ? "model" : "user";
  prompt += fmt::format("<start_of_turn>{}\n", turn);
  if (!systemPrefix.empty()) prompt += fmt::format("{}\n\n", Trim(systemPrefix));
  prompt += fmt::format("{}<end_of_turn>\n", Trim(content));
}

// Mistral's instruction format (model card of Mistral-7B-Instruct-v0.1/v0.2 and its
// chat_template): a user message is "[INST] {content} [/INST]", an assistant message is its
// content followed by the EOS "</s>", and the text after "[/INST]" is the assistant's turn, so
// nothing more opens it. No system role: its text goes before the first user message,
// followed by a blank line, as Mistral's later templates prepend it ("[INST] {system}\n\n{user} [/INST]").
void AppendMistral(std::string& prompt, Role role, std::string_view systemPrefix, std::string_view content) {
  if (role == Role::kAssistant) {
    prompt += fmt::format("{}</s>", content);
    return;
  }
  prompt += "[INST] ";
  if (!systemPrefix.empty()) prompt += fmt::format("{}\n\n", systemPrefix);
  prompt += fmt::format("{} [/INST]", content);
}

// Zephyr, the model card and chat_template of HuggingFaceH4/zephyr-7b-beta: every message is
//   <|{role}|>\n{content}</s>\n
// with role system, user or assistant, and the assistant's turn opens with "<|assistant|>\n".
void AppendZephyr(std::string& prompt, std::string_view role, std::string_view content) {
  prompt += fmt::format("<|{}|>\n{}</s>\n", role, content);
}

}  // namespace

Expected<ChatFormat> DetectChatFormat(std::string_view templateText) {
  if (templateText.empty()) return BadUsage("this model has no chat template; run without --chat");
  if (Contains(templateText, "<|im_start|>")) return ChatFormat::kChatMl;
  if (Contains(templateText, "<|start_header_id|>")) return ChatFormat::kLlama3;
  if (Contains(templateText, "<start_of_turn>")) return ChatFormat::kGemma;
  // Llama 2's template uses [INST] too, but wraps the system text in <<SYS>> ... <</SYS>>:
  // another layout, which the workbook does not write.
  if (Contains(templateText, "[INST]") && !Contains(templateText, "<<SYS>>")) return ChatFormat::kMistralInst;
  // Phi-3 has Zephyr's role tags but closes each turn with <|end|> instead of </s>.
  if (Contains(templateText, "<|user|>") && Contains(templateText, "<|assistant|>") &&
      !Contains(templateText, "<|end|>")) {
    return ChatFormat::kZephyr;
  }
  return BadUsage(fmt::format(
      "this model's chat template is not one the workbook knows (ChatML, Llama 3, Gemma, Mistral [INST], "
      "Zephyr); run without --chat (the template begins {})",
      QuoteTemplateStart(templateText)));
}

std::string ChatFormatName(ChatFormat format) {
  switch (format) {
    case ChatFormat::kChatMl: return "ChatML";
    case ChatFormat::kLlama3: return "Llama 3";
    case ChatFormat::kGemma: return "Gemma";
    case ChatFormat::kMistralInst: return "Mistral [INST]";
    case ChatFormat::kZephyr: return "Zephyr";
  }
  return "unknown";
}

Expected<std::string> FormatChat(ChatFormat format, std::span<const ChatMessage> messages) {
  if (messages.empty()) return BadUsage("a chat needs at least one message");
  const bool hasSystemTurn = format != ChatFormat::kGemma && format != ChatFormat::kMistralInst;
  std::string prompt;
  // Gemma and Mistral: the system text waiting for the next message, which must be the user's.
  std::string_view pendingSystem;
  bool systemPending = false;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& message = messages[i];
    const std::optional<Role> role = ParseRole(message.role);
    if (!role) {
      return BadUsage(fmt::format("chat message {} has the role \"{}\"; the roles are system, user and assistant",
                                  i + 1, message.role));
    }
    if (!hasSystemTurn) {
      if (*role == Role::kSystem) {
        if (systemPending || i + 1 == messages.size() || messages[i + 1].role != "user") {
          return BadUsage(fmt::format(
              "chat message {}: {} has no system turn, so a system message must be followed by a user message",
              i + 1, ChatFormatName(format)));
        }
        pendingSystem = message.content;
        systemPending = true;
        continue;
      }
      if (format == ChatFormat::kGemma) {
        AppendGemma(prompt, *role, pendingSystem, message.content);
      } else {
        AppendMistral(prompt, *role, pendingSystem, message.content);
      }
      pendingSystem = {};
      systemPending = false;
      continue;
    }
    switch (format) {
      case ChatFormat::kChatMl: AppendChatMl(prompt, message.role, message.content); break;
      case ChatFormat::kLlama3: AppendLlama3(prompt, message.role, message.content); break;
      case ChatFormat::kZephyr: AppendZephyr(prompt, message.role, message.content); break;
      case ChatFormat::kGemma:
      case ChatFormat::kMistralInst: break;  // handled above
    }
  }
  // The assistant's turn, opened.
  switch (format) {
    case ChatFormat::kChatMl: prompt += "<|im_start|>assistant\n"; break;
    case ChatFormat::kLlama3: prompt += "<|start_header_id|>assistant<|end_header_id|>\n\n"; break;
    case ChatFormat::kGemma: prompt += "<start_of_turn>model\n"; break;
    case ChatFormat::kMistralInst: break;  // the text after [/INST] is the assistant's
    case ChatFormat::kZephyr: prompt += "<|assistant|>\n"; break;
  }
  return prompt;
}

}  // namespace wb::generate
