// Inside the chat-template interpreter: the renderer that walks a parsed template
// (jinja_render.cc) and the built-ins it calls (jinja_builtins.cc): filters, tests, the
// methods of str, dict and list, attribute and item access, and the global functions.
//
// Contract: everything here throws TemplateError (jinja_error.h) on a value Jinja refuses or a
// construct this interpreter does not know; jinja.h's RenderTemplate catches it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/chat/jinja_ast.h"
#include "model/chat/jinja_value.h"

namespace wb::chat {

struct CallArguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
  int line = 0;

  // The argument at `index` or named `name`, taken (so that Finish can tell what is left);
  // nullptr when neither was given.
  const Value* Take(size_t index, std::string_view name);
  // Throws when an argument was given that the callee does not take (Python's TypeError).
  void Finish(std::string_view callee) const;

 private:
  std::vector<bool> takenPositional_;
  std::vector<bool> takenKeyword_;
};

// Variables in scope: Jinja's frames. A for loop's iteration, a macro call, a block set, a
// filter block and `with` each render in a scope of their own whose assignments end with it;
// `if` has none.
struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> variables;

  const Value* Find(std::string_view name) const;
  void Set(const std::string& name, Value value);
};

class Renderer {
 public:
  explicit Renderer(std::shared_ptr<Scope> globals) : globals_(std::move(globals)) {}

  std::string Render(const ParsedTemplate& parsed);
  // The line of the expression or statement evaluated last (for errors thrown without one).
  int currentLine() const { return line_; }

  Value Call(const Value& callee, CallArguments& arguments);
  Value ApplyFilter(const std::string& name, const Value& subject, CallArguments& arguments);
  bool ApplyTest(const std::string& name, const Value& subject, CallArguments& arguments);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  Flow RenderNodes(const NodeList& nodes, const std::shared_ptr<Scope>& scope, std::string& out);
  Flow RenderNode(const Node& node, const std::shared_ptr<Scope>& scope, std::string& out);
  Flow RenderFor(const Node& node, const std::shared_ptr<Scope>& scope, std::string& out);
  void Assign(const AssignTarget& target, const Value& value, Scope& scope, int line);
  Value Evaluate(const Expr& expr, const std::shared_ptr<Scope>& scope);
  CallArguments EvaluateArguments(const Expr& expr, size_t firstArgument, const std::shared_ptr<Scope>& scope);
  Value MakeMacro(const Node& node, const std::shared_ptr<Scope>& scope);

  std::shared_ptr<Scope> globals_;
  int line_ = 0;
  int depth_ = 0;
};

// Built-ins (jinja_builtins.cc).
Value FilterValue(Renderer& renderer, const std::string& name, const Value& subject, CallArguments& arguments);
bool TestValue(Renderer& renderer, const std::string& name, const Value& subject, CallArguments& arguments);
// `object.name` as Jinja's sandboxed getattr does it: a method of str, dict or list bound to
// the object, a dict's item, a namespace's attribute, or undefined.
Value GetAttribute(const Value& object, const std::string& name);
// `object[key]`: an item, then (for a str key) an attribute, or undefined.
Value GetItem(const Value& object, const Value& key);
Value Slice(const Value& object, const Value& start, const Value& stop, const Value& step);
// Python's binary operators: + - * / // % ** and Jinja's ~.
Value BinaryOperation(const std::string& op, const Value& left, const Value& right);
// `needle in haystack`.
bool Contains(const Value& haystack, const Value& needle);
// The items a for loop or a filter iterates: a list's items, a str's characters, a dict's keys;
// nothing for undefined; TemplateError for what Python cannot iterate.
ValueList Iterate(const Value& value);
// range, dict, namespace, raise_exception, strftime_now (and the other globals Jinja defines,
// refused by name when called).
void AddGlobalFunctions(Scope& globals);
// Undefined values stop here when used for anything but printing, testing and iterating
// (Jinja's default Undefined raises UndefinedError).
[[noreturn]] void ThrowUndefined(const Value& undefined);

}  // namespace wb::chat
