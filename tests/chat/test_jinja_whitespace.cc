// Whitespace as transformers' Jinja environment leaves it (template designer documentation,
// "Whitespace Control"): trim_blocks removes the newline after a block or comment tag,
// lstrip_blocks the spaces and tabs before one on its line; `-` strips all whitespace on its
// side of a tag, `+` keeps it; {{ }} tags are never stripped except by `-`; one trailing
// newline of the template is dropped.
#include <doctest/doctest.h>

#include "tests/chat/jinja_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_jinja_whitespace {

using wb::chat::testing::Render;

TEST_CASE("trim_blocks: the newline after a block tag goes, the one after a variable stays") {
  CHECK(Render("{% if true %}\nyes\n{% endif %}\nend") == "yes\nend");
  CHECK(Render("{{ 'a' }}\nb") == "a\nb");
  CHECK(Render("{# note #}\nb") == "b");
}

TEST_CASE("lstrip_blocks: indentation before a block tag goes, before a variable stays") {
  CHECK(Render("<\n    {% if true %}\n    x\n    {% endif %}\n>") == "<\n    x\n>");
  CHECK(Render("  {{ 'v' }}") == "  v");
  CHECK(Render("a  {% if true %}b{% endif %}") == "a  b");  // not at a line's start
  CHECK(Render("\t  {# c #}\nz") == "z");
}

TEST_CASE("minus strips all whitespace on its side, newlines and Unicode spaces included") {
  CHECK(Render("a  \n\n  {{- 'b' -}}  \n\n  c") == "abc");
  CHECK(Render("a \u3000\n{%- if true -%}\u00a0 \n b{%- endif %}") == "ab");
  CHECK(Render("x\n{#- comment -#}\ny") == "xy");
  CHECK(Render("{% for x in [1, 2] -%}\n  {{ x }}\n{%- endfor %}") == "12");
}

TEST_CASE("plus keeps what trim_blocks and lstrip_blocks would remove") {
  CHECK(Render("  {%+ if true %}x{% endif %}") == "  x");
  CHECK(Render("{% if true +%}\nx{% endif %}") == "\nx");
}

TEST_CASE("line endings: \\r\\n reads as \\n, and one trailing newline is dropped") {
  CHECK(Render("a\r\nb\r\n") == "a\nb");
  CHECK(Render("a\n\n") == "a\n");
  CHECK(Render("{% if true %}\r\nx{% endif %}") == "x");
}

TEST_CASE("raw keeps its text and trims like a block") {
  CHECK(Render("{% raw %}\n  {{ x }}\n{% endraw %}\nz") == "\n  {{ x }}\nz");
  CHECK(Render("{% raw -%}\n  {{ x }}  {%- endraw %}") == "{{ x }}");
}

TEST_CASE("a chat template laid out over lines renders on the lines it means") {
  const std::string source =
      "{% for message in messages %}\n"
      "    {% if message.role == 'user' %}\n"
      "        {{ '[U] ' + message.content }}\n"
      "    {% else %}\n"
      "        {{ '[A] ' + message.content }}\n"
      "    {% endif %}\n"
      "{% endfor %}\n";
  CHECK(Render(source, {{"messages", {{{"role", "user"}, {"content", "q"}}, {{"role", "assistant"}, {"content", "a"}}}}}) ==
        "        [U] q\n        [A] a\n");
}

}  // namespace test_jinja_whitespace
