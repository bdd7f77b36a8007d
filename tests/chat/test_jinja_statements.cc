// The Jinja interpreter's statements on templates written for these tests: if/elif/else, for
// (with else, a filter, unpacking and the loop variable), set (with namespace() and the block
// form), macros, {% generation %}, raw, comments, break/continue, with and filter blocks,
// and the scoping rules of the template designer documentation ("Assignments").
#include <doctest/doctest.h>

#include "tests/chat/jinja_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_jinja_statements {

using wb::chat::testing::Conversation;
using wb::chat::testing::Json;
using wb::chat::testing::Render;

TEST_CASE("if, elif and else take the first true branch") {
  const std::string source = "{% if n > 2 %}big{% elif n == 2 %}two{% elif n %}one{% else %}zero{% endif %}";
  CHECK(Render(source, {{"n", 3}}) == "big");
  CHECK(Render(source, {{"n", 2}}) == "two");
  CHECK(Render(source, {{"n", 1}}) == "one");
  CHECK(Render(source, {{"n", 0}}) == "zero");
  // An undefined variable is false, and so are empty text, lists and dicts, and none.
  CHECK(Render("{% if missing %}y{% else %}n{% endif %}") == "n");
  CHECK(Render("{% if '' or [] or {} or none or 0.0 %}y{% else %}n{% endif %}") == "n");
}

TEST_CASE("a chat loop over messages, with a generation prompt") {
  const std::string source =
      "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m['content'] }}{{ eos_token }}{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}";
  CHECK(Render(source, Conversation()) == "<s><system>Be brief.</s><user>Hi</s><assistant>Hello</s><user>Bye</s><assistant>");
}

TEST_CASE("the loop variable") {
  CHECK(Render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
               "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}") ==
        "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  CHECK(Render("{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }} {% endfor %}") == "-2 1-3 2- ");
  CHECK(Render("{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}") == "ababa");
  CHECK(Render("{% for x in [1] %}{{ loop.previtem is defined }}{% endfor %}") == "False");
}

TEST_CASE("for with else, a filter and unpacking") {
  CHECK(Render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}") == "empty");
  CHECK(Render("{% for x in missing %}{{ x }}{% else %}none{% endfor %}") == "none");
  // The filter runs first, so loop.length and loop.last count only the items kept.
  CHECK(Render("{% for m in messages if m.role == 'user' %}{{ m.content }}{{ loop.index }}/{{ loop.length }}"
               "{% if not loop.last %},{% endif %}{% endfor %}",
               Conversation()) == "Hi1/2,Bye2/2");
  CHECK(Render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}") == "a=1;b=2;");
  CHECK(Render("{% for (a, b) in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}") == "37");
  // Iterating a dict gives its keys, in the order they were written; a string, its characters.
  CHECK(Render("{% for k in {'z': 1, 'a': 2} %}{{ k }}{% endfor %}") == "za");
  CHECK(Render("{% for c in 'héllo' %}[{{ c }}]{% endfor %}") == "[h][é][l][l][o]");
}

TEST_CASE("break and continue") {
  CHECK(Render("{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}") == "012");
  CHECK(Render("{% for x in range(5) %}{% if x is odd %}{% continue %}{% endif %}{{ x }}{% endfor %}") == "024");
}

TEST_CASE("set, and what a for loop's assignments do not change") {
  CHECK(Render("{% set a = 1 %}{% set b, c = 2, 3 %}{{ a }}{{ b }}{{ c }}") == "123");
  // A loop's assignments end with each iteration (the reason templates use namespace()).
  CHECK(Render("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}") == "12121");
  // `if` has no scope of its own.
  CHECK(Render("{% if true %}{% set y = 'in' %}{% endif %}{{ y }}") == "in");
}

TEST_CASE("namespace() carries values out of a loop") {
  CHECK(Render("{% set ns = namespace(count=0, last='') %}{% for m in messages %}{% set ns.count = ns.count + 1 %}"
               "{% set ns.last = m.role %}{% endfor %}{{ ns.count }} {{ ns.last }} {{ ns.other is defined }}",
               Conversation()) == "4 user False");
  CHECK(Render("{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['b'] }}") == "122");
}

TEST_CASE("block set captures text, through filters") {
  CHECK(Render("{% set greeting %}Hello, {{ name }}!{% endset %}[{{ greeting }}]", {{"name", "Ada"}}) == "[Hello, Ada!]");
  CHECK(Render("{% set shout | upper | trim %}  quiet  {% endset %}[{{ shout }}]") == "[QUIET]");
}

TEST_CASE("macros: arguments, defaults, keywords, and the output as a value") {
  const std::string macro = "{% macro tag(name, body='', close=true) %}<{{ name }}>{{ body }}{% if close %}</{{ name }}>{% endif %}{% endmacro %}";
  CHECK(Render(macro + "{{ tag('b', 'x') }}|{{ tag('i') }}|{{ tag('br', close=false) }}|{{ tag(body='y', name='p') }}") ==
        "<b>x</b>|<i></i>|<br>|<p>y</p>");
  // A macro's output is text: filters apply to it.
  CHECK(Render(macro + "{{ tag('b', 'x') | upper }}") == "<B>X</B>");
  // A macro sees the template's variables as they are when it is called, and a missing
  // argument is undefined.
  CHECK(Render("{% set who = 'a' %}{% macro m(x) %}{{ who }}{{ x is defined }}{% endmacro %}{% set who = 'b' %}{{ m() }}") ==
        "bFalse");
  CHECK(Render("{% macro m() %}{{ varargs | length }}{{ kwargs.k }}{% endmacro %}{{ m(1, 2, k=3) }}") == "23");
  // Recursion.
  CHECK(Render("{% macro count(n) %}{{ n }}{% if n > 0 %}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(3) }}") ==
        "3210");
}

TEST_CASE("generation blocks render their content, as transformers renders them") {
  CHECK(Render("{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}[{{ m.content }}]{% endgeneration %}"
               "{% else %}{{ m.content }}{% endif %}{% endfor %}",
               Conversation()) == "Be brief.Hi[Hello]Bye");
}

TEST_CASE("raw text, comments, with and filter blocks") {
  CHECK(Render("{% raw %}{{ not evaluated }} {% if %}{% endraw %}") == "{{ not evaluated }} {% if %}");
  CHECK(Render("a{# a comment, {{ ignored }} #}b") == "ab");
  CHECK(Render("{% with a = 1, b = 'x' %}{{ a }}{{ b }}{% endwith %}[{{ a }}]") == "1x[]");
  CHECK(Render("{% filter upper %}hello {{ name }}{% endfilter %}", {{"name", "ada"}}) == "HELLO ADA");
}

TEST_CASE("the variables transformers passes: tools is none without tools, add_generation_prompt a bool") {
  const std::string source = "{% if tools is not none %}{{ tools | length }} tools{% else %}no tools{% endif %}";
  CHECK(Render(source, Conversation()) == "no tools");
  Json withTools = Conversation();
  withTools["tools"] = Json::array({Json{{"type", "function"}, {"function", Json{{"name", "f"}}}}});
  CHECK(Render(source, withTools) == "1 tools");
  CHECK(Render("{{ tools[0].function.name }}", withTools) == "f");
}

TEST_CASE("strftime_now writes today's date in the given format") {
  const std::string year = Render("{{ strftime_now('%Y') }}");
  CHECK(year.size() == 4);
  CHECK(year.starts_with("20"));
}

}  // namespace test_jinja_statements
