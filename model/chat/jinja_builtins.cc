// Jinja's built-ins as chat templates use them: filters and tests (template designer
// documentation, "List of Builtin Filters", "List of Builtin Tests"), the global functions
// (range, dict, namespace) and transformers' additions (raise_exception, strftime_now and its
// own tojson, from its chat templating documentation), and the Python methods of str, dict
// and list that the sandbox lets a template call (Python Library Reference, "String
// Methods", "Mapping Types"). transformers renders in ImmutableSandboxedEnvironment, which
// refuses methods that change a list or dict (append, pop, update, ...): so does this.
// A built-in Jinja has and this file does not is refused by name when it is reached.
#include <algorithm>
#include <cmath>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>

#include <fmt/format.h>

#include "model/chat/jinja_error.h"
#include "model/chat/jinja_render.h"

namespace wb::chat {

namespace {

// ---- text -----------------------------------------------------------------------------------

// Simple (one-to-one) case mapping for the scripts chat templates meet: ASCII, Latin-1,
// Latin Extended-A, Greek, Cyrillic and the full-width Latin letters. (Python maps every
// script; a role name or a flag in another script would be folded differently.)
uint32_t ToUpper(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 0x20;
  if (c == 0xff) return 0x178;
  if (c == 0xb5) return 0x39c;
  if (c >= 0x100 && c <= 0x17f) {
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c % 2 == 0) ? c - 1 : c;
    if (c == 0x131) return 'I';
    if (c == 0x17f) return 'S';
    if (c == 0x138 || c == 0x149 || c == 0x130 || c == 0x178) return c;
    return (c % 2 == 1) ? c - 1 : c;
  }
  if (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) return c - 0x20;
  if (c == 0x3c2) return 0x3a3;
  if (c >= 0x3ac && c <= 0x3af) return c == 0x3ac ? 0x386 : c - 0x25;
  if (c >= 0x430 && c <= 0x44f) return c - 0x20;
  if (c >= 0x450 && c <= 0x45f) return c - 0x50;
  if (c >= 0xff41 && c <= 0xff5a) return c - 0x20;
  return c;
}

uint32_t ToLower(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xc0 && c <= 0xde && c != 0xd7) return c + 0x20;
  if (c == 0x178) return 0xff;
  if (c >= 0x100 && c <= 0x17f) {
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c % 2 == 1) ? c + 1 : c;
    if (c == 0x130) return 'i';
    if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17f) return c;
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 0x20;
  if (c == 0x386) return 0x3ac;
  if (c >= 0x388 && c <= 0x38a) return c + 0x25;
  if (c >= 0x410 && c <= 0x42f) return c + 0x20;
  if (c >= 0x400 && c <= 0x40f) return c + 0x50;
  if (c >= 0xff21 && c <= 0xff3a) return c + 0x20;
  return c;
}

bool IsCased(uint32_t c) { return ToUpper(c) != c || ToLower(c) != c || c == 0xdf; }
bool IsLowerCase(uint32_t c) { return ToUpper(c) != c || c == 0xdf; }
bool IsUpperCase(uint32_t c) { return ToLower(c) != c; }

void AppendUpper(std::string& out, uint32_t c) {
  if (c == 0xdf) {  // 'ß'.upper() == 'SS'
    out += "SS";
    return;
  }
  AppendUtf8(out, ToUpper(c));
}

std::string Upper(const std::string& text) {
  std::string out;
  for (const uint32_t c : CodePoints(text)) AppendUpper(out, c);
  return out;
}

std::string Lower(const std::string& text) {
  std::string out;
  for (const uint32_t c : CodePoints(text)) AppendUtf8(out, ToLower(c));
  return out;
}

// str.title(): a cased character after an uncased one is upper-cased, after a cased one lowered.
std::string PythonTitle(const std::string& text) {
  std::string out;
  bool previousCased = false;
  for (const uint32_t c : CodePoints(text)) {
    if (previousCased) {
      AppendUtf8(out, ToLower(c));
    } else {
      AppendUpper(out, c);
    }
    previousCased = IsCased(c);
  }
  return out;
}

// str.capitalize(): the first character upper-cased, the rest lowered.
std::string Capitalize(const std::string& text) {
  const std::vector<uint32_t> cp = CodePoints(text);
  std::string out;
  for (size_t i = 0; i < cp.size(); ++i) {
    if (i == 0) {
      AppendUpper(out, cp[i]);
    } else {
      AppendUtf8(out, ToLower(cp[i]));
    }
  }
  return out;
}

// Jinja's title filter (jinja2/filters.py do_title): words begin after '-', whitespace or an
// opening bracket; each word's first character upper, the rest lower.
std::string JinjaTitle(const std::string& text) {
  std::string out;
  bool atWordStart = true;
  for (const uint32_t c : CodePoints(text)) {
    const bool separator = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || IsPythonSpace(c);
    if (separator) {
      AppendUtf8(out, c);
      atWordStart = true;
    } else if (atWordStart) {
      AppendUpper(out, c);
      atWordStart = false;
    } else {
      AppendUtf8(out, ToLower(c));
    }
  }
  return out;
}

