// How the Jinja interpreter fails: every error names the template's line; a construct the
// interpreter does not run is refused by name (never rendered wrongly); the errors Jinja
// itself raises (syntax, undefined values used, raise_exception, the sandbox's refusals,
// unknown filters and tests) are errors here too.
#include <doctest/doctest.h>

#include "tests/chat/jinja_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_jinja_errors {

using wb::chat::kUnsupportedPhrase;
using wb::chat::testing::Json;
using wb::chat::testing::Render;
using wb::chat::testing::RenderError;

namespace {

std::string Refusal(const std::string& what) { return what + " " + std::string(kUnsupportedPhrase); }

}  // namespace

TEST_CASE("a construct Jinja has and the interpreter does not is refused by name, with its line") {
  CHECK(RenderError("a\n{% include 'other.jinja' %}") == "line 2: " + Refusal("the tag 'include'"));
  CHECK(RenderError("{% for x in xs recursive %}{% endfor %}", {{"xs", Json::array()}}) ==
        "line 1: " + Refusal("a recursive for loop"));
  CHECK(RenderError("\n\n{{ 'abc' | wordwrap(2) }}") == "line 3: " + Refusal("the filter 'wordwrap'"));
  CHECK(RenderError("{{ 'x'.zfill(3) }}") == "line 1: " + Refusal("the str method 'zfill'"));
  CHECK(RenderError("{{ '{:>4}'.format(1) }}") == "line 1: " + Refusal("the str.format field '{:>4}'"));
  CHECK(RenderError("{{ cycler(1, 2) }}") == "line 1: " + Refusal("the global function 'cycler'"));
}

TEST_CASE("a construct refused only where it is reached, inside an if") {
  CHECK(Render("{% if false %}{{ 'abc' | wordwrap(2) }}{% endif %}ok") == "ok");
}

TEST_CASE("unknown tags, filters and tests fail the template, as Jinja fails it") {
  CHECK(RenderError("{% do xs.append(1) %}") == "line 1: Encountered unknown tag 'do'.");
  CHECK(RenderError("line one\n{{ x | from_json }}") == "line 2: No filter named 'from_json'.");
  CHECK(RenderError("{{ x is shiny }}") == "line 1: No test named 'shiny'.");
  // Inside an if, Jinja (and so the interpreter) fails only when the filter is reached.
  CHECK(Render("{% if false %}{{ x | from_json }}{% endif %}done") == "done");
  CHECK(RenderError("{% if true %}\n{{ x | from_json }}{% endif %}") == "line 2: No filter named 'from_json'.");
}

TEST_CASE("syntax errors name their line") {
  CHECK(RenderError("ok\n{% if x %}never closed") ==
        "line 2: Unexpected end of template. Jinja was looking for the following tags: elif or else or endif");
  CHECK(RenderError("{{ 1 + }}") == "line 1: unexpected end of print statement");
  CHECK(RenderError("\n{{ (1 }}") == "line 2: unexpected '}', expected ')'");
  CHECK(RenderError("{# never closed") == "line 1: Missing end of comment tag");
  CHECK(RenderError("{% endfor %}") == "line 1: Encountered unknown tag 'endfor'.");
}

TEST_CASE("undefined values: printed empty, falsy, iterable, and an error for anything else") {
  CHECK(Render("[{{ nothing }}]{% if not nothing %}falsy{% endif %}{% for x in nothing %}x{% endfor %}") == "[]falsy");
  CHECK(RenderError("{{ nothing.attribute }}") == "line 1: 'nothing' is undefined");
  CHECK(RenderError("{{ nothing + 1 }}") == "line 1: 'nothing' is undefined");
  CHECK(RenderError("{{ nothing() }}") == "line 1: 'nothing' is undefined");
  CHECK(RenderError("\n{{ d.a.b }}", {{"d", Json::object()}}) == "line 2: 'dict object' has no attribute 'a'");
}

TEST_CASE("raise_exception refuses the conversation with the template's message") {
  const std::string source =
      "{% for m in messages %}\n"
      "{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}\n"
      "{% endfor %}";
  CHECK(RenderError(source, {{"messages", {{{"role", "system"}, {"content", "s"}}}}}) ==
        "line 2: the template raised an exception: System role not supported");
}

TEST_CASE("Python's type errors, and the sandbox's refusals of changing a list or dict") {
  CHECK(RenderError("{{ 'a' + 1 }}") == "line 1: can only concatenate str (not \"int\") to str");
  CHECK(RenderError("{{ 1 < 'a' }}") == "line 1: '<' not supported between instances of 'int' and 'str'");
  CHECK(RenderError("{{ 1 // 0 }}") == "line 1: integer division or modulo by zero");
  CHECK(RenderError("{% for x in none %}{% endfor %}") == "line 1: 'NoneType' object is not iterable");
  CHECK(RenderError("{{ [1] | select | length }}") == "line 1: object of type 'generator' has no len()");
  CHECK(RenderError("{% set xs = [] %}{{ xs.append(1) }}") == "line 1: access to attribute 'append' of 'list' object is unsafe.");
  CHECK(RenderError("{{ {}.update({'a': 1}) }}") == "line 1: access to attribute 'update' of 'dict' object is unsafe.");
  CHECK(RenderError("{% set x = 1 %}{% set x.a = 2 %}") == "line 1: cannot assign attribute on non-namespace object");
}

TEST_CASE("macro calls: too many arguments, and a runaway recursion stops") {
  CHECK(RenderError("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}") == "line 1: macro 'm' takes not more than 1 argument(s)");
  CHECK(RenderError("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}") ==
        "line 1: maximum recursion depth exceeded in a macro call");
}

}  // namespace test_jinja_errors
