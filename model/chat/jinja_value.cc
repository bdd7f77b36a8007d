// Python's value semantics for the chat-template interpreter: truth, str(), repr(), ==, <,
// and json.dumps, as the Python Language Reference ("Truth Value Testing", "Comparisons") and
// the json module's documentation define them.
#include "model/chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "model/chat/jinja_error.h"

namespace wb::chat {

namespace {

const std::string& EmptyString() {
  static const std::string empty;
  return empty;
}

// Python's repr of a str: single quotes unless the text has a single quote and no double one;
// backslash, the quote, \n \r \t and other control characters escaped, the rest as it is.
std::string StringRepr(const std::string& text) {
  const bool hasSingle = text.find('\'') != std::string::npos;
  const bool hasDouble = text.find('"') != std::string::npos;
  const char quote = hasSingle && !hasDouble ? '"' : '\'';
  std::string out(1, quote);
  for (const uint32_t c : CodePoints(text)) {
    if (c == static_cast<uint32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7f && c < 0xa0)) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      AppendUtf8(out, c);
    }
  }
  out += quote;
  return out;
}

// json.dumps' string: ensure_ascii=False escapes only the quote, the backslash and the
// control characters below U+0020 (json module, "encoder.py": ESCAPE_DCT).
void AppendJsonString(std::string& out, const std::string& text, bool ensureAscii) {
  out += '"';
  if (ensureAscii) {
    // json's ESCAPE_ASCII: everything outside ' '..'~' escaped, as UTF-16 code units.
    for (const uint32_t c : CodePoints(text)) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c >= 0x20 && c <= 0x7e) {
            out += static_cast<char>(c);
          } else if (c >= 0x10000 && c < 0x110000) {
            const uint32_t v = c - 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
          } else {
            out += fmt::format("\\u{:04x}", c >= 0x110000 ? 0xfffd : c);
          }
      }
    }
    out += '"';
    return;
  }
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

std::string JsonKey(const Value& key) {
  switch (key.kind()) {
    case ValueKind::kString: return key.AsString();
    case ValueKind::kInt: return std::to_string(key.AsInt());
    case ValueKind::kBool: return key.AsBool() ? "true" : "false";
    case ValueKind::kNone: return "null";
    case ValueKind::kFloat: return FloatRepr(key.AsDouble());
    default: ThrowTemplateError(fmt::format("keys must be str, int, float, bool or None, not {}", key.TypeName()));
  }
}

void AppendJson(std::string& out, const Value& value, const JsonDumpOptions& options, int depth) {
  const bool indented = options.indent >= 0 || !options.indentText.empty();
  const std::string itemSeparator = !options.itemSeparator.empty() ? options.itemSeparator : indented ? "," : ", ";
  auto newline = [&](int level) {
    if (!indented) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += options.indentText.empty() ? std::string(options.indent, ' ') : options.indentText;
  };
  switch (value.kind()) {
    case ValueKind::kNone: out += "null"; return;
    case ValueKind::kBool: out += value.AsBool() ? "true" : "false"; return;
    case ValueKind::kInt: out += std::to_string(value.AsInt()); return;
    case ValueKind::kFloat: {
      const double d = value.AsDouble();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d > 0 ? "Infinity" : "-Infinity";
      } else {
        out += FloatRepr(d);
      }
      return;
    }
    case ValueKind::kString: AppendJsonString(out, value.AsString(), options.ensureAscii); return;
    case ValueKind::kList: {
      if (value.IsGenerator()) ThrowTemplateError("Object of type generator is not JSON serializable");
      const ValueList& items = value.AsList();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += itemSeparator;
        newline(depth + 1);
        AppendJson(out, items[i], options, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case ValueKind::kDict: {
      DictEntries entries = value.AsDict();
      if (entries.empty()) {
        out += "{}";
        return;
      }
      if (options.sortKeys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return PythonCompare(a.first, b.first) < 0; });
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) out += itemSeparator;
        newline(depth + 1);
        AppendJsonString(out, JsonKey(entries[i].first), options.ensureAscii);
        out += options.keySeparator;
        AppendJson(out, entries[i].second, options, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default:
      ThrowTemplateError(fmt::format("Object of type {} is not JSON serializable", value.TypeName()));
  }
}

}  // namespace

const Value* AttributeObject::Find(std::string_view name) const {
  for (const auto& [key, value] : attributes) {
    if (key == name) return &value;
  }
  return nullptr;
}

void AttributeObject::Set(const std::string& name, Value value) {
  for (auto& [key, existing] : attributes) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  attributes.emplace_back(name, std::move(value));
}

Value Value::Undefined(std::string hint) {
  Value v;
  v.string_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}
