// How the chat-template interpreter stops: TemplateError, thrown inside the interpreter and
// caught at its boundary (jinja.h), where it becomes an Error value naming the template's line.
//
// Contract: kTemplate is an error Jinja itself raises on the same template and data (a syntax
// error, an undefined value used, raise_exception); kUnsupported is a construct Jinja knows and
// this interpreter does not (a tag, filter, test or method), named, so a prompt is never
// rendered wrongly. line 0: the line is not known where it was thrown; the renderer fills in
// the line it was evaluating.
#pragma once

#include <string>
#include <utility>

namespace wb::chat {

struct TemplateError {
  enum class Kind { kTemplate, kUnsupported };
  Kind kind = Kind::kTemplate;
  std::string message;
  int line = 0;
};

[[noreturn]] inline void ThrowTemplateError(std::string message, int line = 0) {
  throw TemplateError{TemplateError::Kind::kTemplate, std::move(message), line};
}
// `what` names the construct: "the filter 'wordwrap'", "the tag 'include'".
[[noreturn]] inline void ThrowUnsupported(const std::string& what, int line = 0) {
  throw TemplateError{TemplateError::Kind::kUnsupported,
                      what + " is not supported by the workbook's Jinja interpreter", line};
}

}  // namespace wb::chat