// str.strip/lstrip/rstrip: `chars` given, those code points; none, Python's whitespace.
std::string Strip(const std::string& text, const Value* chars, bool left, bool right) {
  const std::vector<uint32_t> cp = CodePoints(text);
  std::vector<uint32_t> set;
  const bool whitespace = chars == nullptr || chars->IsNone();
  if (!whitespace) {
    if (!chars->IsString()) ThrowTemplateError(fmt::format("strip arg must be None or str, not {}", chars->TypeName()));
    set = CodePoints(chars->AsString());
  }
  auto strip = [&](uint32_t c) { return whitespace ? IsPythonSpace(c) : std::find(set.begin(), set.end(), c) != set.end(); };
  size_t begin = 0, end = cp.size();
  if (left) {
    while (begin < end && strip(cp[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip(cp[end - 1])) --end;
  }
  return FromCodePoints(cp, begin, end);
}

// str.split / str.rsplit.
ValueList Split(const std::string& text, const Value* separator, int64_t maxSplit, bool fromRight) {
  ValueList parts;
  if (separator == nullptr || separator->IsNone()) {
    // Runs of whitespace separate; none at the ends.
    const std::vector<uint32_t> cp = CodePoints(text);
    std::vector<std::pair<size_t, size_t>> words;
    for (size_t i = 0; i < cp.size();) {
      while (i < cp.size() && IsPythonSpace(cp[i])) ++i;
      if (i == cp.size()) break;
      size_t j = i;
      while (j < cp.size() && !IsPythonSpace(cp[j])) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxSplit >= 0 && static_cast<int64_t>(words.size()) > maxSplit + 1) {
      if (fromRight) {
        const size_t keep = words.size() - static_cast<size_t>(maxSplit);
        size_t firstBegin = words[0].first;
        std::vector<std::pair<size_t, size_t>> merged = {{firstBegin, words[keep - 1].second}};
        merged.insert(merged.end(), words.begin() + static_cast<long>(keep), words.end());
        words = merged;
      } else {
        const size_t last = static_cast<size_t>(maxSplit);
        size_t end = cp.size();
        while (end > words[last].first && IsPythonSpace(cp[end - 1])) --end;
        words.resize(last + 1);
        words[last].second = end;
      }
    }
    for (const auto& [b, e] : words) parts.push_back(Value::String(FromCodePoints(cp, b, e)));
    return parts;
  }
  if (!separator->IsString()) ThrowTemplateError(fmt::format("must be str or None, not {}", separator->TypeName()));
  const std::string& sep = separator->AsString();
  if (sep.empty()) ThrowTemplateError("empty separator");
  std::vector<std::string> pieces;
  if (!fromRight) {
    size_t start = 0;
    int64_t splits = 0;
    while (maxSplit < 0 || splits < maxSplit) {
      const size_t at = text.find(sep, start);
      if (at == std::string::npos) break;
      pieces.push_back(text.substr(start, at - start));
      start = at + sep.size();
      ++splits;
    }
    pieces.push_back(text.substr(start));
  } else {
    size_t end = text.size();
    int64_t splits = 0;
    while (maxSplit < 0 || splits < maxSplit) {
      if (end < sep.size()) break;
      const size_t at = text.rfind(sep, end - sep.size());
      if (at == std::string::npos) break;
      pieces.insert(pieces.begin(), text.substr(at + sep.size(), end - at - sep.size()));
      end = at;
      ++splits;
    }
    pieces.insert(pieces.begin(), text.substr(0, end));
  }
  for (auto& piece : pieces) parts.push_back(Value::String(std::move(piece)));
  return parts;
}

std::string Replace(const std::string& text, const std::string& old, const std::string& replacement, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement before every character and at the end.
    const std::vector<uint32_t> cp = CodePoints(text);
    int64_t done = 0;
    for (size_t i = 0; i <= cp.size(); ++i) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      if (i < cp.size()) AppendUtf8(out, cp[i]);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = text.find(old, start);
    if (at == std::string::npos) break;
    out += text.substr(start, at - start);
    out += replacement;
    start = at + old.size();
    ++done;
  }
  return out + text.substr(start);
}

// Python's str.splitlines(): \n, \r, \r\n, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029 end lines.
std::vector<std::string> SplitLines(const std::string& text) {
  const std::vector<uint32_t> cp = CodePoints(text);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < cp.size(); ++i) {
    const uint32_t c = cp[i];
    const bool breaks = c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e) || c == 0x85 ||
                        c == 0x2028 || c == 0x2029;
    if (!breaks) continue;
    lines.push_back(FromCodePoints(cp, start, i));
    if (c == '\r' && i + 1 < cp.size() && cp[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < cp.size()) lines.push_back(FromCodePoints(cp, start, cp.size()));
  return lines;
}

std::string HtmlEscape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Text that stays Markup when its source was (markupsafe's Markup methods return Markup).
Value LikeSubject(const Value& subject, std::string text) {
  return subject.IsMarkup() ? Value::Markup(std::move(text)) : Value::String(std::move(text));
}

// A value joined to Markup: escaped unless it is Markup itself (markupsafe's Markup.escape).
std::string EscapedUnlessMarkup(const Value& value) { return value.IsMarkup() ? value.Str() : HtmlEscape(value.Str()); }

// ---- arguments ------------------------------------------------------------------------------

const std::string& StringArgument(const Value* value, std::string_view what) {
  if (value == nullptr) ThrowTemplateError(fmt::format("{} is missing", what));
  if (value->IsUndefined()) ThrowUndefined(*value);
  if (!value->IsString()) ThrowTemplateError(fmt::format("{} must be a str, not {}", what, value->TypeName()));
  return value->AsString();
}

int64_t IntArgument(const Value* value, int64_t fallback, std::string_view what) {
  if (value == nullptr || value->IsNone()) return fallback;
  if (value->IsUndefined()) ThrowUndefined(*value);
  if (!value->IsIntegral()) ThrowTemplateError(fmt::format("{} must be an integer, not {}", what, value->TypeName()));
  return value->AsInt();
}

bool BoolArgument(const Value* value, bool fallback) { return value == nullptr ? fallback : value->Truthy(); }

int64_t Length(const Value& value) {
  switch (value.kind()) {
    case ValueKind::kUndefined: return 0;
    case ValueKind::kString: return static_cast<int64_t>(CodePointCount(value.AsString()));
    case ValueKind::kList:
      if (value.IsGenerator()) ThrowTemplateError("object of type 'generator' has no len()");
      return static_cast<int64_t>(value.AsList().size());
    case ValueKind::kDict: return static_cast<int64_t>(value.AsDict().size());
    default: ThrowTemplateError(fmt::format("object of type '{}' has no len()", value.TypeName()));
  }
}

// Python's index adjustment for a sequence of `size`: negative from the end; nullopt outside.
std::optional<size_t> Index(int64_t index, size_t size) {
  if (index < 0) index += static_cast<int64_t>(size);
  if (index < 0 || index >= static_cast<int64_t>(size)) return std::nullopt;
  return static_cast<size_t>(index);
}

// ---- printf-style and str.format ------------------------------------------------------------

// One printf conversion ("%-5s", "%.2f") of one value, by the C library's snprintf, whose
// conversions these are.
template <typename T>
std::string CFormat(const std::string& conversion, T value) {
  const int size = std::snprintf(nullptr, 0, conversion.c_str(), value);
  std::string out(static_cast<size_t>(std::max(size, 0)) + 1, '\0');
  std::snprintf(out.data(), out.size(), conversion.c_str(), value);
  out.resize(static_cast<size_t>(std::max(size, 0)));
  return out;
}

// `text % arguments` (Python's printf-style formatting) for %s, %r, %d, %i, %f, %% with a
// width and precision; other conversions refused.
std::string PercentFormat(const std::string& text, const Value& arguments) {
  ValueList values;
  if (arguments.IsTuple()) {
    values = arguments.AsList();
  } else {
    values.push_back(arguments);
  }
  if (arguments.IsDict() && text.find("%(") != std::string::npos) ThrowUnsupported("%(name)s formatting");
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (++i >= text.size()) ThrowTemplateError("incomplete format");
    if (text[i] == '%') {
      out += '%';
      continue;
    }
    std::string spec;
    while (i < text.size() && std::string_view("-+ 0#.0123456789").find(text[i]) != std::string_view::npos) spec += text[i++];
    if (i >= text.size()) ThrowTemplateError("incomplete format");
    const char conversion = text[i];
    if (spec.find_first_of("123456789") != std::string::npos && std::stoi("0" + spec.substr(spec.find_first_of("123456789"), 6)) > 4096) {
      ThrowUnsupported("a printf-style width or precision above 4096");
    }
    if (next >= values.size()) ThrowTemplateError("not enough arguments for format string");
    const Value& value = values[next++];
    if (conversion == 's' || conversion == 'r') {
      const std::string s = conversion == 's' ? value.Str() : value.Repr();
      out += spec.empty() ? s : CFormat("%" + spec + "s", s.c_str());
    } else if (conversion == 'd' || conversion == 'i') {
      if (!value.IsNumber()) ThrowTemplateError(fmt::format("%d format: a real number is required, not {}", value.TypeName()));
      const double real = value.AsDouble();
      if (value.kind() == ValueKind::kFloat && !(std::fabs(real) < 9.2e18)) ThrowUnsupported("%d of a float beyond 64-bit integers");
      out += CFormat("%" + spec + "lld", static_cast<long long>(value.kind() == ValueKind::kFloat ? std::trunc(real) : value.AsInt()));
    } else if (conversion == 'f') {
      if (!value.IsNumber()) ThrowTemplateError(fmt::format("must be real number, not {}", value.TypeName()));
      out += CFormat("%" + spec + "f", value.AsDouble());
    } else {
      ThrowUnsupported(fmt::format("the %{} conversion of printf-style formatting", conversion));
    }
  }
  if (next < values.size() && !arguments.IsDict()) ThrowTemplateError("not all arguments converted during string formatting");
  return out;
}

// str.format with {}, {0} and {name} fields and {{ }} escapes; format specs and conversions
// are refused.
std::string BraceFormat(const std::string& text, const CallArguments& arguments) {
  std::string out;
  size_t automatic = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      ThrowTemplateError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = text.find('}', i);
    if (close == std::string::npos) ThrowTemplateError("Single '{' encountered in format string");
    const std::string field = text.substr(i + 1, close - i - 1);
    if (field.find_first_of(":![.") != std::string::npos) ThrowUnsupported(fmt::format("the str.format field '{{{}}}'", field));
    const Value* value = nullptr;
    if (field.empty()) {
      if (automatic < arguments.positional.size()) value = &arguments.positional[automatic];
      ++automatic;
    } else if (std::all_of(field.begin(), field.end(), [](char d) { return std::isdigit(static_cast<unsigned char>(d)); })) {
      size_t index = 0;
      const auto parsed = std::from_chars(field.data(), field.data() + field.size(), index);
      if (parsed.ec == std::errc() && index < arguments.positional.size()) value = &arguments.positional[index];
    } else {
      for (const auto& [name, v] : arguments.keywords) {
        if (name == field) value = &v;
      }
      if (value == nullptr) ThrowTemplateError(fmt::format("'{}'", field));
    }
    if (value == nullptr) ThrowTemplateError("Replacement index out of range for positional args tuple");
    out += value->Str();
    i = close;
  }
  return out;
}

