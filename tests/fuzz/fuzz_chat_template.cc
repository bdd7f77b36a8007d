// Fuzz target: the chat-template interpreter must turn any bytes into rendered text or an
// error that names a line, without crashing, hanging or exhausting the stack.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/chat/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  auto parsed = wb::chat::ChatTemplate::Parse(source);
  if (!parsed.ok()) {
    if (parsed.error().message.rfind("line ", 0) != 0) __builtin_trap();  // every error names its line
    return 0;
  }
  const nlohmann::ordered_json variables = {
      {"messages", {{{"role", "system"}, {"content", "s"}}, {{"role", "user"}, {"content", "u\u00a0"}}}},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"tools", nullptr}};
  auto rendered = parsed->Render(variables);
  if (!rendered.ok() && rendered.error().message.rfind("line ", 0) != 0) __builtin_trap();
  return 0;
}
