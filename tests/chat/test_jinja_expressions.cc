// The Jinja interpreter's expressions on templates written for these tests: literals,
// arithmetic, comparisons, logic, the conditional expression, attribute and item access,
// slicing, `in`, the tests (`is ...`), the str and dict methods, and how values print
// (Python's str(): None, True, 1.0, lists and dicts as Python writes them).
#include <doctest/doctest.h>

#include "tests/chat/jinja_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_jinja_expressions {

using wb::chat::testing::Conversation;
using wb::chat::testing::Json;
using wb::chat::testing::Render;

TEST_CASE("values print as Python prints them") {
  CHECK(Render("{{ none }} {{ true }} {{ False }} {{ 42 }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 2.5e-7 }}") ==
        "None True False 42 1.0 0.30000000000000004 1e+20 2.5e-07");
  CHECK(Render("{{ [1, 'a', none, (2, 3), (4,)] }}") == "[1, 'a', None, (2, 3), (4,)]");
  CHECK(Render("{{ {'k': \"it's\", 'n': [true]} }}") == "{'k': \"it's\", 'n': [True]}");
  CHECK(Render("{{ missing }}|{{ 'adjacent' 'strings' }}|{{ 'tab\\there' }}") == "|adjacentstrings|tab\there");
  CHECK(Render("{{ messages[1] }}", Conversation()) == "{'role': 'user', 'content': 'Hi'}");
}

TEST_CASE("arithmetic follows Python") {
  CHECK(Render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }}") ==
        "3 -4 1 2 3.5 1024 0.5");
  CHECK(Render("{{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ 7.5 // 2 }} {{ 1 + 1.5 }}") == "3 9 4 3.0 2.5");
  CHECK(Render("{{ 'ab' * 3 }} {{ [1] + [2] }} {{ 'a' + 'b' }} {{ 'n=' ~ 1 ~ none ~ missing }}") == "ababab [1, 2] ab n=1None");
  CHECK(Render("{{ '%s has %d items' % ('list', 3) }}") == "list has 3 items");
}

TEST_CASE("comparisons, logic and the conditional expression") {
  CHECK(Render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ [1, 2] == [1, 2] }} {{ 'a' != 'a' }}") ==
        "True False True True True False");
  // `and` and `or` give one of their operands, as in Python.
  CHECK(Render("{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ not 0 }} {{ not 1 == 1 }}") == "x b  True False");
  CHECK(Render("{{ 'yes' if n > 1 else 'no' }}{{ 'never' if false }}", {{"n", 2}}) == "yes");
}

TEST_CASE("attribute and item access") {
  const Json vars = {{"d", Json{{"a", Json{{"b", 5}}}, {"items", "value"}}}, {"xs", Json::array({10, 20, 30})}};
  CHECK(Render("{{ d.a.b }} {{ d['a']['b'] }} {{ xs[0] }} {{ xs[-1] }} {{ xs.1 }}", vars) == "5 5 10 30 20");
  // A missing key is undefined (prints empty, is not defined); `items` is the dict's method
  // before its key (Jinja tries the attribute first for `.`, the item first for `[]`).
  CHECK(Render("[{{ d.zzz }}] {{ d.zzz is defined }} {{ d['items'] }} {{ xs[7] is defined }}", vars) ==
        "[] False value False");
}

TEST_CASE("slicing, with steps and negative bounds") {
  CHECK(Render("{{ xs[1:] }} {{ xs[:-1] }} {{ xs[::-1] }} {{ xs[::2] }} {{ xs[-2:] }} {{ xs[5:] }}",
               {{"xs", Json::array({1, 2, 3, 4})}}) == "[2, 3, 4] [1, 2, 3] [4, 3, 2, 1] [1, 3] [3, 4] []");
  CHECK(Render("{{ 'héllo'[1:3] }} {{ 'abc'[::-1] }} {{ 'abcdef'[-4:-1:2] }}") == "él cba ce");
  CHECK(Render("{{ messages[1:] | length }} {{ messages[-1].content }}", Conversation()) == "3 Bye");
}

TEST_CASE("in and not in") {
  CHECK(Render("{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'a' in {'a': 1} }} {{ 'z' not in 'abc' }} {{ 3 in [] }}") ==
        "True True True True False");
}

TEST_CASE("tests") {
  CHECK(Render("{{ x is defined }} {{ y is undefined }} {{ none is none }} {{ 'a' is string }} {{ 1 is number }} "
               "{{ 1.5 is integer }} {{ 1 is integer }} {{ 1.5 is float }}",
               {{"x", 1}}) == "True True True True True False True True");
  CHECK(Render("{{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} {{ 'a' is iterable }} {{ 3 is iterable }} "
               "{{ [] is sequence }} {{ true is boolean }} {{ 1 is boolean }}") ==
        "True False True True False True True False");
  CHECK(Render("{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 4 is even }} {{ 3 is odd }} "
               "{{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }}") == "True False True True True True False");
  CHECK(Render("{{ 'a' is equalto 'a' }} {{ 1 is eq 2 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 1 is gt 2 }} "
               "{{ 2 is in [1, 2] }} {{ 'x' is not in 'abc' }}") == "True False True True False True True");
}

TEST_CASE("str methods") {
  CHECK(Render("[{{ '  a b  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '  a'.lstrip() }}][{{ 'a\\n\\n'.rstrip() }}]"
               "[{{ 'a--'.rstrip('-') }}]") == "[a b][a][a][a][a]");
  CHECK(Render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a.b.c'.rsplit('.', 1) }}") ==
        "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a.b', 'c']");
  CHECK(Render("{{ 'aXbX'.replace('X', '-') }} {{ 'aXbX'.replace('X', '', 1) }} {{ 'Ab'.upper() }} {{ 'Ab'.lower() }} "
               "{{ 'hello wORLD'.title() }} {{ 'hello World'.capitalize() }}") == "a-b- abX AB ab Hello World Hello world");
  CHECK(Render("{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} {{ 'hello'.find('l') }} "
               "{{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ '-'.join(['a', 'b']) }}") == "True True 2 -1 2 a-b");
  CHECK(Render("{{ '{} and {}'.format('a', 1) }} {{ '{1}{0}'.format('a', 'b') }} {{ '<{name}>'.format(name='x') }}") ==
        "a and 1 ba <x>");
}

TEST_CASE("dict methods") {
  const Json vars = {{"d", Json{{"a", 1}, {"b", 2}}}};
  CHECK(Render("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }} {{ d.keys() | list }} {{ d.values() | list }}", vars) ==
        "1 None 0 ['a', 'b'] [1, 2]");
  CHECK(Render("{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}", vars) == "a1b2");
}

TEST_CASE("list and dict literals, and range") {
  CHECK(Render("{{ [1, 2,] | length }} {{ {'a': 1, 'a': 2} }} {{ range(3) | list }} {{ range(1, 7, 2) | list }} "
               "{{ range(3, 0, -1) | list }}") == "2 {'a': 2} [0, 1, 2] [1, 3, 5] [3, 2, 1]");
  CHECK(Render("{{ dict(a=1, b='x') }}") == "{'a': 1, 'b': 'x'}");
}

}  // namespace test_jinja_expressions
