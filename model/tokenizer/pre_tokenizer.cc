#include "model/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "model/tokenizer/unicode_text.h"

namespace wb::tokenizer {

namespace {

// A character's classes, looked up once per text.
enum : uint8_t { kL = 1, kN = 2, kS = 4, kP = 8, kM = 16, kUpper = 32, kLower = 64 };

uint8_t ClassesOf(uint32_t cp) {
  if (cp == kInvalidCodePoint) return 0;
  if (cp < 0x80) {  // ASCII without ICU
    if (cp >= 'A' && cp <= 'Z') return kL | kUpper;
    if (cp >= 'a' && cp <= 'z') return kL | kLower;
    if (cp >= '0' && cp <= '9') return kN;
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return kS;
    return IsPunctuation(cp) ? kP : 0;
  }
  return (IsLetter(cp) ? kL : 0) | (IsNumber(cp) ? kN : 0) | (IsWhitespace(cp) ? kS : 0) |
         (IsPunctuation(cp) ? kP : 0) | (IsMark(cp) ? kM : 0) | (IsUpperOrOtherLetterOrMark(cp) ? kUpper : 0) |
         (IsLowerOrOtherLetterOrMark(cp) ? kLower : 0);
}

struct Chars {
  std::vector<TextChar> chars;
  std::vector<uint8_t> classes;