// ---- methods --------------------------------------------------------------------------------

Value StringMethod(const Value& subject, const std::string& name, CallArguments& a) {
  const std::string& text = subject.AsString();
  auto done = [&](Value v) {
    a.Finish("str." + name);
    return v;
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = a.Take(0, "chars");
    return done(LikeSubject(subject, Strip(text, chars, name != "rstrip", name != "lstrip")));
  }
  if (name == "split" || name == "rsplit") {
    const Value* sep = a.Take(0, "sep");
    const int64_t maxSplit = IntArgument(a.Take(1, "maxsplit"), -1, "maxsplit");
    return done(Value::List(Split(text, sep, maxSplit, name == "rsplit")));
  }
  if (name == "splitlines") {
    ValueList lines;
    for (auto& line : SplitLines(text)) lines.push_back(Value::String(std::move(line)));
    return done(Value::List(std::move(lines)));
  }
  if (name == "replace") {
    const Value* oldValue = a.Take(0, "old");
    const Value* newValue = a.Take(1, "new");
    std::string old = StringArgument(oldValue, "replace's old");
    std::string replacement = StringArgument(newValue, "replace's new");
    if (subject.IsMarkup()) {  // Markup.replace escapes its arguments
      old = EscapedUnlessMarkup(*oldValue);
      replacement = EscapedUnlessMarkup(*newValue);
    }
    const int64_t count = IntArgument(a.Take(2, "count"), -1, "count");
    return done(LikeSubject(subject, Replace(text, old, replacement, count)));
  }
  if (name == "upper") return done(LikeSubject(subject, Upper(text)));
  if (name == "lower") return done(LikeSubject(subject, Lower(text)));
  if (name == "title") return done(LikeSubject(subject, PythonTitle(text)));
  if (name == "capitalize") return done(LikeSubject(subject, Capitalize(text)));
  if (name == "startswith" || name == "endswith") {
    const Value* affix = a.Take(0, "prefix");
    if (a.positional.size() > 1) ThrowUnsupported("the start and end arguments of str." + name);
    ValueList choices;
    if (affix != nullptr && affix->IsTuple()) {
      choices = affix->AsList();
    } else if (affix != nullptr) {
      choices.push_back(*affix);
    }
    if (choices.empty() && (affix == nullptr || !affix->IsTuple())) ThrowTemplateError(name + "() takes at least 1 argument (0 given)");
    bool matched = false;
    for (const Value& choice : choices) {
      if (!choice.IsString()) {
        ThrowTemplateError(fmt::format("{} first arg must be str or a tuple of str, not {}", name, choice.TypeName()));
      }
      const std::string& s = choice.AsString();
      matched = matched || (name == "startswith" ? text.starts_with(s) : text.ends_with(s));
    }
    return done(Value::Bool(matched));
  }
  if (name == "find" || name == "rfind" || name == "count" || name == "index" || name == "rindex") {
    const std::string& sub = StringArgument(a.Take(0, "sub"), name + "'s argument");
    if (a.positional.size() > 1) ThrowUnsupported("the start and end arguments of str." + name);
    if (name == "count") {
      if (sub.empty()) return done(Value::Int(static_cast<int64_t>(CodePointCount(text)) + 1));
      int64_t count = 0;
      for (size_t at = text.find(sub); at != std::string::npos; at = text.find(sub, at + sub.size())) ++count;
      return done(Value::Int(count));
    }
    const size_t at = name == "find" || name == "index" ? text.find(sub) : text.rfind(sub);
    if (at == std::string::npos) {
      if (name == "index" || name == "rindex") ThrowTemplateError("substring not found");
      return done(Value::Int(-1));
    }
    return done(Value::Int(static_cast<int64_t>(CodePointCount(std::string_view(text).substr(0, at)))));
  }
  if (name == "join") {
    const Value* items = a.Take(0, "iterable");
    if (items == nullptr) ThrowTemplateError("join() takes exactly one argument (0 given)");
    std::string out;
    size_t i = 0;
    for (const Value& item : Iterate(*items)) {
      if (!item.IsString()) {
        ThrowTemplateError(fmt::format("sequence item {}: expected str instance, {} found", i, item.TypeName()));
      }
      if (i++ > 0) out += text;
      out += item.AsString();
    }
    return done(Value::String(std::move(out)));
  }
  if (name == "format") {
    if (!subject.IsMarkup()) return Value::String(BraceFormat(text, a));
    CallArguments escaped = a;  // Markup.format escapes its arguments
    for (Value& v : escaped.positional) v = Value::Markup(EscapedUnlessMarkup(v));
    for (auto& [k, v] : escaped.keywords) v = Value::Markup(EscapedUnlessMarkup(v));
    return Value::Markup(BraceFormat(text, escaped));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "islower" ||
      name == "isupper") {
    const std::vector<uint32_t> cp = CodePoints(text);
    bool result = !cp.empty();
    bool anyCased = false;
    for (const uint32_t c : cp) {
      const bool digit = c >= '0' && c <= '9';
      const bool alpha = IsCased(c) || (c >= 0x80 && !IsPythonSpace(c) && c < 0x110000 && c > 0xbf);
      if (name == "isdigit") result = result && digit;
      if (name == "isalpha") result = result && alpha;
      if (name == "isalnum") result = result && (alpha || digit);
      if (name == "isspace") result = result && IsPythonSpace(c);
      if (name == "islower" && IsUpperCase(c)) result = false;
      if (name == "isupper" && IsLowerCase(c)) result = false;
      anyCased = anyCased || IsCased(c);
    }
    if (name == "islower" || name == "isupper") result = result && anyCased;
    if (name != "isspace" && name != "isdigit" && name != "islower" && name != "isupper") {
      for (const uint32_t c : cp) {
        if (c >= 0x80) ThrowUnsupported("str." + name + " on text beyond ASCII");
      }
    }
    return done(Value::Bool(result));
  }
  ThrowUnsupported(fmt::format("the str method '{}'", name));
}

Value DictMethod(const Value& dict, const std::string& name, CallArguments& a) {
  auto done = [&](Value v) {
    a.Finish("dict." + name);
    return v;
  };
  if (name == "get") {
    const Value* key = a.Take(0, "key");
    if (key == nullptr) ThrowTemplateError("get expected at least 1 argument, got 0");
    const Value* fallback = a.Take(1, "default");
    const Value* found = dict.Find(*key);
    return done(found != nullptr ? *found : fallback != nullptr ? *fallback : Value::None());
  }
  if (name == "items") {
    ValueList items;
    for (const auto& [k, v] : dict.AsDict()) items.push_back(Value::List({k, v}, /*isTuple=*/true));
    return done(Value::List(std::move(items)));
  }
  if (name == "keys" || name == "values") {
    ValueList items;
    for (const auto& [k, v] : dict.AsDict()) items.push_back(name == "keys" ? k : v);
    return done(Value::List(std::move(items)));
  }
  if (name == "copy") return done(dict);
  ThrowUnsupported(fmt::format("the dict method '{}'", name));
}

