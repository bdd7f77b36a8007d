// The parsed form of a chat template: expressions and statements, each with its source line.
//
// Contract: ParseTemplate (jinja_parse.cc) turns template text into a list of statements the
// renderer (jinja_render.cc) walks. The text is lexed as Jinja lexes it for transformers'
// environment (trim_blocks and lstrip_blocks on, whitespace control by `-` and `+`, one
// trailing newline dropped, \r\n and \r read as \n); the grammar is Jinja's (the parser's
// precedence: `if`-else, or, and, not, comparisons, + -, ~, * / // %, **, unary - +, then
// filters, tests and calls, then attribute and item access). A syntax error, an unknown tag,
// filter or test throws TemplateError with the line, as Jinja refuses such a template when it
// compiles it; a tag Jinja knows and this interpreter does not throws kUnsupported.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/chat/jinja_value.h"

namespace wb::chat {

enum class ExprKind {
  kLiteral,      // literal
  kName,         // name
  kList,         // items: [a, b]
  kTuple,        // items: (a, b)
  kDict,         // items: key, value, key, value ...
  kGetAttr,      // items[0] . name
  kGetItem,      // items[0] [ items[1] ]
  kSlice,        // items[0] [ items[1] : items[2] : items[3] ], each of the three may be null
  kCall,         // items[0] ( items[1..] , keywords )
  kFilter,       // items[0] | name ( items[1..], keywords ); items[0] null in {% filter %}
  kTest,         // items[0] is [not] name ( items[1..], keywords )
  kNegate,       // - items[0]
  kPlus,         // + items[0]
  kNot,          // not items[0]
  kBinary,       // items[0] op items[1], op one of + - * / // % ** ~
  kAnd,          // items[0] and items[1]
  kOr,           // items[0] or items[1]
  kCompare,      // items[0] ops[0] items[1] ops[1] items[2] ... (Python's chained comparison)
  kConditional,  // items[0] if items[1] else items[2] (items[2] null without else)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  Value literal;
  std::string name;               // a name, attribute, filter or test, or a binary operator
  std::vector<ExprPtr> items;     // operands, see ExprKind
  std::vector<std::pair<std::string, ExprPtr>> keywords;  // name=value arguments
  std::vector<std::string> ops;   // kCompare: ==, !=, <, <=, >, >=, in, notin
  bool negated = false;           // kTest: `is not`
  int depth = 1;                  // of the tree below (the parser bounds it, see jinja_parse.cc)
};

// What `{% set %}` and `{% for %}` assign to: a name, names to unpack, or a namespace's
// attribute (`ns.found`).
struct AssignTarget {
  std::vector<std::string> names;  // one name, or several for unpacking
  bool unpack = false;             // `a, b` or `(a, b)`: unpack even a single name
  std::string attribute;           // set ns.attribute: names[0] is the namespace
};

enum class NodeKind {
  kText,        // text
  kOutput,      // {{ expr }}
  kIf,          // {% if %} branches: condition (null for else) and body
  kFor,         // {% for target in expr [if filter] %} body {% else %} elseBody {% endfor %}
  kSet,         // {% set target = expr %}
  kSetBlock,    // {% set target [| filters] %} body {% endset %}; expr: the filters, subject null
  kMacro,       // {% macro name(params) %} body {% endmacro %}
  kFilterBlock, // {% filter name(args) %} body {% endfilter %}; expr: the filter, subject null
  kWith,        // {% with a = x %} body {% endwith %}: assignments in a scope of their own
  kScope,       // a body rendered as it is: {% generation %} (transformers' AssistantTracker)
  kBreak,       // {% break %} (jinja2.ext.loopcontrols, which transformers enables)
  kContinue,    // {% continue %}
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

struct MacroParameter {
  std::string name;
  ExprPtr defaultValue;  // null: none
};

struct Node {
  NodeKind kind = NodeKind::kText;
  int line = 0;
  std::string text;  // kText; kMacro: the macro's name
  ExprPtr expr;      // kOutput, kSet, kFor's iterable, kSetBlock's and kFilterBlock's filters
  ExprPtr loopFilter;  // kFor: `if` condition
  AssignTarget target;
  std::vector<std::pair<ExprPtr, NodeList>> branches;  // kIf
  NodeList body;
  NodeList elseBody;
  std::vector<MacroParameter> parameters;  // kMacro
  bool usesVarargs = false;                // kMacro: the body names `varargs`
  bool usesKwargs = false;                 // kMacro: the body names `kwargs`
  std::vector<std::pair<AssignTarget, ExprPtr>> assignments;  // kWith
};

struct ParsedTemplate {
  NodeList nodes;
};

// Throws TemplateError (jinja_error.h).
ParsedTemplate ParseTemplate(std::string_view source);

// The filters and tests Jinja 3.1 defines (transformers adds none but its own tojson): a name
// outside these lists fails when Jinja compiles the template.
bool IsJinjaFilter(std::string_view name);
bool IsJinjaTest(std::string_view name);

}  // namespace wb::chat
