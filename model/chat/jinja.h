// Chat templates, rendered as Hugging Face transformers renders them: the workbook's own
// interpreter for the subset of Jinja that chat templates use.
//
// Contract: ChatTemplate::Parse reads a template (GGUF tokenizer.chat_template, or
// tokenizer_config.json's chat_template / chat_template.jinja) the way transformers compiles
// it (transformers' chat templating documentation; _compile_jinja_template): Jinja 3.1 in an
// ImmutableSandboxedEnvironment with trim_blocks=True, lstrip_blocks=True and the
// loopcontrols extension, plus transformers' tojson (json.dumps with ensure_ascii=False),
// raise_exception and strftime_now, and {% generation %} rendered as its body. Render gives
// the text Jinja gives for the same variables (messages, tools, add_generation_prompt,
// bos_token, eos_token, ..., as JSON). Semantics follow the Jinja template designer
// documentation and Python's (str(), ==, json.dumps), cited where each is implemented.
// Errors are values (BadData), never a wrong prompt: "line N: " then either Jinja's own
// complaint (a syntax error, an undefined value used, the template's raise_exception) or,
// for a construct Jinja has and this interpreter does not (a tag, filter, test or method),
// its name followed by kUnsupportedPhrase.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/expected.h"

namespace wb::chat {

struct ParsedTemplate;

// Ends the message of a construct this interpreter does not run.
inline constexpr std::string_view kUnsupportedPhrase = "is not supported by the workbook's Jinja interpreter";

class ChatTemplate {
 public:
  static Expected<ChatTemplate> Parse(std::string_view source);
  // `variables`: a JSON object; each member is a template variable (JSON null is Python's
  // None, objects keep their key order).
  Expected<std::string> Render(const nlohmann::ordered_json& variables) const;

 private:
  explicit ChatTemplate(std::shared_ptr<const ParsedTemplate> parsed) : parsed_(std::move(parsed)) {}
  std::shared_ptr<const ParsedTemplate> parsed_;
};

}  // namespace wb::chat
