// render-chat-template TEMPLATE VARIABLES.json: the workbook's Jinja interpreter on one
// template file, for comparing with another renderer (the chat suite's tests use it too).
// VARIABLES.json is an object whose members are the template's variables (messages, tools,
// add_generation_prompt, bos_token, ...). Prints the rendered text exactly (no newline
// added); exit 0. On an error, prints "error: MESSAGE" to stderr; exit 2.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/chat/jinja.h"

namespace {

bool ReadFile(const char* path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  text = buffer.str();
  return true;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return Fail("usage: render-chat-template TEMPLATE VARIABLES.json");
  std::string source, variablesText;
  if (!ReadFile(argv[1], source)) return Fail(std::string("cannot read ") + argv[1]);
  if (!ReadFile(argv[2], variablesText)) return Fail(std::string("cannot read ") + argv[2]);
  const auto variables = nlohmann::ordered_json::parse(variablesText, nullptr, /*allow_exceptions=*/false);
  if (variables.is_discarded() || !variables.is_object()) return Fail(std::string(argv[2]) + " is not a JSON object");
  auto parsed = wb::chat::ChatTemplate::Parse(source);
  if (!parsed) return Fail(parsed.error().message);
  auto rendered = parsed->Render(variables);
  if (!rendered) return Fail(rendered.error().message);
  std::fwrite(rendered->data(), 1, rendered->size(), stdout);
  return 0;
}