Value ListMethod(const Value& list, const std::string& name, CallArguments& a) {
  auto done = [&](Value v) {
    a.Finish("list." + name);
    return v;
  };
  if (name == "index" || name == "count") {
    const Value* needle = a.Take(0, "value");
    if (needle == nullptr) ThrowTemplateError(name + "() takes exactly one argument (0 given)");
    int64_t count = 0;
    for (size_t i = 0; i < list.AsList().size(); ++i) {
      if (!PythonEquals(list.AsList()[i], *needle)) continue;
      if (name == "index") return done(Value::Int(static_cast<int64_t>(i)));
      ++count;
    }
    if (name == "index") ThrowTemplateError(fmt::format("{} is not in list", needle->Repr()));
    return done(Value::Int(count));
  }
  if (name == "copy") return done(list);
  ThrowUnsupported(fmt::format("the list method '{}'", name));
}

bool IsKnownMethod(const Value& object, const std::string& name) {
  static const std::vector<std::string> kString = {
      "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "replace", "upper", "lower", "title",
      "capitalize", "startswith", "endswith", "find", "rfind", "count", "index", "rindex", "join", "format",
      "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "casefold", "center", "encode",
      "expandtabs", "format_map", "isascii", "isdecimal", "isidentifier", "isnumeric", "isprintable", "istitle",
      "ljust", "maketrans", "partition", "removeprefix", "removesuffix", "rjust", "rpartition", "swapcase",
      "translate", "zfill"};
  static const std::vector<std::string> kDict = {"get", "items", "keys", "values", "copy", "fromkeys"};
  static const std::vector<std::string> kList = {"index", "count", "copy"};
  const std::vector<std::string>* names = object.IsString() ? &kString : object.IsDict() ? &kDict
                                          : object.IsList() && !object.IsGenerator() ? &kList
                                                                                      : nullptr;
  return names != nullptr && std::find(names->begin(), names->end(), name) != names->end();
}

// Methods that change a list or dict in place: ImmutableSandboxedEnvironment's
// modifies_known_mutable refuses them (the attribute is an undefined value that fails when used).
bool IsMutatingMethod(const Value& object, const std::string& name) {
  static const std::vector<std::string> kList = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
  static const std::vector<std::string> kDict = {"clear", "pop", "popitem", "setdefault", "update"};
  if (object.IsList() && !object.IsTuple() && !object.IsGenerator()) return std::find(kList.begin(), kList.end(), name) != kList.end();
  if (object.IsDict()) return std::find(kDict.begin(), kDict.end(), name) != kDict.end();
  return false;
}

Value BoundMethod(const Value& object, const std::string& name) {
  const std::string typeName = object.TypeName();
  return Value::Function(typeName + "." + name, [object, name](Renderer&, CallArguments& arguments) {
    if (object.IsString()) return StringMethod(object, name, arguments);
    if (object.IsDict()) return DictMethod(object, name, arguments);
    return ListMethod(object, name, arguments);
  });
}

std::string ObjectDescription(const Value& object) {
  // Jinja names an object by its type in messages: "'dict object' has no attribute 'x'".
  if (object.IsNone()) return "None";
  return object.TypeName() + " object";
}

// ---- sorting and attribute paths -------------------------------------------------------------

// An item's attribute by a dotted path ("a.b", "0"): Jinja's make_attrgetter, which indexes
// with each part (a number as an int).
Value AttributePath(const Value& item, const std::string& path) {
  Value current = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    int64_t index = 0;
    const bool isIndex = numeric && std::from_chars(part.data(), part.data() + part.size(), index).ec == std::errc();
    current = GetItem(current, isIndex ? Value::Int(index) : Value::String(part));
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

// Jinja's ignore_case: strings compared lower-cased unless case_sensitive.
Value SortKey(const Value& value, bool caseSensitive) {
  if (!caseSensitive && value.IsString()) return Value::String(Lower(value.AsString()));
  return value;
}

void SortValues(ValueList& items, const std::function<Value(const Value&)>& key, bool reverse) {
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? PythonCompare(key(b), key(a)) < 0 : PythonCompare(key(a), key(b)) < 0;
  });
}

// ---- filters ---------------------------------------------------------------------------------

Value TrimFilter(const Value& subject, CallArguments& a) {
  const Value* chars = a.Take(0, "chars");
  a.Finish("trim");
  return LikeSubject(subject, Strip(subject.Str(), chars, true, true));
}

Value DefaultFilter(const Value& subject, CallArguments& a) {
  const Value* fallback = a.Take(0, "default_value");
  const bool boolean = BoolArgument(a.Take(1, "boolean"), false);
  a.Finish("default");
  if (subject.IsUndefined() || (boolean && !subject.Truthy())) return fallback != nullptr ? *fallback : Value::String("");
  return subject;
}

Value JoinFilter(const Value& subject, CallArguments& a) {
  const Value* separator = a.Take(0, "d");
  const Value* attribute = a.Take(1, "attribute");
  a.Finish("join");
  const std::string glue = separator != nullptr ? separator->Str() : "";
  std::string out;
  bool first = true;
  for (const Value& item : Iterate(subject)) {
    if (!first) out += glue;
    first = false;
    out += (attribute != nullptr && !attribute->IsNone() ? AttributePath(item, attribute->Str()) : item).Str();
  }
  return Value::String(std::move(out));
}

Value IndentFilter(const Value& subject, CallArguments& a) {
  const Value* width = a.Take(0, "width");
  const bool first = BoolArgument(a.Take(1, "first"), false);
  const bool blank = BoolArgument(a.Take(2, "blank"), false);
  a.Finish("indent");
  const std::string indentation = width == nullptr ? "    " : width->IsString() ? width->AsString()
                                                                               : std::string(static_cast<size_t>(std::max<int64_t>(0, IntArgument(width, 4, "width"))), ' ');
  // jinja2/filters.py do_indent: a newline is appended before splitting into lines, then
  // every line but the first (and, unless blank, but the empty ones) is indented.
  const std::vector<std::string> lines = SplitLines(subject.Str() + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += indentation;
    }
    out += lines[i];
  }
  if (first) out = indentation + out;
  return Value::String(std::move(out));
}

Value IntFilter(const Value& subject, CallArguments& a) {
  const Value* fallback = a.Take(0, "default");
  const int64_t base = IntArgument(a.Take(1, "base"), 10, "base");
  a.Finish("int");
  const Value otherwise = fallback != nullptr ? *fallback : Value::Int(0);
  if (subject.IsIntegral()) return Value::Int(subject.AsInt());
  if (subject.kind() == ValueKind::kFloat) {
    const double d = subject.AsDouble();
    return std::isfinite(d) && std::fabs(d) < 9.2e18 ? Value::Int(static_cast<int64_t>(std::trunc(d))) : otherwise;
  }
  if (subject.IsString()) {
    std::string text = Strip(subject.AsString(), nullptr, true, true);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    try {
      size_t used = 0;
      const long long parsed = std::stoll(text, &used, static_cast<int>(base));
      if (used == text.size()) return Value::Int(parsed);
    } catch (const std::exception&) {
    }
    try {
      size_t used = 0;
      const double parsed = std::stod(text, &used);
      if (used == text.size() && std::isfinite(parsed) && std::fabs(parsed) < 9.2e18) {
        return Value::Int(static_cast<int64_t>(std::trunc(parsed)));
      }
    } catch (const std::exception&) {
    }
  }
  return otherwise;
}

Value FloatFilter(const Value& subject, CallArguments& a) {
  const Value* fallback = a.Take(0, "default");
  a.Finish("float");
  if (subject.IsNumber()) return Value::Float(subject.AsDouble());
  if (subject.IsString()) {
    std::string text = Strip(subject.AsString(), nullptr, true, true);
    try {
      size_t used = 0;
      const double parsed = std::stod(text, &used);
      if (used == text.size()) return Value::Float(parsed);
    } catch (const std::exception&) {
    }
  }
  return fallback != nullptr ? *fallback : Value::Float(0.0);
}

