// Helpers of the chat suite's tests: render a template of the test's own with the workbook's
// Jinja interpreter (model/chat/jinja.h), expecting text or an error.
#pragma once

#include <string>
#include <string_view>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "model/chat/jinja.h"

namespace wb::chat::testing {

using Json = nlohmann::ordered_json;

// The text `source` renders to with `variables`; fails the test on an error.
inline std::string Render(std::string_view source, const Json& variables = Json::object()) {
  auto parsed = ChatTemplate::Parse(source);
  if (!parsed.ok()) FAIL("parse error: " << parsed.error().message);
  auto rendered = parsed->Render(variables);
  if (!rendered.ok()) FAIL("render error: " << rendered.error().message);
  return *rendered;
}

// The error message `source` gives (when parsed or rendered); fails the test if it renders.
inline std::string RenderError(std::string_view source, const Json& variables = Json::object()) {
  auto parsed = ChatTemplate::Parse(source);
  if (!parsed.ok()) {
    CHECK(parsed.error().kind == ErrorKind::kBadData);
    return parsed.error().message;
  }
  auto rendered = parsed->Render(variables);
  if (rendered.ok()) FAIL("rendered instead of failing: \"" << *rendered << "\"");
  CHECK(rendered.error().kind == ErrorKind::kBadData);
  return rendered.error().message;
}

// A short conversation, as transformers passes it.
inline Json Conversation() {
  return Json{{"messages", Json::array({Json{{"role", "system"}, {"content", "Be brief."}},
                                        Json{{"role", "user"}, {"content", "Hi"}},
                                        Json{{"role", "assistant"}, {"content", "Hello"}},
                                        Json{{"role", "user"}, {"content", "Bye"}}})},
              {"add_generation_prompt", true},
              {"bos_token", "<s>"},
              {"eos_token", "</s>"},
              {"tools", nullptr}};
}

}  // namespace wb::chat::testing