Value Value::None() {
  Value v;
  v.kind_ = ValueKind::kNone;
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.kind_ = ValueKind::kBool;
  v.boolean_ = b;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = ValueKind::kInt;
  v.integer_ = i;
  return v;
}
Value Value::Float(double d) {
  Value v;
  v.kind_ = ValueKind::kFloat;
  v.real_ = d;
  return v;
}
Value Value::String(std::string s) {
  Value v;
  v.kind_ = ValueKind::kString;
  v.string_ = std::make_shared<const std::string>(std::move(s));
  return v;
}
Value Value::List(ValueList items, bool isTuple) {
  Value v;
  v.kind_ = ValueKind::kList;
  v.isTuple_ = isTuple;
  v.list_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}
Value Value::Markup(std::string s) {
  Value v = String(std::move(s));
  v.isMarkup_ = true;
  return v;
}
Value Value::Generator(ValueList items) {
  Value v = List(std::move(items));
  v.isGenerator_ = true;
  return v;
}
Value Value::Dict(DictEntries entries) {
  Value v;
  v.kind_ = ValueKind::kDict;
  v.dict_ = std::make_shared<const DictEntries>(std::move(entries));
  return v;
}
Value Value::Object(std::shared_ptr<AttributeObject> object) {
  Value v;
  v.kind_ = ValueKind::kObject;
  v.object_ = std::move(object);
  return v;
}
Value Value::Function(std::string name, NativeFunction call) {
  Value v;
  v.kind_ = ValueKind::kCallable;
  v.callable_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(call)});
  return v;
}

Value Value::FromJson(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null: return None();
    case nlohmann::ordered_json::value_t::boolean: return Bool(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Int(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Int(static_cast<int64_t>(json.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Float(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return String(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (const auto& item : json) items.push_back(FromJson(item));
      return List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      DictEntries entries;
      for (const auto& [key, item] : json.items()) entries.emplace_back(String(key), FromJson(item));
      return Dict(std::move(entries));
    }
    default: return None();
  }
}

const std::string& Value::AsString() const { return string_ ? *string_ : EmptyString(); }

int64_t Value::AsInt() const {
  if (kind_ == ValueKind::kBool) return boolean_ ? 1 : 0;
  if (kind_ == ValueKind::kFloat) return std::fabs(real_) < 9.2e18 ? static_cast<int64_t>(real_) : 0;
  return integer_;
}

double Value::AsDouble() const {
  if (kind_ == ValueKind::kFloat) return real_;
  return static_cast<double>(AsInt());
}

bool Value::Truthy() const {
  switch (kind_) {
    case ValueKind::kUndefined:
    case ValueKind::kNone: return false;
    case ValueKind::kBool: return boolean_;
    case ValueKind::kInt: return integer_ != 0;
    case ValueKind::kFloat: return real_ != 0;
    case ValueKind::kString: return !AsString().empty();
    case ValueKind::kList: return isGenerator_ || !list_->empty();
    case ValueKind::kDict: return !dict_->empty();
    case ValueKind::kObject:
    case ValueKind::kCallable: return true;
  }
  return false;
}

std::string Value::Str() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "";
    case ValueKind::kString: return AsString();
    default: return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "Undefined";
    case ValueKind::kNone: return "None";
    case ValueKind::kBool: return boolean_ ? "True" : "False";
    case ValueKind::kInt: return std::to_string(integer_);
    case ValueKind::kFloat: return FloatRepr(real_);
    case ValueKind::kString: return StringRepr(AsString());
    case ValueKind::kList: {
      if (isGenerator_) return "<generator object>";
      std::string out = isTuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i > 0) out += ", ";
        out += (*list_)[i].Repr();
      }
      if (isTuple_ && list_->size() == 1) out += ",";
      out += isTuple_ ? ")" : "]";
      return out;
    }
    case ValueKind::kDict: {
      std::string out = "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        if (i > 0) out += ", ";
        out += (*dict_)[i].first.Repr() + ": " + (*dict_)[i].second.Repr();
      }
      return out + "}";
    }
    case ValueKind::kObject: {
      // Jinja's Namespace.__repr__: "<Namespace {'a': 1}>".
      std::string out = "<" + object_->typeName + " {";
      for (size_t i = 0; i < object_->attributes.size(); ++i) {
        if (i > 0) out += ", ";
        out += StringRepr(object_->attributes[i].first) + ": " + object_->attributes[i].second.Repr();
      }
      return out + "}>";
    }
    case ValueKind::kCallable: return "<function " + callable_->name + ">";
  }
  return "";
}

std::string Value::TypeName() const {
  switch (kind_) {
    case ValueKind::kUndefined: return "Undefined";
    case ValueKind::kNone: return "NoneType";
    case ValueKind::kBool: return "bool";
    case ValueKind::kInt: return "int";
    case ValueKind::kFloat: return "float";
    case ValueKind::kString: return "str";
    case ValueKind::kList: return isGenerator_ ? "generator" : isTuple_ ? "tuple" : "list";
    case ValueKind::kDict: return "dict";
    case ValueKind::kObject: return object_->typeName;
    case ValueKind::kCallable: return "function";
  }
  return "";
}

