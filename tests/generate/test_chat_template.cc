// Chat prompts for generate --chat (runner/generate/chat_template.h): the conversation from
// --system, --messages and --prompt; the model's template rendered with transformers'
// variables; the BOS rule; and the errors, each naming what is wrong.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runner/generate/chat_template.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_chat_template {

using nlohmann::ordered_json;
using wb::generate::ChatConversation;
using wb::generate::ChatPromptIds;
using wb::generate::ChatSpecialTokens;
using wb::generate::ReadChatMessages;
using wb::generate::RenderChatPrompt;

namespace {

// A template of this test's own, in the style of a role-tagged chat format.
const std::string kTemplate =
    "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>\n{{ m.content | trim }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

const ChatSpecialTokens kTokens = {"<s>", "</s>"};

std::string Rendered(const std::string& templateText, const ordered_json& messages, const ChatSpecialTokens& tokens = kTokens) {
  auto text = RenderChatPrompt(templateText, messages, tokens);
  if (!text.ok()) FAIL(text.error().message);
  return *text;
}

// A file in the test's temporary folder holding `text`; its path.
std::string WriteFile(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("wb-chat-template-test-" + name);
  std::ofstream(path) << text;
  return path.string();
}

std::string ReadError(const std::string& name, const std::string& text) {
  const std::string path = WriteFile(name, text);
  auto read = ReadChatMessages(path);
  std::filesystem::remove(path);
  REQUIRE_FALSE(read.ok());
  CHECK(read.error().kind == wb::ErrorKind::kBadUsage);
  CHECK(read.error().message.starts_with(path + ": "));
  return read.error().message.substr(path.size() + 2);
}

}  // namespace

TEST_CASE("the conversation: --system, the messages file, then --prompt") {
  const ordered_json file = ordered_json::parse(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])");
  CHECK(ChatConversation("Be brief.", file, "Bye").dump() ==
        R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},)"
        R"({"role":"assistant","content":"Hello"},{"role":"user","content":"Bye"}])");
  CHECK(ChatConversation("", ordered_json::array(), "").dump() == R"([{"role":"user","content":""}])");
  CHECK(ChatConversation("", file, std::nullopt).size() == 2);
}

TEST_CASE("the model's template renders the conversation, with its special tokens") {
  const ordered_json messages = ChatConversation("You are terse.", ordered_json::array(), " Name a prime. ");
  CHECK(Rendered(kTemplate, messages) ==
        "<s><|system|>\nYou are terse.</s>\n<|user|>\nName a prime.</s>\n<|assistant|>\n");
  // Special tokens the tokenizer lacks are undefined, and print as nothing.
  CHECK(Rendered(kTemplate, messages, {}) == "<|system|>\nYou are terse.\n<|user|>\nName a prime.\n<|assistant|>\n");
  // tools and documents are none, as transformers passes them without tools.
  CHECK(Rendered("{{ tools is none }} {{ documents is none }}", messages) == "True True");
}

TEST_CASE("a template's own refusal and an unsupported construct are errors naming the line") {
  const ordered_json messages = ChatConversation("s", ordered_json::array(), "u");
  auto raised = RenderChatPrompt("{% if messages[0].role == 'system' %}\n{{ raise_exception('no system role') }}{% endif %}",
                                 messages, kTokens);
  REQUIRE_FALSE(raised.ok());
  CHECK(raised.error().message == "the chat template, line 2: the template raised an exception: no system role");
  auto refused = RenderChatPrompt("{% include 'x' %}", messages, kTokens);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message ==
        "the chat template, line 1: the tag 'include' is not supported by the workbook's Jinja interpreter");
  auto none = RenderChatPrompt("", messages, kTokens);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().kind == wb::ErrorKind::kBadUsage);
  CHECK(none.error().message == "this model has no chat template; run without --chat");
}

TEST_CASE("BOS: none added when the template writes it; the tokenizer's when it writes none") {
  constexpr int32_t kBos = 1;
  CHECK(ChatPromptIds({1, 5, 6}, kBos, true) == std::vector<int32_t>{1, 5, 6});
  CHECK(ChatPromptIds({5, 6}, kBos, true) == std::vector<int32_t>{1, 5, 6});
  CHECK(ChatPromptIds({5, 6}, kBos, false) == std::vector<int32_t>{5, 6});
  CHECK(ChatPromptIds({5, 6}, std::nullopt, true) == std::vector<int32_t>{5, 6});
  CHECK(ChatPromptIds({}, kBos, true) == std::vector<int32_t>{1});
}

TEST_CASE("a messages file: a JSON list of {role, content}; other members pass through") {
  const std::string path = WriteFile("good.json",
      R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": null, "tool_calls": []}])");
  auto read = ReadChatMessages(path);
  std::filesystem::remove(path);
  REQUIRE(read.ok());
  CHECK(read->size() == 2);
  CHECK((*read)[1].contains("tool_calls"));
}

TEST_CASE("a bad messages file is refused, naming the file and what is wrong") {
  CHECK(ReadError("a.json", "[{") == "not JSON; --messages takes a JSON list of {\"role\", \"content\"} objects");
  CHECK(ReadError("b.json", R"({"role": "user"})") ==
        "the messages must be a JSON list of {\"role\", \"content\"} objects, not object");
  CHECK(ReadError("c.json", R"([{"role": "user", "content": "a"}, "b"])") ==
        "message 2 is string, not an object with \"role\" and \"content\"");
  CHECK(ReadError("d.json", R"([{"content": "a"}])") == "message 1 has no \"role\" string");
  CHECK(ReadError("e.json", R"([{"role": "user"}])") == "message 1 has no \"content\"");
  CHECK(ReadError("f.json", R"([{"role": "user", "content": 3}])") ==
        "message 1: \"content\" must be a string (or null beside \"tool_calls\"), not number");
  const auto missing = ReadChatMessages("/nonexistent/wb-messages.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == "/nonexistent/wb-messages.json: cannot read the messages file");
}

}  // namespace test_chat_template
