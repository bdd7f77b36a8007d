// Chat prompts: the conversation, rendered through the model's template (chat_template.h).
#include "runner/generate/chat_template.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "model/chat/jinja.h"

namespace wb::generate {

Expected<nlohmann::ordered_json> ReadChatMessages(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadUsage(fmt::format("{}: cannot read the messages file", path));
  std::ostringstream text;
  text << in.rdbuf();
  const auto messages = nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (messages.is_discarded()) return BadUsage(fmt::format("{}: not JSON; --messages takes a JSON list of {{\"role\", \"content\"}} objects", path));
  if (!messages.is_array()) {
    return BadUsage(fmt::format("{}: the messages must be a JSON list of {{\"role\", \"content\"}} objects, not {}", path,
                                messages.type_name()));
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& message = messages[i];
    const std::string where = fmt::format("{}: message {}", path, i + 1);
    if (!message.is_object()) return BadUsage(fmt::format("{} is {}, not an object with \"role\" and \"content\"", where, message.type_name()));
    if (!message.contains("role") || !message["role"].is_string()) return BadUsage(fmt::format("{} has no \"role\" string", where));
    const bool hasToolCalls = message.contains("tool_calls");
    if (!message.contains("content")) {
      if (!hasToolCalls) return BadUsage(fmt::format("{} has no \"content\"", where));
    } else if (!message["content"].is_string() && !(message["content"].is_null() && hasToolCalls)) {
      return BadUsage(fmt::format("{}: \"content\" must be a string (or null beside \"tool_calls\"), not {}", where,
                                  message["content"].type_name()));
    }
  }
  return messages;
}

nlohmann::ordered_json ChatConversation(const std::string& system, const nlohmann::ordered_json& fileMessages,
                                        const std::optional<std::string>& prompt) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  for (const auto& message : fileMessages) messages.push_back(message);
  if (prompt.has_value()) messages.push_back({{"role", "user"}, {"content", *prompt}});
  return messages;
}

Expected<std::string> RenderChatPrompt(std::string_view templateText, const nlohmann::ordered_json& messages,
                                       const ChatSpecialTokens& specialTokens) {
  if (templateText.empty()) return BadUsage("this model has no chat template; run without --chat");
  auto parsed = chat::ChatTemplate::Parse(templateText);
  if (!parsed) return BadData("the chat template, " + parsed.error().message);
  // transformers' apply_chat_template: render(messages=..., tools=..., documents=...,
  // add_generation_prompt=..., **special_tokens_map).
  nlohmann::ordered_json variables = {
      {"messages", messages},
      {"tools", nullptr},
      {"documents", nullptr},
      {"add_generation_prompt", true},
  };
  if (specialTokens.bos) variables["bos_token"] = *specialTokens.bos;
  if (specialTokens.eos) variables["eos_token"] = *specialTokens.eos;
  auto rendered = parsed->Render(variables);
  if (!rendered) return BadData("the chat template, " + rendered.error().message);
  return *rendered;
}

std::vector<int32_t> ChatPromptIds(std::vector<int32_t> ids, std::optional<int32_t> bos, bool addsBos) {
  const bool templateWroteBos = bos.has_value() && !ids.empty() && ids.front() == *bos;
  if (addsBos && bos.has_value() && !templateWroteBos) ids.insert(ids.begin(), *bos);
  return ids;
}

}  // namespace wb::generate