const Value* Value::Find(const Value& key) const {
  if (kind_ != ValueKind::kDict) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (PythonEquals(k, key)) return &v;
  }
  return nullptr;
}

const Value* Value::Find(std::string_view key) const {
  if (kind_ != ValueKind::kDict) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (k.IsString() && k.AsString() == key) return &v;
  }
  return nullptr;
}

bool PythonEquals(const Value& a, const Value& b) {
  if (a.IsNumber() && b.IsNumber()) {
    if (a.IsIntegral() && b.IsIntegral()) return a.AsInt() == b.AsInt();
    return a.AsDouble() == b.AsDouble();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::kUndefined:
    case ValueKind::kNone: return true;
    case ValueKind::kString: return a.AsString() == b.AsString();
    case ValueKind::kList: {
      if (a.IsGenerator() || b.IsGenerator()) return false;
      if (a.IsTuple() != b.IsTuple() || a.AsList().size() != b.AsList().size()) return false;
      for (size_t i = 0; i < a.AsList().size(); ++i) {
        if (!PythonEquals(a.AsList()[i], b.AsList()[i])) return false;
      }
      return true;
    }
    case ValueKind::kDict: {
      if (a.AsDict().size() != b.AsDict().size()) return false;
      for (const auto& [key, value] : a.AsDict()) {
        const Value* other = b.Find(key);
        if (other == nullptr || !PythonEquals(value, *other)) return false;
      }
      return true;
    }
    case ValueKind::kObject: return a.AsObject() == b.AsObject();
    case ValueKind::kCallable: return &a.AsCallable() == &b.AsCallable();
    default: return false;
  }
}

int PythonCompare(const Value& a, const Value& b) {
  if (a.IsNumber() && b.IsNumber()) {
    if (a.IsIntegral() && b.IsIntegral()) return a.AsInt() < b.AsInt() ? -1 : a.AsInt() > b.AsInt() ? 1 : 0;
    const double x = a.AsDouble(), y = b.AsDouble();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.IsString() && b.IsString()) {
    // UTF-8's byte order is its code points' order, which is Python's order of str.
    const int c = a.AsString().compare(b.AsString());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.IsList() && b.IsList() && a.IsTuple() == b.IsTuple()) {
    const ValueList& x = a.AsList();
    const ValueList& y = b.AsList();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!PythonEquals(x[i], y[i])) return PythonCompare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  ThrowTemplateError(fmt::format("'<' not supported between instances of '{}' and '{}'", a.TypeName(), b.TypeName()));
}

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // The shortest digits that read back as d, in scientific form: "-1.2345e-07".
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::scientific);
  std::string scientific(buffer, result.ptr);
  const bool negative = scientific[0] == '-';
  if (negative) scientific.erase(0, 1);
  const size_t e = scientific.find('e');
  const int exponent = std::stoi(scientific.substr(e + 1));
  std::string digits = scientific.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  // Python's float_repr_style 'short': fixed notation when -4 <= exponent < 16, else scientific.
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  } else if (exponent < 0) {
    out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    const size_t pointAt = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= pointAt) {
      out = digits + std::string(pointAt - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, pointAt) + "." + digits.substr(pointAt);
    }
  }
  return negative ? "-" + out : out;
}

std::string JsonDump(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  AppendJson(out, value, options, 0);
  return out;
}

std::vector<uint32_t> CodePoints(std::string_view text) {
  // Lenient: a byte that does not start a well-formed sequence stands for itself (U+0080..U+00FF
  // would be wrong, so it keeps its byte value above the Unicode range: 0x110000 + byte), and
  // FromCodePoints writes such bytes back unchanged.
  std::vector<uint32_t> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    size_t length = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    bool wellFormed = length > 0 && i + length <= text.size();
    uint32_t cp = length == 1 ? b0 : length == 2 ? (b0 & 0x1f) : length == 3 ? (b0 & 0x0f) : (b0 & 0x07);
    for (size_t k = 1; wellFormed && k < length; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xc0) != 0x80) wellFormed = false;
      cp = (cp << 6) | (b & 0x3f);
    }
    if (!wellFormed) {
      out.push_back(0x110000 + b0);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += length;
  }
  return out;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp >= 0x110000) {
    out += static_cast<char>(cp - 0x110000);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

std::string FromCodePoints(const std::vector<uint32_t>& codePoints, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) AppendUtf8(out, codePoints[i]);
  return out;
}

bool IsPythonSpace(uint32_t c) {
  // str.isspace(): the characters whose bidirectional type is WS, B or S, or whose category is
  // Zs (Python's Objects/unicodetype_db.h) - the set str.strip() and re's \s remove.
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

size_t CodePointCount(std::string_view text) { return CodePoints(text).size(); }

}  // namespace wb::chat
