// The interpreter's boundary: TemplateError (thrown inside, jinja_error.h) becomes an Error value.
#include "model/chat/jinja.h"

#include <fmt/format.h>

#include "model/chat/jinja_ast.h"
#include "model/chat/jinja_error.h"
#include "model/chat/jinja_render.h"

namespace wb::chat {

namespace {

Error ToError(const TemplateError& e, int fallbackLine) {
  const int line = e.line > 0 ? e.line : fallbackLine;
  return BadData(fmt::format("line {}: {}", line, e.message));
}

}  // namespace

Expected<ChatTemplate> ChatTemplate::Parse(std::string_view source) {
  try {
    return ChatTemplate(std::make_shared<const ParsedTemplate>(ParseTemplate(source)));
  } catch (const TemplateError& e) {
    return ToError(e, 1);
  }
}

Expected<std::string> ChatTemplate::Render(const nlohmann::ordered_json& variables) const {
  if (!variables.is_object()) return InternalError("chat template variables must be a JSON object");
  auto globals = std::make_shared<Scope>();
  AddGlobalFunctions(*globals);
  for (const auto& [name, value] : variables.items()) globals->Set(name, Value::FromJson(value));
  Renderer renderer(globals);
  try {
    return renderer.Render(*parsed_);
  } catch (const TemplateError& e) {
    return ToError(e, renderer.currentLine());
  }
}

}  // namespace wb::chat