Value RoundFilter(const Value& subject, CallArguments& a) {
  const int64_t precision = IntArgument(a.Take(0, "precision"), 0, "precision");
  const Value* methodValue = a.Take(1, "method");
  const std::string method = methodValue != nullptr ? methodValue->Str() : "common";
  a.Finish("round");
  if (!subject.IsNumber()) ThrowTemplateError(fmt::format("type {} doesn't define __round__ method", subject.TypeName()));
  if (method != "common" && method != "floor" && method != "ceil") {
    ThrowTemplateError("method must be common, ceil or floor");
  }
  if (method == "common") {
    // Python's round(): half to even on the exact binary value; an int stays an int.
    if (subject.IsIntegral()) return Value::Int(subject.AsInt());
    const double d = subject.AsDouble();
    if (!std::isfinite(d) || precision > 30) return Value::Float(d);
    if (precision < 0) {
      const double scale = std::pow(10.0, static_cast<double>(-precision));
      return Value::Float(std::nearbyint(d / scale) * scale);
    }
    return Value::Float(std::strtod(fmt::format("{:.{}f}", d, precision).c_str(), nullptr));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = subject.AsDouble() * scale;
  return Value::Float((method == "floor" ? std::floor(scaled) : std::ceil(scaled)) / scale);
}

Value ToJsonFilter(const Value& subject, CallArguments& a) {
  // transformers' tojson: json.dumps(x, ensure_ascii=False, indent=indent,
  // separators=separators, sort_keys=sort_keys) (not Jinja's, which escapes HTML characters).
  const Value* ensureAscii = a.Take(0, "ensure_ascii");
  const Value* indent = a.Take(1, "indent");
  const Value* separators = a.Take(2, "separators");
  const Value* sortKeys = a.Take(3, "sort_keys");
  a.Finish("tojson");
  JsonDumpOptions options;
  options.ensureAscii = ensureAscii != nullptr && ensureAscii->Truthy();
  if (indent != nullptr && !indent->IsNone()) {
    if (indent->IsString()) {
      options.indentText = indent->AsString();
      if (options.indentText.empty()) options.indent = 0;
    } else {
      options.indent = static_cast<int>(std::max<int64_t>(0, IntArgument(indent, 0, "indent")));
    }
  }
  if (separators != nullptr && !separators->IsNone()) {
    if (!separators->IsList() || separators->AsList().size() != 2 || !separators->AsList()[0].IsString() ||
        !separators->AsList()[1].IsString()) {
      ThrowTemplateError("tojson's separators must be two strings");
    }
    options.itemSeparator = separators->AsList()[0].AsString();
    options.keySeparator = separators->AsList()[1].AsString();
    if (options.itemSeparator.empty()) ThrowUnsupported("tojson with an empty item separator");
  }
  options.sortKeys = sortKeys != nullptr && sortKeys->Truthy();
  return Value::String(JsonDump(subject, options));
}

// map(filter, args...) or map(attribute='path', default=value).
Value MapFilter(Renderer& renderer, const Value& subject, CallArguments& a) {
  ValueList out;
  if (!subject.Truthy()) return Value::Generator({});  // jinja2/filters.py do_map: `if value:`
  const ValueList items = Iterate(subject);
  if (a.positional.empty()) {
    const Value* attribute = a.Take(0, "attribute");
    const Value* fallback = a.Take(1, "default");
    a.Finish("map");
    if (attribute == nullptr) return Value::Generator(items);
    for (const Value& item : items) {
      Value value = AttributePath(item, attribute->Str());
      if (value.IsUndefined() && fallback != nullptr) value = *fallback;
      out.push_back(std::move(value));
    }
    return Value::Generator(std::move(out));
  }
  const std::string filter = a.positional[0].Str();
  if (!IsJinjaFilter(filter)) ThrowTemplateError(fmt::format("No filter named '{}'.", filter));
  for (const Value& item : items) {
    CallArguments rest;
    rest.positional.assign(a.positional.begin() + 1, a.positional.end());
    rest.keywords = a.keywords;
    out.push_back(renderer.ApplyFilter(filter, item, rest));
  }
  return Value::Generator(std::move(out));
}

// select/reject(test, args...) and selectattr/rejectattr(attribute, test, args...).
Value SelectFilter(Renderer& renderer, const Value& subject, CallArguments& a, bool byAttribute, bool keep) {
  if (!subject.Truthy()) return Value::Generator({});  // jinja2/filters.py select_or_reject: `if value:`
  size_t next = 0;
  std::string attribute;
  if (byAttribute) {
    if (a.positional.empty()) ThrowTemplateError("Missing parameter for attribute name");
    attribute = a.positional[next++].Str();
  }
  std::optional<std::string> test;
  if (next < a.positional.size()) test = a.positional[next++].Str();
  if (test && !IsJinjaTest(*test)) ThrowTemplateError(fmt::format("No test named '{}'.", *test));
  ValueList out;
  for (const Value& item : Iterate(subject)) {
    const Value probe = byAttribute ? AttributePath(item, attribute) : item;
    bool passed = false;
    if (test) {
      CallArguments rest;
      rest.positional.assign(a.positional.begin() + static_cast<long>(next), a.positional.end());
      rest.keywords = a.keywords;
      passed = renderer.ApplyTest(*test, probe, rest);
    } else {
      passed = probe.Truthy();
    }
    if (passed == keep) out.push_back(item);
  }
  return Value::Generator(std::move(out));
}

Value DictsortFilter(const Value& subject, CallArguments& a) {
  const bool caseSensitive = BoolArgument(a.Take(0, "case_sensitive"), false);
  const Value* by = a.Take(1, "by");
  const bool reverse = BoolArgument(a.Take(2, "reverse"), false);
  a.Finish("dictsort");
  if (!subject.IsDict()) ThrowTemplateError("dictsort: the value is not a mapping");
  const std::string byWhat = by != nullptr ? by->Str() : "key";
  if (byWhat != "key" && byWhat != "value") ThrowTemplateError("You can only sort by either \"key\" or \"value\"");
  ValueList items;
  for (const auto& [k, v] : subject.AsDict()) items.push_back(Value::List({k, v}, /*isTuple=*/true));
  const size_t position = byWhat == "key" ? 0 : 1;
  SortValues(items, [&](const Value& pair) { return SortKey(pair.AsList()[position], caseSensitive); }, reverse);
  return Value::List(std::move(items));
}

Value SortFilter(const Value& subject, CallArguments& a) {
  const bool reverse = BoolArgument(a.Take(0, "reverse"), false);
  const bool caseSensitive = BoolArgument(a.Take(1, "case_sensitive"), false);
  const Value* attribute = a.Take(2, "attribute");
  a.Finish("sort");
  ValueList items = Iterate(subject);
  SortValues(items, [&](const Value& item) {
    return SortKey(attribute != nullptr && !attribute->IsNone() ? AttributePath(item, attribute->Str()) : item, caseSensitive);
  }, reverse);
  return Value::List(std::move(items));
}

Value UniqueFilter(const Value& subject, CallArguments& a) {
  const bool caseSensitive = BoolArgument(a.Take(0, "case_sensitive"), false);
  const Value* attribute = a.Take(1, "attribute");
  a.Finish("unique");
  ValueList out;
  ValueList seen;
  for (const Value& item : Iterate(subject)) {
    const Value key = SortKey(attribute != nullptr && !attribute->IsNone() ? AttributePath(item, attribute->Str()) : item, caseSensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return PythonEquals(s, key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::Generator(std::move(out));
}

Value MinMaxFilter(const Value& subject, CallArguments& a, bool wantMax) {
  const bool caseSensitive = BoolArgument(a.Take(0, "case_sensitive"), false);
  const Value* attribute = a.Take(1, "attribute");
  a.Finish(wantMax ? "max" : "min");
  const ValueList items = Iterate(subject);
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    return SortKey(attribute != nullptr && !attribute->IsNone() ? AttributePath(item, attribute->Str()) : item, caseSensitive);
  };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const int order = PythonCompare(key(items[i]), key(items[best]));
    if (wantMax ? order > 0 : order < 0) best = i;
  }
  return items[best];
}

Value SumFilter(const Value& subject, CallArguments& a) {
  const Value* attribute = a.Take(0, "attribute");
  const Value* start = a.Take(1, "start");
  a.Finish("sum");
  Value total = start != nullptr ? *start : Value::Int(0);
  for (const Value& item : Iterate(subject)) {
    total = BinaryOperation("+", total, attribute != nullptr && !attribute->IsNone() ? AttributePath(item, attribute->Str()) : item);
  }
  return total;
}

}  // namespace

[[noreturn]] void ThrowUndefined(const Value& undefined) {
  ThrowTemplateError(undefined.UndefinedHint().empty() ? "an undefined value was used" : undefined.UndefinedHint());
}

ValueList Iterate(const Value& value) {
  switch (value.kind()) {
    case ValueKind::kUndefined: return {};
    case ValueKind::kList: return value.AsList();
    case ValueKind::kString: {
      ValueList characters;
      for (const uint32_t c : CodePoints(value.AsString())) {
        std::string one;
        AppendUtf8(one, c);
        characters.push_back(Value::String(std::move(one)));
      }
      return characters;
    }
    case ValueKind::kDict: {
      ValueList keys;
      for (const auto& [k, v] : value.AsDict()) keys.push_back(k);
      return keys;
    }
    default: ThrowTemplateError(fmt::format("'{}' object is not iterable", value.TypeName()));
  }
}

Value GetAttribute(const Value& object, const std::string& name) {
  if (object.IsUndefined()) ThrowUndefined(object);
  // Python's getattr first (a method), then the item (Jinja's Environment.getattr).
  if (IsMutatingMethod(object, name)) {
    return Value::Undefined(fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, object.TypeName()));
  }
  // A method of Python's this interpreter does not run is bound too, and refused by name
  // when called (StringMethod), rather than taken for a missing attribute.
  if (IsKnownMethod(object, name)) return BoundMethod(object, name);
  if (object.IsDict()) {
    if (const Value* found = object.Find(name)) return *found;
  }
  if (object.kind() == ValueKind::kObject) {
    if (const Value* found = object.AsObject()->Find(name)) return *found;
  }
  return Value::Undefined(fmt::format("'{}' has no attribute '{}'", ObjectDescription(object), name));
}

