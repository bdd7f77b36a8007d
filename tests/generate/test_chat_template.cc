// Chat templates: which layout a template is, and the prompt of a short conversation in each
// layout, compared with text written by hand from each format's published description.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runner/generate/chat_template.h"

using wb::generate::ChatFormat;
using wb::generate::ChatFormatName;
using wb::generate::ChatMessage;
using wb::generate::DetectChatFormat;
using wb::generate::FormatChat;

namespace {

ChatFormat Detected(const std::string& templateText) {
  const auto format = DetectChatFormat(templateText);
  REQUIRE(format.ok());
  return *format;
}

std::string DetectionError(const std::string& templateText) {
  const auto format = DetectChatFormat(templateText);
  REQUIRE_FALSE(format.ok());
  CHECK(format.error().kind == wb::ErrorKind::kBadUsage);
  return format.error().message;
}

std::string Formatted(ChatFormat format, const std::vector<ChatMessage>& messages) {
  const auto prompt = FormatChat(format, messages);
  REQUIRE(prompt.ok());
  return *prompt;
}

std::string FormatError(ChatFormat format, const std::vector<ChatMessage>& messages) {
  const auto prompt = FormatChat(format, messages);
  REQUIRE_FALSE(prompt.ok());
  CHECK(prompt.error().kind == wb::ErrorKind::kBadUsage);
  return prompt.error().message;
}

const std::vector<ChatMessage> kSystemAndUser = {
    {"system", "You are terse."},
    {"user", "Name a prime."},
};
const std::vector<ChatMessage> kThreeTurns = {
    {"user", "Hi"},
    {"assistant", "Hello"},
    {"user", "Bye"},
};

}  // namespace

TEST_CASE("each format is recognised by its markers") {
  CHECK(Detected("{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}"
                 "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}") ==
        ChatFormat::kChatMl);
  CHECK(Detected("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}") == ChatFormat::kLlama3);
  CHECK(Detected("{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}") ==
        ChatFormat::kGemma);
  CHECK(Detected("{{ bos_token }}{% for message in messages %}{{ '[INST] ' + message['content'] + ' [/INST]' }}") ==
        ChatFormat::kMistralInst);
  CHECK(Detected("{% if message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + eos_token }}"
                 "{% endif %}{{ '<|assistant|>' }}") == ChatFormat::kZephyr);
}

TEST_CASE("ChatML and Zephyr are not confused") {
  // ChatML names its roles after <|im_start|>, never as <|user|>; Zephyr has no <|im_start|>.
  CHECK(Detected("<|im_start|>user\n{{ content }}<|im_end|>\n<|im_start|>assistant\n") == ChatFormat::kChatMl);
  CHECK(Detected("<|system|>\n{{ s }}</s>\n<|user|>\n{{ u }}</s>\n<|assistant|>\n") == ChatFormat::kZephyr);
  // <|user|> alone is not Zephyr, and neither is Phi-3, whose turns end with <|end|>.
  CHECK(DetectionError("<|user|>\n{{ u }}").starts_with("this model's chat template is not one"));
  CHECK(DetectionError("<|user|>\n{{ u }}<|end|>\n<|assistant|>\n").starts_with("this model's chat template is not one"));
}

TEST_CASE("Llama 2's [INST] with <<SYS>> is not taken for Mistral") {
  CHECK(DetectionError("[INST] <<SYS>>\\n{{ s }}\\n<</SYS>>\\n\\n{{ u }} [/INST]")
            .starts_with("this model's chat template is not one"));
}

TEST_CASE("an empty or unknown template is an error that says to run without --chat") {
  CHECK(DetectionError("") == "this model has no chat template; run without --chat");
  // 60 characters are quoted: "Alpaca:", a newline (shown as \n), "### Instruction:" and
  // 36 of the x's; then "..." as the template goes on.
  const std::string alpaca = "Alpaca:\n### Instruction:" + std::string(100, 'x');
  CHECK(DetectionError(alpaca) ==
        "this model's chat template is not one the workbook knows (ChatML, Llama 3, Gemma, Mistral [INST], "
        "Zephyr); run without --chat (the template begins \"Alpaca:\\n### Instruction:" +
            std::string(36, 'x') + "\"...)");
  CHECK(DetectionError("short\x01") ==
        "this model's chat template is not one the workbook knows (ChatML, Llama 3, Gemma, Mistral [INST], "
        "Zephyr); run without --chat (the template begins \"short\\x01\")");
}

