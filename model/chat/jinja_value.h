// The values a chat template computes with: Python's values as Jinja sees them.
//
// Contract: a Value is one of Jinja's undefined, None, bool, int, float, str, list (or tuple),
// dict, an object with attributes (namespace(), the loop variable) or something callable (a
// macro, a built-in function, a bound method). Lists and dicts are shared and never change
// after they are built (transformers renders in Jinja's ImmutableSandboxedEnvironment, which
// refuses list.append and dict.update); only a namespace's attributes change, through
// `{% set ns.name = ... %}`. Dicts keep their keys in insertion order, as Python's do.
// Text follows Python's str(), repr() and json.dumps; strings are UTF-8 and are indexed,
// sliced and counted by code point, as Python's str is. Conversions that Python refuses
// throw TemplateError (jinja_error.h); the interpreter turns it into an Error value at its
// boundary (jinja.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace wb::chat {

class Value;
struct CallArguments;
class Renderer;

using ValueList = std::vector<Value>;
// A dict's entries in insertion order; keys are compared as Python compares them (1 == 1.0).
using DictEntries = std::vector<std::pair<Value, Value>>;
// A built-in function or bound method: its arguments, and the renderer (for filters it calls).
using NativeFunction = std::function<Value(Renderer&, CallArguments&)>;

// An object whose attributes are names: a namespace() (mutable, shared) or the loop variable.
struct AttributeObject {
  std::string typeName;  // "Namespace", "LoopContext"
  std::vector<std::pair<std::string, Value>> attributes;
  const Value* Find(std::string_view name) const;
  void Set(const std::string& name, Value value);
};

struct Callable {
  std::string name;  // for messages: "range", "macro 'render'", "str.strip"
  NativeFunction call;
};

enum class ValueKind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kObject, kCallable };

class Value {
 public:
  Value() = default;  // undefined
  static Value Undefined(std::string hint = "");
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double d);
  static Value String(std::string s);
  // markupsafe's Markup: text marked safe (the safe and escape filters make it). Escaping is
  // off in transformers' environment, but Markup still escapes plain text joined to it with
  // `+` or `%` ("'"|safe + "<" gives "'&lt;"), and Jinja's own templates rely on none of it.
  static Value Markup(std::string s);
  static Value List(ValueList items, bool isTuple = false);
  // What Jinja's map, select, selectattr, items, unique (and reverse on a list) return: a
  // Python iterator, which iterates like a list but is always true, has no len() and no
  // items by index, and prints as "<generator object>".
  static Value Generator(ValueList items);
  static Value Dict(DictEntries entries);
  static Value Object(std::shared_ptr<AttributeObject> object);
  static Value Function(std::string name, NativeFunction call);
  // JSON as Python's json.loads gives it: objects keep their key order.
  static Value FromJson(const nlohmann::ordered_json& json);

  ValueKind kind() const { return kind_; }
  bool IsUndefined() const { return kind_ == ValueKind::kUndefined; }
  bool IsNone() const { return kind_ == ValueKind::kNone; }
  bool IsString() const { return kind_ == ValueKind::kString; }
  bool IsList() const { return kind_ == ValueKind::kList; }
  bool IsDict() const { return kind_ == ValueKind::kDict; }
  bool IsNumber() const { return kind_ == ValueKind::kBool || kind_ == ValueKind::kInt || kind_ == ValueKind::kFloat; }
  bool IsIntegral() const { return kind_ == ValueKind::kBool || kind_ == ValueKind::kInt; }
  bool IsTuple() const { return kind_ == ValueKind::kList && isTuple_; }
  bool IsGenerator() const { return kind_ == ValueKind::kList && isGenerator_; }
  bool IsMarkup() const { return kind_ == ValueKind::kString && isMarkup_; }

  bool AsBool() const { return boolean_; }
  int64_t AsInt() const;     // bool or int
  double AsDouble() const;   // bool, int or float
  const std::string& AsString() const;
  const ValueList& AsList() const { return *list_; }
  const DictEntries& AsDict() const { return *dict_; }
  const std::shared_ptr<AttributeObject>& AsObject() const { return object_; }
  const Callable& AsCallable() const { return *callable_; }
  // What an undefined value stands for, for messages ("'foo' is undefined").
  const std::string& UndefinedHint() const { return AsString(); }

  // Python's bool(); undefined is false.
  bool Truthy() const;
  // Python's str(): "None", "True", 1.0, ['a', 1]; undefined prints as "".
  std::string Str() const;
  // Python's repr(): strings quoted, for lists and dicts.
  std::string Repr() const;
  // Python's type name, for messages: "str", "int", "dict", "undefined".
  std::string TypeName() const;
  // A dict's value for `key`, or nullptr.
  const Value* Find(const Value& key) const;
  const Value* Find(std::string_view key) const;

 private:
  ValueKind kind_ = ValueKind::kUndefined;
  bool boolean_ = false;
  bool isTuple_ = false;
  bool isGenerator_ = false;
  bool isMarkup_ = false;
  int64_t integer_ = 0;
  double real_ = 0;
  std::shared_ptr<const std::string> string_;  // a string's text, an undefined value's hint
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<const DictEntries> dict_;
  std::shared_ptr<AttributeObject> object_;
  std::shared_ptr<const Callable> callable_;
};

// Python's ==, for values of any kinds (numbers compare by value, containers element-wise).
bool PythonEquals(const Value& a, const Value& b);
// Python's <, -1/0/1; throws TemplateError for kinds Python does not order ('<' between int and str).
int PythonCompare(const Value& a, const Value& b);
// Python's repr of a float: the shortest text that reads back the same double ("0.1", "1e+16").
std::string FloatRepr(double d);

// json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, sort_keys=...),
// as transformers' tojson filter calls it. indent < 0: none (one line).
struct JsonDumpOptions {
  int indent = -1;
  std::string indentText;  // a string indent (json.dumps accepts one) when not empty
  std::string itemSeparator;  // "" means json.dumps' default: ", " on one line, "," with indent
  std::string keySeparator = ": ";
  bool sortKeys = false;
  bool ensureAscii = false;  // every character outside ' '..'~' as \uXXXX
};
std::string JsonDump(const Value& value, const JsonDumpOptions& options);

// UTF-8 helpers, by code point, with Python's notion of whitespace (str.isspace).
std::vector<uint32_t> CodePoints(std::string_view text);
std::string FromCodePoints(const std::vector<uint32_t>& codePoints, size_t begin, size_t end);
void AppendUtf8(std::string& out, uint32_t codePoint);
bool IsPythonSpace(uint32_t codePoint);
size_t CodePointCount(std::string_view text);

}  // namespace wb::chat
