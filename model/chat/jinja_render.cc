// The renderer: statements and expressions of a parsed template evaluated as Jinja 3.1 does
// (template designer documentation: "Variables", "Control Structures", "Assignments",
// "Expressions"; scoping as in "Assignments": a for loop's assignments end with its
// iteration, which is why templates use namespace()).
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "model/chat/jinja_error.h"
#include "model/chat/jinja_render.h"

namespace wb::chat {

namespace {

// Deep enough for any chat template's macros, shallow enough to stop a runaway recursion
// before the stack does.
constexpr int kMaxCallDepth = 200;

}  // namespace

const Value* CallArguments::Take(size_t index, std::string_view name) {
  takenPositional_.resize(positional.size(), false);
  takenKeyword_.resize(keywords.size(), false);
  if (index < positional.size()) {
    takenPositional_[index] = true;
    return &positional[index];
  }
  for (size_t i = 0; i < keywords.size(); ++i) {
    if (keywords[i].first == name) {
      takenKeyword_[i] = true;
      return &keywords[i].second;
    }
  }
  return nullptr;
}

void CallArguments::Finish(std::string_view callee) const {
  for (size_t i = 0; i < positional.size(); ++i) {
    if (i >= takenPositional_.size() || !takenPositional_[i]) {
      ThrowTemplateError(fmt::format("{}() takes at most {} positional argument(s) ({} given)", callee,
                                     std::count(takenPositional_.begin(), takenPositional_.end(), true),
                                     positional.size()));
    }
  }
  for (size_t i = 0; i < keywords.size(); ++i) {
    if (i >= takenKeyword_.size() || !takenKeyword_[i]) {
      ThrowTemplateError(fmt::format("{}() got an unexpected keyword argument '{}'", callee, keywords[i].first));
    }
  }
}

const Value* Scope::Find(std::string_view name) const {
  for (const Scope* scope = this; scope != nullptr; scope = scope->parent.get()) {
    for (const auto& [key, value] : scope->variables) {
      if (key == name) return &value;
    }
  }
  return nullptr;
}

void Scope::Set(const std::string& name, Value value) {
  for (auto& [key, existing] : variables) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  variables.emplace_back(name, std::move(value));
}

std::string Renderer::Render(const ParsedTemplate& parsed) {
  auto top = std::make_shared<Scope>();
  top->parent = globals_;
  std::string out;
  RenderNodes(parsed.nodes, top, out);
  return out;
}

Renderer::Flow Renderer::RenderNodes(const NodeList& nodes, const std::shared_ptr<Scope>& scope, std::string& out) {
  for (const NodePtr& node : nodes) {
    const Flow flow = RenderNode(*node, scope, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Renderer::Flow Renderer::RenderNode(const Node& node, const std::shared_ptr<Scope>& scope, std::string& out) {
  line_ = node.line;
  switch (node.kind) {
    case NodeKind::kText: out += node.text; return Flow::kNormal;
    case NodeKind::kOutput: {
      const Value value = Evaluate(*node.expr, scope);
      out += value.Str();
      return Flow::kNormal;
    }
    case NodeKind::kIf:
      for (const auto& [condition, body] : node.branches) {
        if (condition == nullptr || Evaluate(*condition, scope).Truthy()) return RenderNodes(body, scope, out);
      }
      return Flow::kNormal;
    case NodeKind::kFor: return RenderFor(node, scope, out);
    case NodeKind::kSet: Assign(node.target, Evaluate(*node.expr, scope), *scope, node.line); return Flow::kNormal;
    case NodeKind::kSetBlock: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      std::string captured;
      RenderNodes(node.body, inner, captured);
      Value value = Value::String(std::move(captured));
      if (node.expr != nullptr) {
        // The filters, innermost (first written) first, applied to the captured text.
        std::vector<const Expr*> chain;
        for (const Expr* f = node.expr.get(); f != nullptr; f = f->items[0].get()) chain.push_back(f);
        for (auto f = chain.rbegin(); f != chain.rend(); ++f) {
          CallArguments arguments = EvaluateArguments(**f, 1, scope);
          line_ = (*f)->line;
          value = ApplyFilter((*f)->name, value, arguments);
        }
      }
      Assign(node.target, value, *scope, node.line);
      return Flow::kNormal;
    }
    case NodeKind::kMacro: scope->Set(node.text, MakeMacro(node, scope)); return Flow::kNormal;
    case NodeKind::kFilterBlock: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      std::string captured;
      RenderNodes(node.body, inner, captured);
      Value value = Value::String(std::move(captured));
      std::vector<const Expr*> chain;
      for (const Expr* f = node.expr.get(); f != nullptr; f = f->items[0].get()) chain.push_back(f);
      for (auto f = chain.rbegin(); f != chain.rend(); ++f) {
        CallArguments arguments = EvaluateArguments(**f, 1, scope);
        line_ = (*f)->line;
        value = ApplyFilter((*f)->name, value, arguments);
      }
      out += value.Str();
      return Flow::kNormal;
    }
    case NodeKind::kWith: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      for (const auto& [target, expr] : node.assignments) Assign(target, Evaluate(*expr, scope), *inner, node.line);
      return RenderNodes(node.body, inner, out);
    }
    case NodeKind::kScope: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      return RenderNodes(node.body, inner, out);
    }
    case NodeKind::kBreak: return Flow::kBreak;
    case NodeKind::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

Renderer::Flow Renderer::RenderFor(const Node& node, const std::shared_ptr<Scope>& scope, std::string& out) {
  const Value iterable = Evaluate(*node.expr, scope);
  ValueList items = Iterate(iterable);
  // `for x in xs if condition`: the items that pass, before the loop starts, so loop.length
  // and loop.last count only them (template designer documentation, "For").
  if (node.loopFilter != nullptr) {
    ValueList kept;
    for (const Value& item : items) {
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      Assign(node.target, item, *probe, node.line);
      if (Evaluate(*node.loopFilter, probe).Truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (node.elseBody.empty()) return Flow::kNormal;
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    RenderNodes(node.elseBody, inner, out);
    return Flow::kNormal;
  }
  const auto length = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < length; ++i) {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    // The loop variable (template designer documentation, "For": loop.index ... loop.cycle).
    auto loop = std::make_shared<AttributeObject>();
    loop->typeName = "LoopContext";
    loop->attributes = {
        {"index", Value::Int(i + 1)},
        {"index0", Value::Int(i)},
        {"revindex", Value::Int(length - i)},
        {"revindex0", Value::Int(length - i - 1)},
        {"first", Value::Bool(i == 0)},
        {"last", Value::Bool(i == length - 1)},
        {"length", Value::Int(length)},
        {"depth", Value::Int(1)},
        {"depth0", Value::Int(0)},
        {"previtem", i > 0 ? items[i - 1] : Value::Undefined("there is no previous item")},
        {"nextitem", i + 1 < length ? items[i + 1] : Value::Undefined("there is no next item")},
    };
    loop->attributes.emplace_back("cycle", Value::Function("loop.cycle", [i](Renderer&, CallArguments& arguments) {
      if (arguments.positional.empty()) ThrowTemplateError("no items for cycling given");
      return arguments.positional[static_cast<size_t>(i) % arguments.positional.size()];
    }));
    inner->Set("loop", Value::Object(loop));
    Assign(node.target, items[i], *inner, node.line);
    if (RenderNodes(node.body, inner, out) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Renderer::Assign(const AssignTarget& target, const Value& value, Scope& scope, int line) {
  if (!target.attribute.empty()) {
    const Value* owner = scope.Find(target.names[0]);
    if (owner == nullptr || owner->kind() != ValueKind::kObject || owner->AsObject()->typeName != "Namespace") {
      ThrowTemplateError("cannot assign attribute on non-namespace object", line);
    }
    owner->AsObject()->Set(target.attribute, value);
    return;
  }
  if (!target.unpack) {
    scope.Set(target.names[0], value);
    return;
  }
  if (value.IsUndefined()) ThrowUndefined(value);
  const ValueList items = Iterate(value);
  if (items.size() != target.names.size()) {
    ThrowTemplateError(items.size() > target.names.size()
                           ? fmt::format("too many values to unpack (expected {})", target.names.size())
                           : fmt::format("not enough values to unpack (expected {}, got {})", target.names.size(),
                                         items.size()),
                       line);
  }
  for (size_t i = 0; i < items.size(); ++i) scope.Set(target.names[i], items[i]);
}

CallArguments Renderer::EvaluateArguments(const Expr& expr, size_t firstArgument, const std::shared_ptr<Scope>& scope) {
  CallArguments arguments;
  arguments.line = expr.line;
  for (size_t i = firstArgument; i < expr.items.size(); ++i) arguments.positional.push_back(Evaluate(*expr.items[i], scope));
  for (const auto& [name, value] : expr.keywords) arguments.keywords.emplace_back(name, Evaluate(*value, scope));
  return arguments;
}

Value Renderer::MakeMacro(const Node& node, const std::shared_ptr<Scope>& scope) {
  const Node* macro = &node;
  std::weak_ptr<Scope> definedIn = scope;
  return Value::Function("macro '" + node.text + "'", [this, macro, definedIn](Renderer&, CallArguments& arguments) {
    if (++depth_ > kMaxCallDepth) ThrowTemplateError("maximum recursion depth exceeded in a macro call");
    auto inner = std::make_shared<Scope>();
    inner->parent = definedIn.lock();
    const size_t count = macro->parameters.size();
    // Positional arguments, then name=value ones, then defaults; a parameter with none of them
    // is undefined (template designer documentation, "Macros").
    for (size_t i = 0; i < count; ++i) {
      const MacroParameter& parameter = macro->parameters[i];
      const Value* given = nullptr;
      if (i < arguments.positional.size()) given = &arguments.positional[i];
      for (const auto& [name, value] : arguments.keywords) {
        if (name != parameter.name) continue;
        if (given != nullptr) {
          ThrowTemplateError(fmt::format("macro '{}' got multiple values for argument '{}'", macro->text, name));
        }
        given = &value;
      }
      if (given != nullptr) {
        inner->Set(parameter.name, *given);
      } else if (parameter.defaultValue != nullptr) {
        inner->Set(parameter.name, Evaluate(*parameter.defaultValue, inner));
      } else {
        inner->Set(parameter.name, Value::Undefined(fmt::format("parameter '{}' was not provided", parameter.name)));
      }
    }
    ValueList extra;
    for (size_t i = count; i < arguments.positional.size(); ++i) extra.push_back(arguments.positional[i]);
    if (!extra.empty() && !macro->usesVarargs) {
      ThrowTemplateError(fmt::format("macro '{}' takes not more than {} argument(s)", macro->text, count));
    }
    DictEntries extraKeywords;
    for (const auto& [name, value] : arguments.keywords) {
      const bool isParameter = std::any_of(macro->parameters.begin(), macro->parameters.end(),
                                           [&](const MacroParameter& p) { return p.name == name; });
      if (!isParameter) extraKeywords.emplace_back(Value::String(name), value);
    }
    if (!extraKeywords.empty() && !macro->usesKwargs) {
      ThrowTemplateError(fmt::format("macro '{}' takes no keyword argument '{}'", macro->text,
                                     extraKeywords.front().first.AsString()));
    }
    if (macro->usesVarargs) inner->Set("varargs", Value::List(std::move(extra), /*isTuple=*/true));
    if (macro->usesKwargs) inner->Set("kwargs", Value::Dict(std::move(extraKeywords)));
    std::string out;
    const int callerLine = line_;
    RenderNodes(macro->body, inner, out);
    line_ = callerLine;
    --depth_;
    return Value::String(std::move(out));
  });
}

Value Renderer::Call(const Value& callee, CallArguments& arguments) {
  if (callee.IsUndefined()) ThrowUndefined(callee);
  if (callee.kind() != ValueKind::kCallable) {
    ThrowTemplateError(fmt::format("'{}' object is not callable", callee.TypeName()));
  }
  return callee.AsCallable().call(*this, arguments);
}

Value Renderer::ApplyFilter(const std::string& name, const Value& subject, CallArguments& arguments) {
  return FilterValue(*this, name, subject, arguments);
}

bool Renderer::ApplyTest(const std::string& name, const Value& subject, CallArguments& arguments) {
  return TestValue(*this, name, subject, arguments);
}

Value Renderer::Evaluate(const Expr& expr, const std::shared_ptr<Scope>& scope) {
  line_ = expr.line;
  switch (expr.kind) {
    case ExprKind::kLiteral: return expr.literal;
    case ExprKind::kName: {
      const Value* value = scope->Find(expr.name);
      return value != nullptr ? *value : Value::Undefined(fmt::format("'{}' is undefined", expr.name));
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      ValueList items;
      for (const ExprPtr& item : expr.items) items.push_back(Evaluate(*item, scope));
      return Value::List(std::move(items), expr.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      DictEntries entries;
      for (size_t i = 0; i + 1 < expr.items.size(); i += 2) {
        Value key = Evaluate(*expr.items[i], scope);
        Value value = Evaluate(*expr.items[i + 1], scope);
        auto existing = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return PythonEquals(e.first, key); });
        if (existing != entries.end()) {
          existing->second = std::move(value);
        } else {
          entries.emplace_back(std::move(key), std::move(value));
        }
      }
      return Value::Dict(std::move(entries));
    }
    case ExprKind::kGetAttr: {
      const Value object = Evaluate(*expr.items[0], scope);
      line_ = expr.line;
      return GetAttribute(object, expr.name);
    }
    case ExprKind::kGetItem: {
      const Value object = Evaluate(*expr.items[0], scope);
      const Value key = Evaluate(*expr.items[1], scope);
      line_ = expr.line;
      return GetItem(object, key);
    }
    case ExprKind::kSlice: {
      const Value object = Evaluate(*expr.items[0], scope);
      Value bounds[3];
      for (int i = 0; i < 3; ++i) bounds[i] = expr.items[i + 1] ? Evaluate(*expr.items[i + 1], scope) : Value::None();
      line_ = expr.line;
      return Slice(object, bounds[0], bounds[1], bounds[2]);
    }
    case ExprKind::kCall: {
      const Value callee = Evaluate(*expr.items[0], scope);
      CallArguments arguments = EvaluateArguments(expr, 1, scope);
      line_ = expr.line;
      return Call(callee, arguments);
    }
    case ExprKind::kFilter: {
      const Value subject = Evaluate(*expr.items[0], scope);
      CallArguments arguments = EvaluateArguments(expr, 1, scope);
      line_ = expr.line;
      return ApplyFilter(expr.name, subject, arguments);
    }
    case ExprKind::kTest: {
      const Value subject = Evaluate(*expr.items[0], scope);
      CallArguments arguments = EvaluateArguments(expr, 1, scope);
      line_ = expr.line;
      const bool passed = ApplyTest(expr.name, subject, arguments);
      return Value::Bool(passed != expr.negated);
    }
    case ExprKind::kNegate:
    case ExprKind::kPlus: {
      const Value operand = Evaluate(*expr.items[0], scope);
      line_ = expr.line;
      if (operand.IsUndefined()) ThrowUndefined(operand);
      if (!operand.IsNumber()) {
        ThrowTemplateError(fmt::format("bad operand type for unary {}: '{}'", expr.kind == ExprKind::kNegate ? '-' : '+',
                                       operand.TypeName()));
      }
      if (expr.kind == ExprKind::kPlus) return operand.kind() == ValueKind::kBool ? Value::Int(operand.AsInt()) : operand;
      if (operand.kind() == ValueKind::kFloat) return Value::Float(-operand.AsDouble());
      if (operand.AsInt() == INT64_MIN) ThrowUnsupported("integer arithmetic beyond 64 bits");
      return Value::Int(-operand.AsInt());
    }
    case ExprKind::kNot: return Value::Bool(!Evaluate(*expr.items[0], scope).Truthy());
    case ExprKind::kAnd: {
      // Python's `and` and `or` give one of their operands, not a bool.
      Value left = Evaluate(*expr.items[0], scope);
      return left.Truthy() ? Evaluate(*expr.items[1], scope) : left;
    }
    case ExprKind::kOr: {
      Value left = Evaluate(*expr.items[0], scope);
      return left.Truthy() ? left : Evaluate(*expr.items[1], scope);
    }
    case ExprKind::kBinary: {
      const Value left = Evaluate(*expr.items[0], scope);
      const Value right = Evaluate(*expr.items[1], scope);
      line_ = expr.line;
      return BinaryOperation(expr.name, left, right);
    }
    case ExprKind::kCompare: {
      Value left = Evaluate(*expr.items[0], scope);
      for (size_t i = 0; i < expr.ops.size(); ++i) {
        Value right = Evaluate(*expr.items[i + 1], scope);
        line_ = expr.line;
        const std::string& op = expr.ops[i];
        bool holds = false;
        if (op == "==") {
          holds = PythonEquals(left, right);
        } else if (op == "!=") {
          holds = !PythonEquals(left, right);
        } else if (op == "in") {
          holds = Contains(right, left);
        } else if (op == "notin") {
          holds = !Contains(right, left);
        } else {
          if (left.IsUndefined()) ThrowUndefined(left);
          if (right.IsUndefined()) ThrowUndefined(right);
          const int order = PythonCompare(left, right);
          holds = op == "<" ? order < 0 : op == "<=" ? order <= 0 : op == ">" ? order > 0 : order >= 0;
        }
        if (!holds) return Value::Bool(false);
        left = std::move(right);
      }
      return Value::Bool(true);
    }
    case ExprKind::kConditional: {
      if (Evaluate(*expr.items[1], scope).Truthy()) return Evaluate(*expr.items[0], scope);
      if (expr.items[2] != nullptr) return Evaluate(*expr.items[2], scope);
      return Value::Undefined("the inline if-expression on line " + std::to_string(expr.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

}  // namespace wb::chat
