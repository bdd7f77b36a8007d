// Lexing and parsing chat templates as Jinja 3.1 does (jinja_ast.h). The whitespace rules are
// the template designer documentation's "Whitespace Control": with trim_blocks the first
// newline after a block or comment tag is removed; with lstrip_blocks spaces and tabs from the
// start of a line to a block or comment tag are removed; `{%-`/`-%}` (and the same on `{{ }}`
// and `{# #}`) remove all whitespace before/after the tag, `{%+`/`+%}` keep it. transformers
// compiles chat templates with trim_blocks=True and lstrip_blocks=True (its chat templating
// documentation, "Writing a chat template"; _compile_jinja_template).
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "model/chat/jinja_ast.h"
#include "model/chat/jinja_error.h"

namespace wb::chat {

namespace {

enum class TokenKind { kText, kBlockBegin, kBlockEnd, kVariableBegin, kVariableEnd, kName, kString, kInt, kFloat, kOperator, kEnd };

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;  // text, name, operator, a string's value
  int line = 0;
  int64_t integer = 0;
  double real = 0;
};

bool IsSpaceAt(const std::string& s, size_t i, size_t* length) {
  // Python's \s on one character at byte i (str.isspace); the length of its UTF-8 bytes.
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) {
    *length = 1;
    return IsPythonSpace(b);
  }
  const std::vector<uint32_t> cp = CodePoints(std::string_view(s).substr(i, 4));
  std::string one;
  AppendUtf8(one, cp[0]);
  *length = one.size();
  return IsPythonSpace(cp[0]);
}

// Python's str.rstrip(): trailing whitespace removed.
std::string RightStripped(const std::string& text) {
  const std::vector<uint32_t> cp = CodePoints(text);
  size_t end = cp.size();
  while (end > 0 && IsPythonSpace(cp[end - 1])) --end;
  return FromCodePoints(cp, 0, end);
}

bool AllSpace(const std::string& text) {
  if (text.empty()) return false;
  for (const uint32_t c : CodePoints(text)) {
    if (!IsPythonSpace(c)) return false;
  }
  return true;
}