TEST_CASE("format names") {
  CHECK(ChatFormatName(ChatFormat::kChatMl) == "ChatML");
  CHECK(ChatFormatName(ChatFormat::kLlama3) == "Llama 3");
  CHECK(ChatFormatName(ChatFormat::kGemma) == "Gemma");
  CHECK(ChatFormatName(ChatFormat::kMistralInst) == "Mistral [INST]");
  CHECK(ChatFormatName(ChatFormat::kZephyr) == "Zephyr");
}

TEST_CASE("ChatML: <|im_start|>role, newline, content, <|im_end|>, newline") {
  CHECK(Formatted(ChatFormat::kChatMl, kSystemAndUser) ==
        "<|im_start|>system\nYou are terse.<|im_end|>\n"
        "<|im_start|>user\nName a prime.<|im_end|>\n"
        "<|im_start|>assistant\n");
}

TEST_CASE("Llama 3: header, blank line, content, <|eot_id|>; no BOS") {
  CHECK(Formatted(ChatFormat::kLlama3, kSystemAndUser) ==
        "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nName a prime.<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // The template trims each content.
  CHECK(Formatted(ChatFormat::kLlama3, {{"user", "  Hi \n"}}) ==
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST_CASE("Gemma: the system text opens the first user turn; the assistant is 'model'") {
  CHECK(Formatted(ChatFormat::kGemma, kSystemAndUser) ==
        "<start_of_turn>user\nYou are terse.\n\nName a prime.<end_of_turn>\n"
        "<start_of_turn>model\n");
  CHECK(Formatted(ChatFormat::kGemma, kThreeTurns) ==
        "<start_of_turn>user\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello<end_of_turn>\n"
        "<start_of_turn>user\nBye<end_of_turn>\n"
        "<start_of_turn>model\n");
}

TEST_CASE("Mistral: [INST] user [/INST], the answer then </s>; the system text before the first user") {
  CHECK(Formatted(ChatFormat::kMistralInst, kSystemAndUser) == "[INST] You are terse.\n\nName a prime. [/INST]");
  CHECK(Formatted(ChatFormat::kMistralInst, kThreeTurns) == "[INST] Hi [/INST]Hello</s>[INST] Bye [/INST]");
}

TEST_CASE("Zephyr: <|role|>, newline, content, </s>, newline") {
  CHECK(Formatted(ChatFormat::kZephyr, kSystemAndUser) ==
        "<|system|>\nYou are terse.</s>\n"
        "<|user|>\nName a prime.</s>\n"
        "<|assistant|>\n");
}

TEST_CASE("bad conversations are errors") {
  for (const ChatFormat format : {ChatFormat::kChatMl, ChatFormat::kLlama3, ChatFormat::kGemma,
                                  ChatFormat::kMistralInst, ChatFormat::kZephyr}) {
    CAPTURE(ChatFormatName(format));
    CHECK(FormatError(format, {{"user", "Hi"}, {"tool", "42"}}) ==
          "chat message 2 has the role \"tool\"; the roles are system, user and assistant");
    CHECK(FormatError(format, {}) == "a chat needs at least one message");
  }
  // Gemma and Mistral have no system turn: its text needs a user message to go into.
  CHECK(FormatError(ChatFormat::kGemma, {{"user", "Hi"}, {"system", "Be brief."}}) ==
        "chat message 2: Gemma has no system turn, so a system message must be followed by a user message");
  CHECK(FormatError(ChatFormat::kMistralInst, {{"system", "Be brief."}, {"assistant", "Hello"}})
            .starts_with("chat message 1: Mistral [INST] has no system turn"));
}