Value GetItem(const Value& object, const Value& key) {
  if (object.IsUndefined()) ThrowUndefined(object);
  // The item first, then (for a str key) the attribute (Jinja's Environment.getitem).
  if (object.IsDict()) {
    if (const Value* found = object.Find(key)) return *found;
  } else if ((object.IsList() && !object.IsGenerator()) || object.IsString()) {
    if (key.IsIntegral()) {
      if (object.IsList()) {
        if (auto index = Index(key.AsInt(), object.AsList().size())) return object.AsList()[*index];
      } else {
        const std::vector<uint32_t> cp = CodePoints(object.AsString());
        if (auto index = Index(key.AsInt(), cp.size())) return LikeSubject(object, FromCodePoints(cp, *index, *index + 1));
      }
      return Value::Undefined(fmt::format("{} has no element {}", ObjectDescription(object), key.AsInt()));
    }
  }
  if (key.IsString()) return GetAttribute(object, key.AsString());
  return Value::Undefined(fmt::format("'{}' has no attribute {}", ObjectDescription(object), key.Repr()));
}

Value Slice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  if (object.IsUndefined()) ThrowUndefined(object);
  for (const Value* bound : {&start, &stop, &step}) {
    if (!bound->IsNone() && !bound->IsIntegral()) {
      ThrowTemplateError("slice indices must be integers or None or have an __index__ method");
    }
  }
  const bool isString = object.IsString();
  if (!isString && !(object.IsList() && !object.IsGenerator())) {
    return Value::Undefined(fmt::format("'{}' cannot be sliced", ObjectDescription(object)));
  }
  const std::vector<uint32_t> cp = isString ? CodePoints(object.AsString()) : std::vector<uint32_t>{};
  const auto size = static_cast<int64_t>(isString ? cp.size() : object.AsList().size());
  const int64_t stride = step.IsNone() ? 1 : step.AsInt();
  if (stride == 0) ThrowTemplateError("slice step cannot be zero");
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](const Value& bound, int64_t fallback) {
    if (bound.IsNone()) return fallback;
    int64_t i = bound.AsInt();
    if (i < 0) {
      i += size;
      if (i < 0) i = stride < 0 ? -1 : 0;
    } else if (i >= size) {
      i = stride < 0 ? size - 1 : size;
    }
    return i;
  };
  const int64_t first = adjust(start, stride < 0 ? size - 1 : 0);
  const int64_t last = adjust(stop, stride < 0 ? -1 : size);
  std::vector<size_t> picked;
  for (int64_t i = first; stride > 0 ? i < last : i > last; i += stride) picked.push_back(static_cast<size_t>(i));
  if (isString) {
    std::string out;
    for (const size_t i : picked) AppendUtf8(out, cp[i]);
    return LikeSubject(object, std::move(out));
  }
  ValueList out;
  for (const size_t i : picked) out.push_back(object.AsList()[i]);
  return Value::List(std::move(out), object.IsTuple());
}

bool Contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case ValueKind::kUndefined: return false;
    case ValueKind::kString:
      if (needle.IsUndefined()) ThrowUndefined(needle);
      if (!needle.IsString()) {
        ThrowTemplateError(fmt::format("'in <string>' requires string as left operand, not {}", needle.TypeName()));
      }
      return haystack.AsString().find(needle.AsString()) != std::string::npos;
    case ValueKind::kList:
      return std::any_of(haystack.AsList().begin(), haystack.AsList().end(), [&](const Value& v) { return PythonEquals(v, needle); });
    case ValueKind::kDict: return haystack.Find(needle) != nullptr;
    default: ThrowTemplateError(fmt::format("argument of type '{}' is not iterable", haystack.TypeName()));
  }
}