int CountNewlines(std::string_view text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// Jinja reads \r\n and \r as \n and drops one trailing newline (keep_trailing_newline=False).
std::string NormalizeSource(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// A string literal's text as Python's "unicode-escape" reads it: \n \t \\ \' \" \xhh \uhhhh
// \Uhhhhhhhh, octal, a backslash-newline dropped; an unknown escape stays as written.
std::string Unescape(const std::string& raw, int line) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 1 == raw.size()) {
      out += raw[i];
      continue;
    }
    const char c = raw[++i];
    auto hex = [&](size_t digits) {
      uint32_t value = 0;
      for (size_t k = 1; k <= digits; ++k) {
        if (i + k >= raw.size() || !std::isxdigit(static_cast<unsigned char>(raw[i + k]))) {
          ThrowTemplateError(fmt::format("truncated \\{}XX escape in a string literal", c), line);
        }
        value = value * 16 + static_cast<uint32_t>(std::stoi(std::string(1, raw[i + k]), nullptr, 16));
      }
      i += digits;
      AppendUtf8(out, value);
    };
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\n': break;
      case 'x': hex(2); break;
      case 'u': hex(4); break;
      case 'U': hex(8); break;
      default:
        if (c >= '0' && c <= '7') {
          uint32_t value = 0;
          size_t k = 0;
          while (k < 3 && i + k < raw.size() && raw[i + k] >= '0' && raw[i + k] <= '7') {
            value = value * 8 + static_cast<uint32_t>(raw[i + k] - '0');
            ++k;
          }
          i += k - 1;
          AppendUtf8(out, value);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : s_(std::move(source)) {}

  std::vector<Token> Run() {
    bool lineStarting = true;  // the last tag ended a line (or nothing came yet)
    while (pos_ < s_.size()) {
      const size_t open = NextTagOpen(pos_);
      if (open == std::string::npos) {
        Emit(TokenKind::kText, s_.substr(pos_));
        break;
      }
      const char kind = s_[open + 1];  // '%', '{' or '#'
      size_t after = open + 2;
      char sign = 0;
      if (after < s_.size() && (s_[after] == '-' || s_[after] == '+')) sign = s_[after++];
      std::string text = s_.substr(pos_, open - pos_);
      const int textLines = CountNewlines(text);
      if (sign == '-') {
        text = RightStripped(text);
      } else if (sign != '+' && kind != '{') {  // lstrip_blocks: not before {{ }}
        const size_t lineStart = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((lineStart > 0 || lineStarting) && AllSpace(text.substr(lineStart))) text.resize(lineStart);
      }
      Emit(TokenKind::kText, text);
      line_ += textLines;
      pos_ = after;
      if (kind == '#') {
        lineStarting = LexCommentEnd();
      } else if (kind == '%' && LexRaw(&lineStarting)) {
        // the raw text is emitted
      } else {
        lineStarting = LexTag(kind == '%');
      }
    }
    tokens_.push_back({TokenKind::kEnd, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t NextTagOpen(size_t from) const {
    for (size_t i = s_.find('{', from); i != std::string::npos; i = s_.find('{', i + 1)) {
      if (i + 1 < s_.size() && (s_[i + 1] == '%' || s_[i + 1] == '{' || s_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void Emit(TokenKind kind, std::string text) {
    if (kind == TokenKind::kText && text.empty()) return;
    tokens_.push_back({kind, std::move(text), line_});
  }

  // After "-%}" (and the like): all whitespace; after a plain end with trim_blocks: one newline.
  // Returns whether what was consumed ends with a newline (Jinja's line_starting).
  bool ConsumeAfterEnd(char sign, bool trimNewline) {
    bool endsLine = false;
    if (sign == '-') {
      size_t length = 0;
      while (pos_ < s_.size() && IsSpaceAt(s_, pos_, &length)) {
        endsLine = s_[pos_] == '\n';
        if (s_[pos_] == '\n') ++line_;
        pos_ += length;
      }
    } else if (sign != '+' && trimNewline && pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
      ++line_;
      endsLine = true;
    }
    return endsLine;
  }

  bool LexCommentEnd() {
    const int startLine = line_;
    const size_t close = s_.find("#}", pos_);
    if (close == std::string::npos) ThrowTemplateError("Missing end of comment tag", startLine);
    const char sign = close > pos_ && (s_[close - 1] == '-' || s_[close - 1] == '+') ? s_[close - 1] : 0;
    line_ += CountNewlines(std::string_view(s_).substr(pos_, close - pos_));
    pos_ = close + 2;
    return ConsumeAfterEnd(sign, /*trimNewline=*/true);
  }

  // At "{% raw %}" (pos_ after "{%" and its sign): the text up to "{% endraw %}" as it is.
  bool LexRaw(bool* lineStarting) {
    size_t p = pos_;
    size_t length = 0;
    while (p < s_.size() && IsSpaceAt(s_, p, &length)) p += length;
    if (s_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < s_.size() && IsSpaceAt(s_, p, &length)) p += length;
    char beginSign = 0;
    if (s_.compare(p, 3, "-%}") == 0) {
      beginSign = '-';
      p += 3;
    } else if (s_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      return false;
    }
    line_ += CountNewlines(std::string_view(s_).substr(pos_, p - pos_));
    pos_ = p;
    ConsumeAfterEnd(beginSign, /*trimNewline=*/false);  // Jinja's raw_begin has no trim_blocks newline
    // The end: {%[-+]? endraw [-+]?%}
    for (size_t open = s_.find("{%", pos_); open != std::string::npos; open = s_.find("{%", open + 1)) {
      size_t q = open + 2;
      char endSign = 0;
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) endSign = s_[q++];
      while (q < s_.size() && IsSpaceAt(s_, q, &length)) q += length;
      if (s_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < s_.size() && IsSpaceAt(s_, q, &length)) q += length;
      char closeSign = 0;
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) closeSign = s_[q++];
      if (s_.compare(q, 2, "%}") != 0) continue;
      std::string text = s_.substr(pos_, open - pos_);
      const int lines = CountNewlines(text) + CountNewlines(std::string_view(s_).substr(open, q - open));
      if (endSign == '-') {
        text = RightStripped(text);
      } else if (endSign != '+') {
        const size_t lineStart = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (lineStart > 0 && AllSpace(text.substr(lineStart))) text.resize(lineStart);
      }
      Emit(TokenKind::kText, text);
      line_ += lines;
      pos_ = q + 2;
      *lineStarting = ConsumeAfterEnd(closeSign, /*trimNewline=*/true);
      return true;
    }
    ThrowTemplateError("Missing end of raw directive", line_);
  }

  // The tokens of a {% %} or {{ }} tag, up to its end at bracket depth 0.
  bool LexTag(bool block) {
    const int startLine = line_;
    tokens_.push_back({block ? TokenKind::kBlockBegin : TokenKind::kVariableBegin, "", line_});
    std::vector<char> brackets;
    while (true) {
      if (pos_ >= s_.size()) {
        ThrowTemplateError(fmt::format("unexpected end of template, expected '{}'", block ? "end of statement block" : "end of print statement"), startLine);
      }
      size_t length = 0;
      if (IsSpaceAt(s_, pos_, &length)) {
        if (s_[pos_] == '\n') ++line_;
        pos_ += length;
        continue;
      }
      if (brackets.empty()) {
        const std::string_view close = block ? "%}" : "}}";
        char sign = 0;
        size_t endAt = pos_;
        if ((s_[pos_] == '-' || (block && s_[pos_] == '+')) && s_.compare(pos_ + 1, 2, close) == 0) {
          sign = s_[pos_];
          endAt = pos_ + 1;
        }
        if (s_.compare(endAt, 2, close) == 0) {
          tokens_.push_back({block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd, "", line_});
          pos_ = endAt + 2;
          return ConsumeAfterEnd(sign, /*trimNewline=*/block);
        }
      }
      const char c = s_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        LexNumber();
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80) {
        size_t end = pos_;
        while (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_' ||
                                   static_cast<unsigned char>(s_[end]) >= 0x80)) {
          ++end;
        }
        tokens_.push_back({TokenKind::kName, s_.substr(pos_, end - pos_), line_});
        pos_ = end;
      } else if (c == '\'' || c == '"') {
        LexString(c);
      } else {
        LexOperator(brackets);
      }
    }
  }

  void LexNumber() {
    // Jinja's integer_re and float_re: digits with '_' separators, 0b/0o/0x prefixes, a
    // fraction and/or exponent make a float (not right after a '.', so `a.0.1` is items).
    auto digitsFrom = [&](size_t p) {
      while (p < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[p])) ||
                               (s_[p] == '_' && p + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p + 1]))))) {
        ++p;
      }
      return p;
    };
    const bool afterDot = pos_ > 0 && s_[pos_ - 1] == '.';
    if (s_[pos_] == '0' && pos_ + 1 < s_.size() && std::string_view("bBoOxX").find(s_[pos_ + 1]) != std::string_view::npos) {
      const int base = std::tolower(s_[pos_ + 1]) == 'b' ? 2 : std::tolower(s_[pos_ + 1]) == 'o' ? 8 : 16;
      auto isDigit = [base](char c) {
        const int value = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                          : std::isxdigit(static_cast<unsigned char>(c)) ? std::tolower(c) - 'a' + 10
                                                                         : 99;
        return value < base;
      };
      size_t end = pos_ + 2;
      std::string digits;
      while (end < s_.size() && (isDigit(s_[end]) || (s_[end] == '_' && end + 1 < s_.size() && isDigit(s_[end + 1])))) {
        if (s_[end] != '_') digits += s_[end];
        ++end;
      }
      if (!digits.empty()) {  // else "0" alone, and what follows is lexed on its own
        Token token{TokenKind::kInt, s_.substr(pos_, end - pos_), line_};
        const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), token.integer, base);
        if (parsed.ec != std::errc()) ThrowUnsupported(fmt::format("the integer {} (beyond 64 bits)", token.text), line_);
        tokens_.push_back(std::move(token));
        pos_ = end;
        return;
      }
    }
    size_t end = digitsFrom(pos_);
    bool isFloat = false;
    if (!afterDot && end + 1 < s_.size() && s_[end] == '.' && std::isdigit(static_cast<unsigned char>(s_[end + 1]))) {
      end = digitsFrom(end + 1);
      isFloat = true;
    }
    if (!afterDot && end < s_.size() && (s_[end] == 'e' || s_[end] == 'E')) {
      size_t p = end + 1;
      if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
      if (p < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p]))) {
        end = digitsFrom(p);
        isFloat = true;
      }
    }
    std::string text = s_.substr(pos_, end - pos_);
    std::string plain;
    for (const char ch : text) {
      if (ch != '_') plain += ch;
    }
    Token token{isFloat ? TokenKind::kFloat : TokenKind::kInt, text, line_};
    if (isFloat) {
      token.real = std::strtod(plain.c_str(), nullptr);  // 1e999 is inf, as in Python
    } else {
      const auto parsed = std::from_chars(plain.data(), plain.data() + plain.size(), token.integer);
      if (parsed.ec != std::errc()) ThrowUnsupported(fmt::format("the integer {} (beyond 64 bits)", text), line_);
    }
    tokens_.push_back(std::move(token));
    pos_ = end;
  }

  void LexString(char quote) {
    const int startLine = line_;
    size_t p = pos_ + 1;
    while (p < s_.size() && s_[p] != quote) {
      if (s_[p] == '\\') ++p;
      ++p;
    }
    if (p >= s_.size()) ThrowTemplateError("unexpected end of string", startLine);
    const std::string raw = s_.substr(pos_ + 1, p - pos_ - 1);
    tokens_.push_back({TokenKind::kString, Unescape(raw, startLine), startLine});
    line_ += CountNewlines(raw);
    pos_ = p + 1;
  }

  void LexOperator(std::vector<char>& brackets) {
    static constexpr std::array<std::string_view, 6> kTwoCharacter = {"//", "**", "==", "!=", ">=", "<="};
    for (const std::string_view op : kTwoCharacter) {
      if (s_.compare(pos_, 2, op) == 0) {
        tokens_.push_back({TokenKind::kOperator, std::string(op), line_});
        pos_ += 2;
        return;
      }
    }
    const char c = s_[pos_];
    if (std::string_view("+-/*%~[](){}=<>.:|,;").find(c) == std::string_view::npos) {
      ThrowTemplateError(fmt::format("unexpected char '{}'", c), line_);
    }
    if (c == '(' || c == '[' || c == '{') brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) ThrowTemplateError(fmt::format("unexpected '{}'", c), line_);
      if (brackets.back() != c) ThrowTemplateError(fmt::format("unexpected '{}', expected '{}'", c, brackets.back()), line_);
      brackets.pop_back();
    }
    tokens_.push_back({TokenKind::kOperator, std::string(1, c), line_});
    ++pos_;
  }

  std::string s_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