  explicit Chars(std::string_view text) : chars(DecodeUtf8Lenient(text)) {
    classes.reserve(chars.size());
    for (const TextChar& c : chars) classes.push_back(ClassesOf(c.codePoint));
  }
  uint32_t cp(size_t i) const { return chars[i].codePoint; }
  bool L(size_t i) const { return classes[i] & kL; }
  bool N(size_t i) const { return classes[i] & kN; }
  bool S(size_t i) const { return classes[i] & kS; }
  bool P(size_t i) const { return classes[i] & kP; }
  bool LetterOrMark(size_t i) const { return classes[i] & (kL | kM); }                 // [\p{L}\p{M}]
  bool Upper(size_t i) const { return classes[i] & kUpper; }                          // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
  bool Lower(size_t i) const { return classes[i] & kLower; }                          // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
  bool Other(size_t i) const { return (classes[i] & (kL | kN | kS)) == 0; }           // [^\s\p{L}\p{N}]
  bool OtherNoMark(size_t i) const { return (classes[i] & (kL | kM | kN | kS)) == 0; }  // [^\s\p{L}\p{M}\p{N}]
  bool NewLine(size_t i) const { return cp(i) == '\r' || cp(i) == '\n'; }
  bool NewLineOrSlash(size_t i) const { return NewLine(i) || cp(i) == '/'; }
  // [^\r\n\p{L}\p{N}]
  bool WordPrefix(size_t i) const { return !NewLine(i) && (classes[i] & (kL | kN)) == 0; }
};

// A pattern: the length in characters of its match at `pos` (text ends at `end`), 0 for none.
using Matcher = size_t (*)(const Chars& t, size_t pos, size_t end);

size_t RunOf(const Chars& t, size_t pos, size_t end, bool (Chars::*in)(size_t) const) {
  size_t i = pos;
  while (i < end && (t.*in)(i)) ++i;
  return i - pos;
}

// 's|'t|'re|'ve|'m|'ll|'d, lower case only or (?i:...) with any case.
size_t Contraction(const Chars& t, size_t pos, size_t end, bool anyCase) {
  if (t.cp(pos) != '\'' || pos + 1 >= end) return 0;
  const auto lower = [&](size_t i) -> uint32_t {
    const uint32_t c = t.cp(i);
    return anyCase && c >= 'A' && c <= 'Z' ? c + 32 : c;
  };
  const uint32_t a = lower(pos + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= end) return 0;
  const uint32_t b = lower(pos + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S): the whitespace run, less its last character when a non-space follows (the
// backtracking that leaves the last space to prefix the next word); 0 when that leaves nothing.
size_t SpacesNotBeforeNonSpace(const Chars& t, size_t pos, size_t end) {
  const size_t run = RunOf(t, pos, end, &Chars::S);
  if (run == 0) return 0;
  if (pos + run == end) return run;
  return run - 1;
}

// ' ?' followed by a non-empty run of `in`.
size_t OptionalSpaceThenRun(const Chars& t, size_t pos, size_t end, bool (Chars::*in)(size_t) const) {
  const size_t start = t.cp(pos) == ' ' ? pos + 1 : pos;
  const size_t run = start < end ? RunOf(t, start, end, in) : 0;
  return run == 0 ? 0 : start - pos + run;
}

// The last alternatives of the Llama 3 pattern and its relatives: \s*[\r\n]+|\s+(?!\S)|\s+.
// \s*[\r\n]+ takes the whitespace run up to and including its last line break.
size_t TrailingWhitespace(const Chars& t, size_t pos, size_t end) {
  const size_t run = RunOf(t, pos, end, &Chars::S);
  for (size_t i = run; i > 0; --i) {
    if (t.NewLine(pos + i - 1)) return i;
  }
  if (size_t n = SpacesNotBeforeNonSpace(t, pos, end)) return n;
  return run;
}

size_t Gpt2(const Chars& t, size_t pos, size_t end) {
  if (size_t n = Contraction(t, pos, end, /*anyCase=*/false)) return n;
  if (size_t n = OptionalSpaceThenRun(t, pos, end, &Chars::L)) return n;
  if (size_t n = OptionalSpaceThenRun(t, pos, end, &Chars::N)) return n;
  if (size_t n = OptionalSpaceThenRun(t, pos, end, &Chars::Other)) return n;
  if (size_t n = SpacesNotBeforeNonSpace(t, pos, end)) return n;
  return RunOf(t, pos, end, &Chars::S);
}

// The Llama 3 pattern and its relatives; kMarks: Qwen3.5's, which counts marks with letters.
template <size_t kMaxDigits, bool kMarks>
size_t Llama3Family(const Chars& t, size_t pos, size_t end) {
  if (size_t n = Contraction(t, pos, end, /*anyCase=*/true)) return n;
  const auto word = kMarks ? &Chars::LetterOrMark : &Chars::L;
  // [^\r\n\p{L}\p{N}]?\p{L}+   (Qwen3.5: [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+)
  if (t.WordPrefix(pos) && pos + 1 < end && (t.*word)(pos + 1)) return 1 + RunOf(t, pos + 1, end, word);
  if ((t.*word)(pos)) return RunOf(t, pos, end, word);
  // \p{N}{1,3} (Llama 3) or \p{N} (Qwen2)
  if (t.N(pos)) {
    size_t n = 0;
    while (n < kMaxDigits && pos + n < end && t.N(pos + n)) ++n;
    return n;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'   (Qwen3.5: [^\s\p{L}\p{M}\p{N}])
  if (size_t n = OptionalSpaceThenRun(t, pos, end, kMarks ? &Chars::OtherNoMark : &Chars::Other)) {
    return n + RunOf(t, pos + n, end, &Chars::NewLine);
  }
  return TrailingWhitespace(t, pos, end);
}

// Tekken's cased words, from the first alternatives of its pattern:
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// A backtracking engine explores the first alternative (with the prefix, then without) before
// the second; the greedy upper-case run gives back characters until a lower-case one follows.
size_t UpperThenLower(const Chars& t, size_t start, size_t end) {
  const size_t upper = RunOf(t, start, end, &Chars::Upper);
  for (size_t k = upper + 1; k-- > 0;) {
    if (start + k < end && t.Lower(start + k)) return k + RunOf(t, start + k, end, &Chars::Lower);
  }
  return 0;
}
size_t UpperThenOptionalLower(const Chars& t, size_t start, size_t end) {
  const size_t upper = RunOf(t, start, end, &Chars::Upper);
  return upper == 0 ? 0 : upper + RunOf(t, start + upper, end, &Chars::Lower);
}

size_t Tekken(const Chars& t, size_t pos, size_t end) {
  const bool prefix = t.WordPrefix(pos) && pos + 1 < end;
  for (auto cased : {UpperThenLower, UpperThenOptionalLower}) {
    if (prefix) {
      if (size_t n = cased(t, pos + 1, end)) return 1 + n;
    }
    if (size_t n = cased(t, pos, end)) return n;
  }
  if (t.N(pos)) return 1;  // \p{N}
  // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
  if (size_t n = OptionalSpaceThenRun(t, pos, end, &Chars::Other)) {
    return n + RunOf(t, pos + n, end, &Chars::NewLineOrSlash);
  }
  return TrailingWhitespace(t, pos, end);
}

size_t SingleNumber(const Chars& t, size_t pos, size_t) { return t.N(pos) ? 1 : 0; }
size_t Numbers(const Chars& t, size_t pos, size_t end) { return RunOf(t, pos, end, &Chars::N); }

// [\p{P}\$\+<=>\^~\|]+
bool DefaultPunctuation(const Chars& t, size_t i) {
  if (t.P(i)) return true;
  switch (t.cp(i)) {
    case '$': case '+': case '<': case '=': case '>': case '^': case '~': case '|': return true;
    default: return false;
  }
}
size_t DefaultPunctuationRun(const Chars& t, size_t pos, size_t end) {
  size_t i = pos;
  while (i < end && DefaultPunctuation(t, i)) ++i;
  return i - pos;
}

// [0-9][0-9][0-9]
size_t ThreeAsciiDigits(const Chars& t, size_t pos, size_t end) {
  if (pos + 3 > end) return 0;
  for (size_t i = pos; i < pos + 3; ++i) {
    if (t.cp(i) < '0' || t.cp(i) > '9') return 0;
  }
  return 3;
}

std::vector<Matcher> ChainOf(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::kGpt2: return {Gpt2};
    case PreTokenizerKind::kLlama3: return {Llama3Family<3, false>};
    case PreTokenizerKind::kQwen2: return {Llama3Family<1, false>};
    case PreTokenizerKind::kQwen35: return {Llama3Family<1, true>};
    case PreTokenizerKind::kTekken: return {Tekken};
    case PreTokenizerKind::kSmolLm: return {SingleNumber, Gpt2};
    case PreTokenizerKind::kDefault: return {DefaultPunctuationRun, Gpt2, Numbers, ThreeAsciiDigits};
  }
  return {Gpt2};
}

struct Span {
  size_t begin;  // characters
  size_t end;
};

}  // namespace

const char* PreTokenizerName(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::kGpt2: return "gpt-2";
    case PreTokenizerKind::kLlama3: return "llama3";
    case PreTokenizerKind::kQwen2: return "qwen2";
    case PreTokenizerKind::kSmolLm: return "smollm";
    case PreTokenizerKind::kTekken: return "tekken";
    case PreTokenizerKind::kQwen35: return "qwen35";
    case PreTokenizerKind::kDefault: return "default";
  }
  return "default";
}

std::optional<GgufPreTokenizer> PreTokenizerFromGgufName(std::string_view name) {
  // The groups of llama_vocab::impl::load in llama.cpp's src/llama-vocab.cpp whose regexes are
  // the patterns above (llm_tokenizer_bpe's constructor). Llama 3's and Tekken's groups also
  // set ignore_merges and add_bos there.
  const auto in = [&](std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (in({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"})) {
    return GgufPreTokenizer{PreTokenizerKind::kLlama3, true, true};
  }
  if (in({"dbrx", "smaug-bpe"})) return GgufPreTokenizer{PreTokenizerKind::kLlama3, false, false};
  if (in({"tekken"})) return GgufPreTokenizer{PreTokenizerKind::kTekken, true, true};
  if (in({"gpt-2", "phi-2", "mpt", "olmo", "jais", "exaone4", "jina-es", "jina-de", "gigachat", "jina-v2-es",
          "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "trillion", "granite-docling"})) {
    return GgufPreTokenizer{PreTokenizerKind::kGpt2, false, false};
  }
  if (in({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open"})) {
    return GgufPreTokenizer{PreTokenizerKind::kQwen2, false, false};
  }
  if (in({"qwen35"})) return GgufPreTokenizer{PreTokenizerKind::kQwen35, false, false};
  if (in({"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", "mellum2"})) {
    return GgufPreTokenizer{PreTokenizerKind::kSmolLm, false, false};
  }
  if (name.empty() || name == "default") return GgufPreTokenizer{PreTokenizerKind::kDefault, false, false};
  return std::nullopt;
}

std::string_view Gpt2Pattern() {
  return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
}
std::string_view Llama3Pattern() {
  return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}
std::string_view Qwen2Pattern() {
  return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

std::string_view Qwen35Pattern() {
  return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}
std::string_view TekkenPattern() {
  return R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

std::vector<std::string_view> PreTokenize(PreTokenizerKind kind, std::string_view text) {
  const Chars t(text);
  std::vector<Span> pieces;
  if (!t.chars.empty()) pieces.push_back({0, t.chars.size()});
  for (Matcher match : ChainOf(kind)) {
    std::vector<Span> next;
    next.reserve(pieces.size());
    for (const Span& piece : pieces) {
      size_t unmatched = piece.begin;
      size_t pos = piece.begin;
      while (pos < piece.end) {
        const size_t n = match(t, pos, piece.end);
        if (n == 0) {
          ++pos;
          continue;
        }
        if (unmatched < pos) next.push_back({unmatched, pos});
        next.push_back({pos, pos + n});
        pos += n;
        unmatched = pos;
      }
      if (unmatched < piece.end) next.push_back({unmatched, piece.end});
    }
    pieces = std::move(next);
  }
  std::vector<std::string_view> out;
  out.reserve(pieces.size());
  for (const Span& s : pieces) {
    const size_t first = t.chars[s.begin].offset;
    const TextChar& last = t.chars[s.end - 1];
    out.push_back(text.substr(first, last.offset + last.length - first));
  }
  return out;
}

}  // namespace wb::tokenizer