Value BinaryOperation(const std::string& op, const Value& left, const Value& right) {
  if (op == "~") return Value::String(left.Str() + right.Str());  // Jinja's string concatenation
  if (left.IsUndefined()) ThrowUndefined(left);
  if (right.IsUndefined()) ThrowUndefined(right);
  auto unsupported = [&]() {
    ThrowTemplateError(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, left.TypeName(), right.TypeName()));
  };
  if (left.IsNumber() && right.IsNumber()) {
    const bool integral = left.IsIntegral() && right.IsIntegral();
    const int64_t a = left.AsInt(), b = right.AsInt();
    const double x = left.AsDouble(), y = right.AsDouble();
    // Python's integers have no limit; these have 64 bits, and say so rather than wrap.
    int64_t result = 0;
    auto checked = [&](bool overflowed) {
      if (overflowed) ThrowUnsupported("integer arithmetic beyond 64 bits");
      return Value::Int(result);
    };
    if (op == "+") return integral ? checked(__builtin_add_overflow(a, b, &result)) : Value::Float(x + y);
    if (op == "-") return integral ? checked(__builtin_sub_overflow(a, b, &result)) : Value::Float(x - y);
    if (op == "*") return integral ? checked(__builtin_mul_overflow(a, b, &result)) : Value::Float(x * y);
    if (op == "/") {
      if (y == 0) ThrowTemplateError("division by zero");
      return Value::Float(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0) ThrowTemplateError(integral ? "integer division or modulo by zero" : "float modulo");
      if (integral) {
        // Python floors the quotient; the remainder takes the divisor's sign.
        if (a == INT64_MIN && b == -1) ThrowUnsupported("integer arithmetic beyond 64 bits");
        int64_t quotient = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --quotient;
        return op == "//" ? Value::Int(quotient) : Value::Int(a - quotient * b);
      }
      double remainder = std::fmod(x, y);
      if (remainder != 0 && ((remainder < 0) != (y < 0))) remainder += y;
      return op == "//" ? Value::Float(std::floor(x / y)) : Value::Float(remainder);
    }
    if (op == "**") {
      if (integral && b >= 0) {
        if (a == 0 || a == 1) return Value::Int(b == 0 ? 1 : a);
        if (a == -1) return Value::Int(b % 2 == 0 ? 1 : -1);
        result = 1;  // |a| >= 2 overflows within 63 steps
        for (int64_t i = 0; i < b; ++i) {
          if (__builtin_mul_overflow(result, a, &result)) ThrowUnsupported("integer arithmetic beyond 64 bits");
        }
        return Value::Int(result);
      }
      return Value::Float(std::pow(x, y));
    }
  }
  if (op == "+") {
    // Markup + str escapes the str, and str + Markup too (Markup.__add__, __radd__).
    if (left.IsMarkup() && right.IsString()) return Value::Markup(left.AsString() + EscapedUnlessMarkup(right));
    if (right.IsMarkup() && left.IsString()) return Value::Markup(EscapedUnlessMarkup(left) + right.AsString());
    if (left.IsString() && right.IsString()) return Value::String(left.AsString() + right.AsString());
    if (left.IsList() && right.IsList() && !left.IsGenerator() && !right.IsGenerator() && left.IsTuple() == right.IsTuple()) {
      ValueList items = left.AsList();
      items.insert(items.end(), right.AsList().begin(), right.AsList().end());
      return Value::List(std::move(items), left.IsTuple());
    }
    if (left.IsString()) ThrowTemplateError(fmt::format("can only concatenate str (not \"{}\") to str", right.TypeName()));
    if (left.IsList()) ThrowTemplateError(fmt::format("can only concatenate list (not \"{}\") to list", right.TypeName()));
    unsupported();
  }
  if (op == "*") {
    const Value* sequence = left.IsIntegral() ? &right : &left;
    const Value* count = left.IsIntegral() ? &left : &right;
    if (count->IsIntegral() && (sequence->IsString() || (sequence->IsList() && !sequence->IsGenerator()))) {
      const int64_t times = std::max<int64_t>(0, count->AsInt());
      const size_t unit = sequence->IsString() ? sequence->AsString().size() : sequence->AsList().size();
      constexpr int64_t kMaxRepeated = int64_t{1} << 26;
      if (unit > 0 && times > kMaxRepeated / static_cast<int64_t>(unit)) ThrowUnsupported("repeating a value past 64 MiB");
      if (sequence->IsString()) {
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += sequence->AsString();
        return LikeSubject(*sequence, std::move(out));
      }
      ValueList items;
      for (int64_t i = 0; i < times; ++i) items.insert(items.end(), sequence->AsList().begin(), sequence->AsList().end());
      return Value::List(std::move(items), sequence->IsTuple());
    }
  }
  if (op == "%" && left.IsString()) {
    if (!left.IsMarkup()) return Value::String(PercentFormat(left.AsString(), right));
    // Markup % values escapes each value (markupsafe's _MarkupEscapeHelper).
    auto escape = [](const Value& v) { return v.IsString() ? Value::Markup(EscapedUnlessMarkup(v)) : v; };
    if (right.IsTuple()) {
      ValueList items;
      for (const Value& v : right.AsList()) items.push_back(escape(v));
      return Value::Markup(PercentFormat(left.AsString(), Value::List(std::move(items), true)));
    }
    return Value::Markup(PercentFormat(left.AsString(), escape(right)));
  }
  unsupported();
  return Value();
}