// Tags Jinja knows that this interpreter does not run: refused by name.
bool IsKnownUnsupportedTag(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kTags = {"include", "extends", "block", "import",
                                                            "from", "call", "autoescape", "trans"};
  return std::find(kTags.begin(), kTags.end(), name) != kTags.end();
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  ParsedTemplate Run() {
    ParsedTemplate parsed;
    std::string endedBy;
    parsed.nodes = ParseBody({}, &endedBy);
    ReportUnknownNames();
    return parsed;
  }

 private:
  const Token& Current() const { return t_[i_]; }
  const Token& Peek(size_t ahead = 1) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  Token Next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool IsOperator(std::string_view op) const { return Current().kind == TokenKind::kOperator && Current().text == op; }
  bool IsName(std::string_view name) const { return Current().kind == TokenKind::kName && Current().text == name; }
  bool SkipOperator(std::string_view op) {
    if (!IsOperator(op)) return false;
    ++i_;
    return true;
  }
  bool SkipName(std::string_view name) {
    if (!IsName(name)) return false;
    ++i_;
    return true;
  }
  [[noreturn]] void Fail(const std::string& message) const { ThrowTemplateError(message, Current().line); }
  std::string Describe(const Token& token) const {
    switch (token.kind) {
      case TokenKind::kBlockEnd: return "end of statement block";
      case TokenKind::kVariableEnd: return "end of print statement";
      case TokenKind::kEnd: return "end of template";
      case TokenKind::kString: return "string";
      case TokenKind::kInt: return "integer";
      case TokenKind::kFloat: return "float";
      default: return "'" + token.text + "'";
    }
  }
  void ExpectOperator(std::string_view op) {
    if (!SkipOperator(op)) Fail(fmt::format("expected '{}', got {}", op, Describe(Current())));
  }
  std::string ExpectName() {
    if (Current().kind != TokenKind::kName) Fail(fmt::format("expected a name, got {}", Describe(Current())));
    return Next().text;
  }
  void ExpectBlockEnd() {
    if (Current().kind != TokenKind::kBlockEnd) Fail(fmt::format("expected end of statement block, got {}", Describe(Current())));
    ++i_;
  }

  // Statements and text up to a block tag named in `endTags` (its name left in *endedBy, the
  // stream just after the name) or the end of the template (endTags must then be empty).
  NodeList ParseBody(const std::vector<std::string_view>& endTags, std::string* endedBy) {
    NodeList nodes;
    while (true) {
      const Token& token = Current();
      if (token.kind == TokenKind::kEnd) {
        if (!endTags.empty()) {
          Fail(fmt::format("Unexpected end of template. Jinja was looking for the following tags: {}",
                           fmt::join(endTags, " or ")));
        }
        return nodes;
      }
      if (token.kind == TokenKind::kText) {
        auto node = std::make_unique<Node>();
        node->kind = NodeKind::kText;
        node->line = token.line;
        node->text = token.text;
        nodes.push_back(std::move(node));
        ++i_;
      } else if (token.kind == TokenKind::kVariableBegin) {
        ++i_;
        auto node = std::make_unique<Node>();
        node->kind = NodeKind::kOutput;
        node->line = token.line;
        node->expr = ParseTuple(/*withConditional=*/true);
        if (Current().kind != TokenKind::kVariableEnd) Fail(fmt::format("expected end of print statement, got {}", Describe(Current())));
        ++i_;
        nodes.push_back(std::move(node));
      } else if (token.kind == TokenKind::kBlockBegin) {
        ++i_;
        if (Current().kind != TokenKind::kName) Fail("tag name expected");
        const std::string name = Current().text;
        if (std::find(endTags.begin(), endTags.end(), name) != endTags.end()) {
          ++i_;
          *endedBy = name;
          return nodes;
        }
        nodes.push_back(ParseStatement());
      } else {
        Fail(fmt::format("unexpected {}", Describe(token)));
      }
    }
  }

  // Nesting deeper than any template needs is refused before it can exhaust the stack.
  struct NestingGuard {
    NestingGuard(int& depth, int line) : depth_(depth) {
      constexpr int kMaxNesting = 200;
      if (++depth_ > kMaxNesting) ThrowTemplateError("the template nests blocks or brackets too deeply", line);
    }
    ~NestingGuard() { --depth_; }
    int& depth_;
  };

  NodePtr ParseStatement() {
    const NestingGuard nesting(nesting_, Current().line);
    const Token tag = Next();
    auto node = std::make_unique<Node>();
    node->line = tag.line;
    const std::string& name = tag.text;
    std::string endedBy;
    // Jinja's compiler checks filter and test names when it compiles, except inside an `if`
    // or a conditional expression (a "soft" frame), where an unknown one fails only when run.
    // A for loop, macro, block set, filter block, `with` and {% generation %} start a new,
    // not soft, frame.
    const bool opensFrame = name == "for" || name == "macro" || name == "filter" ||
                            name == "with" || name == "generation";
    const FrameGuard frame(softFrames_, name == "if" ? std::optional<bool>(true)
                                        : opensFrame ? std::optional<bool>(false)
                                                     : std::nullopt);
    if (name == "if") {
      node->kind = NodeKind::kIf;
      ExprPtr condition = ParseTuple(/*withConditional=*/false);
      while (true) {
        ExpectBlockEnd();
        NodeList body = ParseBody({"elif", "else", "endif"}, &endedBy);
        node->branches.emplace_back(std::move(condition), std::move(body));
        if (endedBy == "elif") {
          condition = ParseTuple(false);
          continue;
        }
        if (endedBy == "else") {
          ExpectBlockEnd();
          node->branches.emplace_back(nullptr, ParseBody({"endif"}, &endedBy));
        }
        break;
      }
    } else if (name == "for") {
      node->kind = NodeKind::kFor;
      node->target = ParseAssignTarget();
      if (!SkipName("in")) Fail(fmt::format("expected 'in', got {}", Describe(Current())));
      node->expr = ParseTuple(/*withConditional=*/false, /*stopAtRecursive=*/true);
      if (SkipName("if")) node->loopFilter = ParseExpression(true);
      if (IsName("recursive")) ThrowUnsupported("a recursive for loop", Current().line);
      ExpectBlockEnd();
      ++loopDepth_;
      node->body = ParseBody({"endfor", "else"}, &endedBy);
      if (endedBy == "else") {
        ExpectBlockEnd();
        node->elseBody = ParseBody({"endfor"}, &endedBy);
      }
    } else if (name == "set") {
      node->target = ParseAssignTarget(/*allowAttribute=*/true);
      if (SkipOperator("=")) {
        node->kind = NodeKind::kSet;
        node->expr = ParseTuple(/*withConditional=*/true);
      } else {
        node->kind = NodeKind::kSetBlock;
        const FrameGuard blockFrame(softFrames_, false);
        if (IsOperator("|")) node->expr = ParseFilterChain(nullptr);
        ExpectBlockEnd();
        node->body = ParseBody({"endset"}, &endedBy);
      }
    } else if (name == "macro") {
      node->kind = NodeKind::kMacro;
      node->text = ExpectName();
      ExpectOperator("(");
      while (!SkipOperator(")")) {
        if (!node->parameters.empty()) ExpectOperator(",");
        if (SkipOperator(")")) break;
        MacroParameter parameter;
        parameter.name = ExpectName();
        if (SkipOperator("=")) parameter.defaultValue = ParseExpression(true);
        node->parameters.push_back(std::move(parameter));
      }
      ExpectBlockEnd();
      node->body = ParseBody({"endmacro"}, &endedBy);
      node->usesVarargs = NamesUsed(node->body, "varargs");
      node->usesKwargs = NamesUsed(node->body, "kwargs");
    } else if (name == "filter") {
      node->kind = NodeKind::kFilterBlock;
      node->expr = ParseFilterChain(nullptr, /*firstPipe=*/false);
      ExpectBlockEnd();
      node->body = ParseBody({"endfilter"}, &endedBy);
    } else if (name == "with") {
      node->kind = NodeKind::kWith;
      while (Current().kind != TokenKind::kBlockEnd) {
        if (!node->assignments.empty()) ExpectOperator(",");
        AssignTarget target = ParseAssignTarget();
        ExpectOperator("=");
        node->assignments.emplace_back(std::move(target), ParseExpression(true));
      }
      ExpectBlockEnd();
      node->body = ParseBody({"endwith"}, &endedBy);
    } else if (name == "generation") {
      // transformers' AssistantTracker extension: the body renders as it is (it also records
      // which characters the assistant wrote, for return_assistant_tokens_mask).
      node->kind = NodeKind::kScope;
      ExpectBlockEnd();
      node->body = ParseBody({"endgeneration"}, &endedBy);
    } else if (name == "break" || name == "continue") {
      if (loopDepth_ == 0) Fail(fmt::format("'{}' outside of a for loop", name));
      node->kind = name == "break" ? NodeKind::kBreak : NodeKind::kContinue;
    } else if (IsKnownUnsupportedTag(name)) {
      ThrowUnsupported(fmt::format("the tag '{}'", name), tag.line);
    } else {
      ThrowTemplateError(fmt::format("Encountered unknown tag '{}'.", name), tag.line);
    }
    if (name == "for") --loopDepth_;
    ExpectBlockEnd();
    return node;
  }

  static bool NamesUsed(const NodeList& nodes, std::string_view name) {
    for (const NodePtr& node : nodes) {
      if (ExprUses(node->expr.get(), name) || ExprUses(node->loopFilter.get(), name)) return true;
      for (const auto& [condition, body] : node->branches) {
        if (ExprUses(condition.get(), name) || NamesUsed(body, name)) return true;
      }
      for (const auto& [target, value] : node->assignments) {
        if (ExprUses(value.get(), name)) return true;
      }
      if (NamesUsed(node->body, name) || NamesUsed(node->elseBody, name)) return true;
    }
    return false;
  }
  static bool ExprUses(const Expr* expr, std::string_view name) {
    if (expr == nullptr) return false;
    if (expr->kind == ExprKind::kName && expr->name == name) return true;
    for (const ExprPtr& item : expr->items) {
      if (ExprUses(item.get(), name)) return true;
    }
    for (const auto& [key, value] : expr->keywords) {
      if (ExprUses(value.get(), name)) return true;
    }
    return false;
  }

  // A name, `a, b`, `(a, b)` or (with allowAttribute) `ns.name`.
  AssignTarget ParseAssignTarget(bool allowAttribute = false) {
    AssignTarget target;
    if (SkipOperator("(")) {
      target.unpack = true;
      while (!SkipOperator(")")) {
        if (!target.names.empty()) ExpectOperator(",");
        if (SkipOperator(")")) break;
        target.names.push_back(ExpectName());
      }
      return target;
    }
    target.names.push_back(ExpectName());
    if (allowAttribute && SkipOperator(".")) {
      target.attribute = ExpectName();
      return target;
    }
    while (SkipOperator(",")) {
      target.unpack = true;
      if (Current().kind != TokenKind::kName || IsName("in")) break;
      target.names.push_back(ExpectName());
    }
    return target;
  }

  ExprPtr Make(ExprKind kind, int line) {
    auto expr = std::make_unique<Expr>();
    expr->kind = kind;
    expr->line = line;
    return expr;
  }

  // An expression's tree grows one level with each operator, filter, call or attribute; a
  // chain of them deeper than any template writes is refused here, so that rendering and
  // destroying the tree need only a bounded stack.
  ExprPtr Deepen(ExprPtr node) {
    constexpr int kMaxExpressionDepth = 400;
    int below = 0;
    for (const ExprPtr& item : node->items) {
      if (item) below = std::max(below, item->depth);
    }
    for (const auto& [key, value] : node->keywords) below = std::max(below, value->depth);
    node->depth = below + 1;
    if (node->depth > kMaxExpressionDepth) ThrowTemplateError("the expression nests too deeply", node->line);
    return node;
  }

  // Jinja's parse_tuple: expressions separated by commas make a tuple; one alone is itself.
  ExprPtr ParseTuple(bool withConditional, bool stopAtRecursive = false, bool explicitParentheses = false) {
    const int line = Current().line;
    std::vector<ExprPtr> items;
    bool sawComma = false;
    while (true) {
      if (!items.empty()) {
        if (!SkipOperator(",")) break;
        sawComma = true;
      }
      const Token& c = Current();
      if (c.kind == TokenKind::kVariableEnd || c.kind == TokenKind::kBlockEnd || IsOperator(")") ||
          (stopAtRecursive && (IsName("recursive") || IsName("if")))) {
        break;
      }
      items.push_back(withConditional ? ParseExpression(true) : ParseOr());
    }
    if (items.empty()) {
      if (!explicitParentheses) Fail(fmt::format("Expected an expression, got {}", Describe(Current())));
      return Make(ExprKind::kTuple, line);
    }
    if (items.size() == 1 && !sawComma) return std::move(items[0]);
    auto tuple = Make(ExprKind::kTuple, line);
    tuple->items = std::move(items);
    return Deepen(std::move(tuple));
  }

  ExprPtr ParseExpression(bool withConditional) { return withConditional ? ParseConditional() : ParseOr(); }

  // Pushes whether the frame being parsed is soft (see ParseStatement) while in scope.
  struct FrameGuard {
    FrameGuard(std::vector<bool>& frames, std::optional<bool> soft) : frames_(frames), pushed_(soft.has_value()) {
      if (pushed_) frames_.push_back(*soft);
    }
    ~FrameGuard() {
      if (pushed_) frames_.pop_back();
    }
    std::vector<bool>& frames_;
    bool pushed_;
  };
  bool InSoftFrame() const { return !softFrames_.empty() && softFrames_.back(); }

  ExprPtr ParseConditional() {
    // The whole conditional expression is a soft frame in Jinja's compiler; whether it is one
    // is known only at its `if`, so names checked before are checked again in RecheckNames.
    const size_t firstChecked = checkedNames_.size();
    ExprPtr value = ParseOr();
    if (IsName("if")) checkedNames_.resize(firstChecked);
    const FrameGuard frame(softFrames_, IsName("if") ? std::optional<bool>(true) : std::nullopt);
    while (IsName("if")) {
      const int line = Next().line;
      ExprPtr condition = ParseOr();
      ExprPtr otherwise;
      if (SkipName("else")) otherwise = ParseConditional();
      auto node = Make(ExprKind::kConditional, line);
      node->items.push_back(std::move(value));
      node->items.push_back(std::move(condition));
      node->items.push_back(std::move(otherwise));
      value = Deepen(std::move(node));
    }
    return value;
  }

  ExprPtr Binary(ExprKind kind, ExprPtr left, ExprPtr right, int line, std::string op = "") {
    auto node = Make(kind, line);
    node->name = std::move(op);
    node->items.push_back(std::move(left));
    node->items.push_back(std::move(right));
    return Deepen(std::move(node));
  }

  ExprPtr ParseOr() {
    ExprPtr left = ParseAnd();
    while (IsName("or")) {
      const int line = Next().line;
      left = Binary(ExprKind::kOr, std::move(left), ParseAnd(), line);
    }
    return left;
  }
  ExprPtr ParseAnd() {
    ExprPtr left = ParseNot();
    while (IsName("and")) {
      const int line = Next().line;
      left = Binary(ExprKind::kAnd, std::move(left), ParseNot(), line);
    }
    return left;
  }
  ExprPtr ParseNot() {
    if (IsName("not")) {
      const int line = Next().line;
      auto node = Make(ExprKind::kNot, line);
      node->items.push_back(ParseNot());
      return Deepen(std::move(node));
    }
    return ParseCompare();
  }
  ExprPtr ParseCompare() {
    const int line = Current().line;
    ExprPtr first = ParseMath1();
    std::vector<std::string> ops;
    std::vector<ExprPtr> operands;
    while (true) {
      static constexpr std::array<std::string_view, 6> kCompare = {"==", "!=", "<", "<=", ">", ">="};
      const auto op = std::find_if(kCompare.begin(), kCompare.end(), [&](std::string_view o) { return IsOperator(o); });
      if (op != kCompare.end()) {
        ++i_;
        ops.emplace_back(*op);
      } else if (SkipName("in")) {
        ops.emplace_back("in");
      } else if (IsName("not") && Peek().kind == TokenKind::kName && Peek().text == "in") {
        i_ += 2;
        ops.emplace_back("notin");
      } else {
        break;
      }
      operands.push_back(ParseMath1());
    }
    if (ops.empty()) return first;
    auto node = Make(ExprKind::kCompare, line);
    node->items.push_back(std::move(first));
    for (auto& operand : operands) node->items.push_back(std::move(operand));
    node->ops = std::move(ops);
    return Deepen(std::move(node));
  }
  ExprPtr ParseMath1() {
    ExprPtr left = ParseConcat();
    while (IsOperator("+") || IsOperator("-")) {
      const Token op = Next();
      left = Binary(ExprKind::kBinary, std::move(left), ParseConcat(), op.line, op.text);
    }
    return left;
  }
  ExprPtr ParseConcat() {
    ExprPtr left = ParseMath2();
    while (IsOperator("~")) {
      const Token op = Next();
      left = Binary(ExprKind::kBinary, std::move(left), ParseMath2(), op.line, "~");
    }
    return left;
  }
  ExprPtr ParseMath2() {
    ExprPtr left = ParsePow();
    while (IsOperator("*") || IsOperator("/") || IsOperator("//") || IsOperator("%")) {
      const Token op = Next();
      left = Binary(ExprKind::kBinary, std::move(left), ParsePow(), op.line, op.text);
    }
    return left;
  }
  ExprPtr ParsePow() {
    ExprPtr left = ParseUnary(true);
    while (IsOperator("**")) {
      const Token op = Next();
      left = Binary(ExprKind::kBinary, std::move(left), ParseUnary(true), op.line, "**");
    }
    return left;
  }
  ExprPtr ParseUnary(bool withFilter) {
    const NestingGuard nesting(nesting_, Current().line);
    ExprPtr node;
    const int line = Current().line;
    if (SkipOperator("-")) {
      node = Make(ExprKind::kNegate, line);
      node->items.push_back(ParseUnary(false));
      node = Deepen(std::move(node));
    } else if (SkipOperator("+")) {
      node = Make(ExprKind::kPlus, line);
      node->items.push_back(ParseUnary(false));
      node = Deepen(std::move(node));
    } else {
      node = ParsePrimary();
    }
    node = ParsePostfix(std::move(node));
    if (withFilter) node = ParseFilterExpression(std::move(node));
    return node;
  }

  ExprPtr ParsePrimary() {
    const NestingGuard nesting(nesting_, Current().line);
    const Token token = Current();
    if (token.kind == TokenKind::kName) {
      ++i_;
      if (token.text == "true" || token.text == "True") return Literal(Value::Bool(true), token.line);
      if (token.text == "false" || token.text == "False") return Literal(Value::Bool(false), token.line);
      if (token.text == "none" || token.text == "None") return Literal(Value::None(), token.line);
      auto node = Make(ExprKind::kName, token.line);
      node->name = token.text;
      return node;
    }
    if (token.kind == TokenKind::kString) {
      std::string text;
      while (Current().kind == TokenKind::kString) text += Next().text;  // adjacent strings join
      return Literal(Value::String(std::move(text)), token.line);
    }
    if (token.kind == TokenKind::kInt) {
      ++i_;
      return Literal(Value::Int(token.integer), token.line);
    }
    if (token.kind == TokenKind::kFloat) {
      ++i_;
      return Literal(Value::Float(token.real), token.line);
    }
    if (SkipOperator("(")) {
      ExprPtr inner = ParseTuple(true, false, /*explicitParentheses=*/true);
      ExpectOperator(")");
      return inner;
    }
    if (SkipOperator("[")) {
      auto list = Make(ExprKind::kList, token.line);
      while (!SkipOperator("]")) {
        if (!list->items.empty()) ExpectOperator(",");
        if (SkipOperator("]")) break;
        list->items.push_back(ParseExpression(true));
      }
      return Deepen(std::move(list));
    }
    if (SkipOperator("{")) {
      auto dict = Make(ExprKind::kDict, token.line);
      while (!SkipOperator("}")) {
        if (!dict->items.empty()) ExpectOperator(",");
        if (SkipOperator("}")) break;
        dict->items.push_back(ParseExpression(true));
        ExpectOperator(":");
        dict->items.push_back(ParseExpression(true));
      }
      return Deepen(std::move(dict));
    }
    Fail(fmt::format("unexpected {}", Describe(token)));
  }

  ExprPtr Literal(Value value, int line) {
    auto node = Make(ExprKind::kLiteral, line);
    node->literal = std::move(value);
    return node;
  }

  ExprPtr ParsePostfix(ExprPtr node) {
    while (true) {
      if (IsOperator(".")) {
        const int line = Next().line;
        if (Current().kind == TokenKind::kName) {
          auto attr = Make(ExprKind::kGetAttr, line);
          attr->name = Next().text;
          attr->items.push_back(std::move(node));
          node = Deepen(std::move(attr));
        } else if (Current().kind == TokenKind::kInt) {
          auto item = Make(ExprKind::kGetItem, line);
          item->items.push_back(std::move(node));
          item->items.push_back(Literal(Value::Int(Next().integer), line));
          node = Deepen(std::move(item));
        } else {
          Fail(fmt::format("expected name or number, got {}", Describe(Current())));
        }
      } else if (IsOperator("[")) {
        node = ParseSubscript(std::move(node));
      } else if (IsOperator("(")) {
        node = ParseCall(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr ParseSubscript(ExprPtr node) {
    const int line = Next().line;  // "["
    ExprPtr bounds[3];
    bool isSlice = false;
    for (int part = 0; part < 3; ++part) {
      if (!IsOperator(":") && !IsOperator("]")) bounds[part] = ParseExpression(true);
      if (part < 2 && SkipOperator(":")) {
        isSlice = true;
        continue;
      }
      break;
    }
    if (IsOperator(",")) ThrowUnsupported("a subscript with several indexes", line);
    ExpectOperator("]");
    if (!isSlice) {
      if (!bounds[0]) Fail("expected an index");
      auto item = Make(ExprKind::kGetItem, line);
      item->items.push_back(std::move(node));
      item->items.push_back(std::move(bounds[0]));
      return Deepen(std::move(item));
    }
    auto slice = Make(ExprKind::kSlice, line);
    slice->items.push_back(std::move(node));
    for (auto& bound : bounds) slice->items.push_back(std::move(bound));
    return Deepen(std::move(slice));
  }

  // "(" positional and name=value arguments ")" into `node` (after items[0]).
  void ParseArguments(Expr& node) {
    ExpectOperator("(");
    bool first = true;
    while (!SkipOperator(")")) {
      if (!first) ExpectOperator(",");
      first = false;
      if (SkipOperator(")")) break;
      if (IsOperator("*") || IsOperator("**")) ThrowUnsupported("*args and **kwargs in a call", Current().line);
      if (Current().kind == TokenKind::kName && Peek().kind == TokenKind::kOperator && Peek().text == "=") {
        std::string key = Next().text;
        ++i_;
        node.keywords.emplace_back(std::move(key), ParseExpression(true));
      } else {
        if (!node.keywords.empty()) Fail("Invalid syntax: a positional argument after a keyword argument");
        node.items.push_back(ParseExpression(true));
      }
    }
  }

  ExprPtr ParseCall(ExprPtr callee) {
    auto call = Make(ExprKind::kCall, Current().line);
    call->items.push_back(std::move(callee));
    ParseArguments(*call);
    return Deepen(std::move(call));
  }

  ExprPtr ParseFilterExpression(ExprPtr node) {
    while (true) {
      if (IsOperator("|")) {
        node = ParseFilterChain(std::move(node), /*firstPipe=*/true, /*justOne=*/true);
      } else if (IsName("is")) {
        node = ParseTest(std::move(node));
      } else if (IsOperator("(")) {
        node = ParseCall(std::move(node));
      } else {
        return node;
      }
    }
  }

  // `| name(args) | name ...` applied to `subject` (null in {% filter %} and {% set x | f %}).
  ExprPtr ParseFilterChain(ExprPtr subject, bool firstPipe = true, bool justOne = false) {
    bool needPipe = firstPipe;
    do {
      if (needPipe) ExpectOperator("|");
      needPipe = true;
      const int line = Current().line;
      std::string name = ExpectName();
      while (SkipOperator(".")) name += "." + ExpectName();
      CheckName(name, /*isFilter=*/true, line);
      auto filter = Make(ExprKind::kFilter, line);
      filter->name = std::move(name);
      filter->items.push_back(std::move(subject));
      if (IsOperator("(")) ParseArguments(*filter);
      subject = Deepen(std::move(filter));
    } while (!justOne && IsOperator("|"));
    return subject;
  }

  ExprPtr ParseTest(ExprPtr subject) {
    const int line = Next().line;  // "is"
    const bool negated = SkipName("not");
    const std::string name = ExpectName();
    CheckName(name, /*isFilter=*/false, line);
    auto test = Make(ExprKind::kTest, line);
    test->name = name;
    test->negated = negated;
    test->items.push_back(std::move(subject));
    if (IsOperator("(")) {
      ParseArguments(*test);
    } else {
      // Jinja allows one argument without parentheses: `is divisibleby 3`, `is sameas none`.
      const Token& c = Current();
      const bool startsArgument =
          c.kind == TokenKind::kName || c.kind == TokenKind::kString || c.kind == TokenKind::kInt ||
          c.kind == TokenKind::kFloat || IsOperator("[") || IsOperator("{");
      if (startsArgument && !IsName("else") && !IsName("or") && !IsName("and")) {
        if (IsName("is")) Fail("You cannot chain multiple tests with is");
        test->items.push_back(ParsePostfix(ParsePrimary()));
      }
    }
    return Deepen(std::move(test));
  }

  // An unknown filter or test outside a soft frame fails the template; inside one it is left
  // for the renderer, which fails only if it is reached. Names in the left operand of a
  // conditional expression wait in checkedNames_ until its `if` shows the frame is soft.
  void CheckName(const std::string& name, bool isFilter, int line) {
    const bool known = isFilter ? IsJinjaFilter(name) : IsJinjaTest(name);
    if (known || InSoftFrame()) return;
    checkedNames_.push_back({name, isFilter, line});
  }
  void ReportUnknownNames() {
    if (checkedNames_.empty()) return;
    const CheckedName& first = checkedNames_.front();
    ThrowTemplateError(fmt::format("No {} named '{}'.", first.isFilter ? "filter" : "test", first.name), first.line);
  }
  struct CheckedName {
    std::string name;
    bool isFilter;
    int line;
  };
  std::vector<CheckedName> checkedNames_;
  std::vector<bool> softFrames_;

  std::vector<Token> t_;
  size_t i_ = 0;
  int nesting_ = 0;
  int loopDepth_ = 0;
};

}  // namespace

ParsedTemplate ParseTemplate(std::string_view source) {
  Lexer lexer(NormalizeSource(source));
  Parser parser(lexer.Run());
  return parser.Run();
}

bool IsJinjaFilter(std::string_view name) {
  // Jinja 3.1's filters (jinja2/filters.py FILTERS), tojson included.
  static constexpr std::array<std::string_view, 54> kFilters = {
      "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
      "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "join", "last",
      "length", "list", "lower", "items", "map", "min", "max", "pprint", "random", "reject", "rejectattr",
      "replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags",
      "sum", "title", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap",
      "xmlattr", "tojson"};
  return std::find(kFilters.begin(), kFilters.end(), name) != kFilters.end();
}

bool IsJinjaTest(std::string_view name) {
  // Jinja 3.1's tests (jinja2/tests.py TESTS).
  static constexpr std::array<std::string_view, 39> kTests = {
      "odd", "even", "divisibleby", "defined", "undefined", "filter", "test", "none", "boolean", "false", "true",
      "integer", "float", "lower", "upper", "string", "mapping", "number", "sequence", "iterable", "callable",
      "sameas", "escaped", "in", "==", "eq", "equalto", "!=", "ne", ">", "gt", "greaterthan", "ge", ">=", "<",
      "lt", "lessthan", "<=", "le"};
  return std::find(kTests.begin(), kTests.end(), name) != kTests.end();
}

}  // namespace wb::chat
