// The Jinja interpreter's filters on templates written for these tests, with Jinja's
// semantics (template designer documentation, "List of Builtin Filters") and transformers'
// tojson (json.dumps with ensure_ascii=False).
#include <doctest/doctest.h>

#include "tests/chat/jinja_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_jinja_filters {

using wb::chat::testing::Conversation;
using wb::chat::testing::Json;
using wb::chat::testing::Render;

TEST_CASE("trim strips Unicode whitespace, as Python's str.strip does") {
  // U+00A0 (no-break space), U+3000 (ideographic space), U+2029 (paragraph separator).
  CHECK(Render("[{{ text | trim }}]", {{"text", "\u00a0\u3000 hi \t\u2029\n"}}) == "[hi]");
  CHECK(Render("[{{ '--a--' | trim('-') }}]") == "[a]");
  // Not whitespace: U+200B (zero width space) stays.
  CHECK(Render("[{{ text | trim }}]", {{"text", "\u200bhi"}}) == "[\u200bhi]");
}

TEST_CASE("tojson writes json.dumps' text, non-ASCII as it is") {
  const Json vars = {{"v", Json{{"name", "caf\u00e9 \"q\" \\ \n"}, {"n", 1}, {"x", 2.5}, {"ok", true}, {"none", nullptr},
                                {"list", Json::array({1, "a"})}, {"empty", Json::object()}}}};
  CHECK(Render("{{ v | tojson }}", vars) ==
        "{\"name\": \"caf\u00e9 \\\"q\\\" \\\\ \\n\", \"n\": 1, \"x\": 2.5, \"ok\": true, \"none\": null, "
        "\"list\": [1, \"a\"], \"empty\": {}}");
  CHECK(Render("{{ {'a': [1, {'b': none}]} | tojson(indent=2) }}") == "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ]\n}");
  CHECK(Render("{{ {'b': 1, 'a': 2} | tojson(separators=(',', ':'), sort_keys=true) }}") == "{\"a\":2,\"b\":1}");
  CHECK(Render("{{ 'é<' | tojson(ensure_ascii=true) }} {{ 'x' | tojson }} {{ none | tojson }}") == "\"\\u00e9<\" \"x\" null");
}

TEST_CASE("length, count, first, last, list, string, int, float") {
  CHECK(Render("{{ messages | length }} {{ 'héllo' | length }} {{ {'a': 1} | count }} {{ missing | length }}", Conversation()) ==
        "4 5 1 0");
  CHECK(Render("{{ (messages | first).role }} {{ (messages | last).content }} {{ 'abc' | first }} {{ [] | first is defined }}",
               Conversation()) == "system Bye a False");
  CHECK(Render("{{ 'ab' | list }} {{ {'k': 1} | list }} {{ 42 | string }}{{ none | string }}") == "['a', 'b'] ['k'] 42None");
  CHECK(Render("{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ true | int }} "
               "{{ '0x1A' | int(0, 16) }}") == "42 4 0 7 3 1 26");
  CHECK(Render("{{ '2.5' | float }} {{ 3 | float }} {{ 'x' | float }}") == "2.5 3.0 0.0");
}

TEST_CASE("default, with and without its boolean argument") {
  CHECK(Render("{{ missing | default('d') }} {{ none | default('d') }} {{ '' | default('d') }} {{ '' | d('d', true) }} "
               "{{ none | default('d', true) }} {{ 0 | default('d', boolean=true) }} {{ missing | default }}.") ==
        "d None  d d d .");
}

TEST_CASE("join, map, select and reject") {
  CHECK(Render("{{ messages | map(attribute='role') | join(', ') }}", Conversation()) == "system, user, assistant, user");
  CHECK(Render("{{ ['a', 'b'] | map('upper') | list }} {{ [1, 2] | join }} {{ messages | join('|', attribute='role') }}",
               Conversation()) == "['A', 'B'] 12 system|user|assistant|user");
  CHECK(Render("{{ [{'a': 1}, {}] | map(attribute='a', default=0) | list }}") == "[1, 0]");
  CHECK(Render("{{ [1, 2, 3, 4] | select('even') | list }} {{ [1, 2, 3] | reject('odd') | list }} "
               "{{ [0, 1, '', 'a'] | select | list }} {{ [1, 5, 9] | select('gt', 4) | list }}") ==
        "[2, 4] [2] [1, 'a'] [5, 9]");
  // map and select on none or nothing give nothing (Jinja iterates only a true value).
  CHECK(Render("{{ none | map('upper') | list }}{{ none | select | list }}") == "[][]");
}

TEST_CASE("selectattr and rejectattr, with and without a test") {
  const std::string users = "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}";
  CHECK(Render(users, Conversation()) == "Hi,Bye");
  CHECK(Render("{{ messages | rejectattr('role', 'in', ['user', 'system']) | map(attribute='content') | list }}",
               Conversation()) == "['Hello']");
  CHECK(Render("{{ items | selectattr('on') | map(attribute='n') | list }} {{ items | rejectattr('on') | list | length }} "
               "{{ items | selectattr('extra', 'defined') | list | length }}",
               {{"items", Json::array({Json{{"n", 1}, {"on", true}}, Json{{"n", 2}, {"on", false}, {"extra", 0}}})}}) ==
        "[1] 1 1");
  // What select and selectattr give is a generator: always true, with no length.
  CHECK(Render("{% if [] | select %}true{% endif %}") == "true");
}

TEST_CASE("items, dictsort, sort, unique, min, max, sum, reverse") {
  const Json vars = {{"d", Json{{"b", 1}, {"A", 3}, {"c", 2}}}};
  CHECK(Render("{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %} {{ d | dictsort }} {{ d | dictsort(by='value') }}", vars) ==
        "b1A3c2 [('A', 3), ('b', 1), ('c', 2)] [('b', 1), ('c', 2), ('A', 3)]");
  CHECK(Render("{{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ [3, 1, 2] | sort(reverse=true) }}") ==
        "['A', 'b', 'c'] ['A', 'b', 'c'] [3, 2, 1]");
  CHECK(Render("{{ ['a', 'A', 'b', 'a'] | unique | list }} {{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ [1, 2, 3] | sum }} "
               "{{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }}") == "['a', 'b'] 1 3 6 [3, 2, 1] cba");
}

TEST_CASE("text filters: lower, upper, title, capitalize, replace, indent, escape, safe") {
  CHECK(Render("{{ 'Hello' | lower }} {{ 'Hello' | upper }} {{ 'hello big-world' | title }} {{ 'hELLO' | capitalize }}") ==
        "hello HELLO Hello Big-World Hello");
  CHECK(Render("{{ 'a-b-c' | replace('-', '+') }} {{ 'a-b-c' | replace('-', '', 1) }}") == "a+b+c ab-c");
  CHECK(Render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, first=true) }}|{{ 'a\\n\\nb' | indent('> ', blank=true) }}") ==
        "a\n  b\n\n  c|  a\n  b|a\n> \n> b");
  CHECK(Render("{{ '<a & \"b\">' | e }} {{ '<b>' | safe }}") == "&lt;a &amp; &#34;b&#34;&gt; <b>");
  // Markup (what safe and escape give) escapes plain text added to it with +.
  CHECK(Render("{{ '<'|safe + '<' }}") == "<&lt;");
}

TEST_CASE("abs and round") {
  CHECK(Render("{{ -3 | abs }} {{ -2.5 | abs }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 2.1 | round(0, 'ceil') }} "
               "{{ 7 | round }}") == "3 2.5 2.0 4.0 2.67 3.0 7");
}

}  // namespace test_jinja_filters