Value FilterValue(Renderer& renderer, const std::string& name, const Value& subject, CallArguments& a) {
  auto done = [&](Value v) {
    a.Finish(name);
    return v;
  };
  if (name == "trim") return TrimFilter(subject, a);
  if (name == "default" || name == "d") return DefaultFilter(subject, a);
  if (name == "tojson") return ToJsonFilter(subject, a);
  if (name == "length" || name == "count") return done(Value::Int(Length(subject)));
  if (name == "string") return done(LikeSubject(subject, subject.Str()));
  if (name == "safe") return done(Value::Markup(subject.Str()));
  if (name == "e" || name == "escape") return done(Value::Markup(EscapedUnlessMarkup(subject)));
  if (name == "lower") return done(LikeSubject(subject, Lower(subject.Str())));
  if (name == "upper") return done(LikeSubject(subject, Upper(subject.Str())));
  if (name == "title") return done(Value::String(JinjaTitle(subject.Str())));
  if (name == "capitalize") return done(LikeSubject(subject, Capitalize(subject.Str())));
  if (name == "join") return JoinFilter(subject, a);
  if (name == "indent") return IndentFilter(subject, a);
  if (name == "int") return IntFilter(subject, a);
  if (name == "float") return FloatFilter(subject, a);
  if (name == "round") return RoundFilter(subject, a);
  if (name == "map") return MapFilter(renderer, subject, a);
  if (name == "select" || name == "reject") return SelectFilter(renderer, subject, a, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return SelectFilter(renderer, subject, a, true, name == "selectattr");
  if (name == "dictsort") return DictsortFilter(subject, a);
  if (name == "sort") return SortFilter(subject, a);
  if (name == "unique") return UniqueFilter(subject, a);
  if (name == "min" || name == "max") return MinMaxFilter(subject, a, name == "max");
  if (name == "sum") return SumFilter(subject, a);
  if (name == "list") return done(Value::List(Iterate(subject)));
  if (name == "first" || name == "last") {
    a.Finish(name);
    if (name == "last" && subject.IsGenerator()) ThrowTemplateError("'generator' object is not reversible");
    const ValueList items = Iterate(subject);
    if (items.empty()) return Value::Undefined(fmt::format("No {} item, sequence was empty.", name));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "items") {
    a.Finish(name);
    if (subject.IsUndefined()) return Value::Generator({});
    if (!subject.IsDict()) ThrowTemplateError("Can only get item pairs from a mapping.");
    ValueList items;
    for (const auto& [k, v] : subject.AsDict()) items.push_back(Value::List({k, v}, /*isTuple=*/true));
    return Value::Generator(std::move(items));
  }
  if (name == "reverse") {
    a.Finish(name);
    if (subject.IsString()) return Slice(subject, Value::None(), Value::None(), Value::Int(-1));
    ValueList items = Iterate(subject);
    std::reverse(items.begin(), items.end());
    return Value::Generator(std::move(items));
  }
  if (name == "abs") {
    a.Finish(name);
    if (subject.kind() == ValueKind::kFloat) return Value::Float(std::fabs(subject.AsDouble()));
    if (subject.IsIntegral()) {
      if (subject.AsInt() == INT64_MIN) ThrowUnsupported("integer arithmetic beyond 64 bits");
      return Value::Int(std::llabs(subject.AsInt()));
    }
    ThrowTemplateError(fmt::format("bad operand type for abs(): '{}'", subject.TypeName()));
  }
  if (name == "replace") {
    const std::string& old = StringArgument(a.Take(0, "old"), "replace's old");
    const std::string& replacement = StringArgument(a.Take(1, "new"), "replace's new");
    const int64_t count = IntArgument(a.Take(2, "count"), -1, "count");
    return done(Value::String(Replace(subject.Str(), old, replacement, count)));
  }
  if (name == "format") {
    if (!a.keywords.empty()) ThrowUnsupported("the format filter with keyword arguments");
    a.Finish("format");
    return Value::String(PercentFormat(subject.Str(), Value::List(a.positional, /*isTuple=*/true)));
  }
  if (name == "attr") {
    const std::string& attribute = StringArgument(a.Take(0, "name"), "attr's name");
    a.Finish(name);
    if (subject.kind() == ValueKind::kObject) {
      const Value* found = subject.AsObject()->Find(attribute);
      return found != nullptr ? *found : Value::Undefined(fmt::format("'{}' has no attribute '{}'", ObjectDescription(subject), attribute));
    }
    if (IsKnownMethod(subject, attribute)) return BoundMethod(subject, attribute);
    return Value::Undefined(fmt::format("'{}' has no attribute '{}'", ObjectDescription(subject), attribute));
  }
  if (!IsJinjaFilter(name)) ThrowTemplateError(fmt::format("No filter named '{}'.", name));
  ThrowUnsupported(fmt::format("the filter '{}'", name));
}

bool TestValue(Renderer& renderer, const std::string& name, const Value& subject, CallArguments& a) {
  (void)renderer;
  auto done = [&](bool b) {
    a.Finish(name);
    return b;
  };
  if (name == "defined") return done(!subject.IsUndefined());
  if (name == "undefined") return done(subject.IsUndefined());
  if (name == "none") return done(subject.IsNone());
  if (name == "boolean") return done(subject.kind() == ValueKind::kBool);
  if (name == "true") return done(subject.kind() == ValueKind::kBool && subject.AsBool());
  if (name == "false") return done(subject.kind() == ValueKind::kBool && !subject.AsBool());
  if (name == "integer") return done(subject.kind() == ValueKind::kInt);
  if (name == "float") return done(subject.kind() == ValueKind::kFloat);
  if (name == "number") return done(subject.IsNumber());
  if (name == "string") return done(subject.IsString());
  if (name == "mapping") return done(subject.IsDict());
  // Python's iter() and len()+__getitem__: an undefined value has both (Jinja's Undefined
  // defines __iter__, __len__ and __getitem__); a generator has no len().
  if (name == "iterable") return done(subject.IsUndefined() || subject.IsString() || subject.IsList() || subject.IsDict());
  if (name == "sequence") {
    return done(subject.IsUndefined() || subject.IsString() || (subject.IsList() && !subject.IsGenerator()) || subject.IsDict());
  }
  if (name == "callable") return done(subject.kind() == ValueKind::kCallable || subject.IsUndefined());
  if (name == "escaped") return done(false);
  if (name == "lower" || name == "upper") {
    const std::string text = subject.Str();
    return done(text == (name == "lower" ? Lower(text) : Upper(text)) && text != (name == "lower" ? Upper(text) : Lower(text)));
  }
  if (name == "even" || name == "odd" || name == "divisibleby") {
    if (subject.IsUndefined()) ThrowUndefined(subject);
    const Value* divisor = name == "divisibleby" ? a.Take(0, "num") : nullptr;
    if (name == "divisibleby" && divisor == nullptr) ThrowTemplateError("divisibleby needs a number");
    a.Finish(name);
    const Value remainder = BinaryOperation("%", subject, divisor != nullptr ? *divisor : Value::Int(2));
    const bool zero = !remainder.Truthy();
    return name == "odd" ? !zero : zero;
  }
  if (name == "filter") return done(subject.IsString() && IsJinjaFilter(subject.AsString()));
  if (name == "test") return done(subject.IsString() && IsJinjaTest(subject.AsString()));
  if (!IsJinjaTest(name)) ThrowTemplateError(fmt::format("No test named '{}'.", name));
  const Value* other = a.Take(0, "b");
  if (other == nullptr) ThrowTemplateError(fmt::format("the test '{}' needs a value to compare with", name));
  a.Finish(name);
  if (name == "==" || name == "eq" || name == "equalto") return PythonEquals(subject, *other);
  if (name == "!=" || name == "ne") return !PythonEquals(subject, *other);
  if (name == "in") return Contains(*other, subject);
  if (name == "sameas") {
    // Python's `is`: None, True and False are single objects; containers by identity.
    if (subject.IsList() || subject.IsDict() || other->IsList() || other->IsDict()) {
      return subject.kind() == other->kind() && PythonEquals(subject, *other) && &subject == other;
    }
    return subject.kind() == other->kind() && PythonEquals(subject, *other);
  }
  if (subject.IsUndefined()) ThrowUndefined(subject);
  if (other->IsUndefined()) ThrowUndefined(*other);
  const int order = PythonCompare(subject, *other);
  if (name == "<" || name == "lt" || name == "lessthan") return order < 0;
  if (name == "<=" || name == "le") return order <= 0;
  if (name == ">" || name == "gt" || name == "greaterthan") return order > 0;
  if (name == ">=" || name == "ge") return order >= 0;
  if (!IsJinjaTest(name)) ThrowTemplateError(fmt::format("No test named '{}'.", name));
  ThrowUnsupported(fmt::format("the test '{}'", name));
}

void AddGlobalFunctions(Scope& globals) {
  globals.Set("range", Value::Function("range", [](Renderer&, CallArguments& a) {
    if (!a.keywords.empty()) ThrowTemplateError("range() takes no keyword arguments");
    if (a.positional.empty() || a.positional.size() > 3) ThrowTemplateError("range expected 1 to 3 arguments");
    for (const Value& v : a.positional) {
      if (!v.IsIntegral()) ThrowTemplateError(fmt::format("'{}' object cannot be interpreted as an integer", v.TypeName()));
    }
    int64_t start = 0, stop = 0, step = 1;
    if (a.positional.size() == 1) {
      stop = a.positional[0].AsInt();
    } else {
      start = a.positional[0].AsInt();
      stop = a.positional[1].AsInt();
      if (a.positional.size() == 3) step = a.positional[2].AsInt();
    }
    if (step == 0) ThrowTemplateError("range() arg 3 must not be zero");
    // The sandbox's safe_range refuses ranges longer than MAX_RANGE (100000).
    constexpr int64_t kMaxRange = 100000;
    ValueList items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (static_cast<int64_t>(items.size()) >= kMaxRange) {
        ThrowTemplateError("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
      }
      items.push_back(Value::Int(i));
    }
    return Value::List(std::move(items));
  }));
  globals.Set("dict", Value::Function("dict", [](Renderer&, CallArguments& a) {
    DictEntries entries;
    if (!a.positional.empty()) {
      if (a.positional.size() > 1 || !a.positional[0].IsDict()) ThrowUnsupported("dict() with positional arguments other than one dict");
      entries = a.positional[0].AsDict();
    }
    for (const auto& [name, value] : a.keywords) entries.emplace_back(Value::String(name), value);
    return Value::Dict(std::move(entries));
  }));
  globals.Set("namespace", Value::Function("namespace", [](Renderer&, CallArguments& a) {
    // Jinja's Namespace(*args, **kwargs): attributes from a dict and from keyword arguments.
    auto object = std::make_shared<AttributeObject>();
    object->typeName = "Namespace";
    for (const Value& positional : a.positional) {
      if (!positional.IsDict()) ThrowTemplateError("namespace() takes a dict or keyword arguments");
      for (const auto& [k, v] : positional.AsDict()) object->Set(k.Str(), v);
    }
    for (const auto& [name, value] : a.keywords) object->Set(name, value);
    return Value::Object(object);
  }));
  globals.Set("raise_exception", Value::Function("raise_exception", [](Renderer&, CallArguments& a) -> Value {
    // transformers: raise TemplateError(message) - the template refuses the conversation.
    const std::string message = a.positional.empty() ? "" : a.positional[0].Str();
    ThrowTemplateError("the template raised an exception: " + message);
  }));
  globals.Set("strftime_now", Value::Function("strftime_now", [](Renderer&, CallArguments& a) {
    // transformers: datetime.now().strftime(format) - the local time.
    if (a.positional.empty() || !a.positional[0].IsString()) ThrowTemplateError("strftime_now needs a format string");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buffer[512];
    const size_t written = std::strftime(buffer, sizeof buffer, a.positional[0].AsString().c_str(), &local);
    return Value::String(std::string(buffer, written));
  }));
  for (const char* name : {"lipsum", "cycler", "joiner"}) {
    globals.Set(name, Value::Function(name, [name = std::string(name)](Renderer&, CallArguments&) -> Value {
      ThrowUnsupported(fmt::format("the global function '{}'", name));
    }));
  }
}

}  // namespace wb::chat
