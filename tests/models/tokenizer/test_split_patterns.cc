// The hand-written pre-tokenizers (model/tokenizer/pre_tokenizer.cc) against the published
// patterns themselves, run by an independent regex engine: ICU's (uregex, a backtracking
// engine with leftmost-first alternation, like the Oniguruma engine HF tokenizers uses).
// Each pattern's matches and the text between them are the pieces (HF's Split with behavior
// "Isolated"); a chain applies each pattern to the previous one's pieces (llama.cpp's
// unicode_regex_split). ICU's \s is narrower than the White_Space property the engines of the
// tokenizers use, so \s and \S are spelled \p{White_Space} and \P{White_Space} here.
//
// The texts: the shared awkward ones that are valid UTF-8, and 3000 random strings per pattern
// over an alphabet of every class the patterns tell apart (cased and uncased letters, a
// title-case and a modifier letter, combining marks, digits of several scripts, spaces, line
// breaks, punctuation, apostrophes and contraction letters, a slash, an emoji).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <unicode/uregex.h>
#include <unicode/utext.h>

#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/unicode_text.h"
#include "tokenizer_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_split_patterns {

using namespace wb::tokenizer;
using Pieces = std::vector<std::string>;

namespace {

std::string WithWhiteSpaceProperty(std::string_view pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size() && (pattern[i + 1] == 's' || pattern[i + 1] == 'S')) {
      out += pattern[i + 1] == 's' ? "\\p{White_Space}" : "\\P{White_Space}";
      ++i;
    } else if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      out += pattern.substr(i, 2);
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

// One pattern's Isolated split of each piece.
Pieces IcuSplit(const std::string& pattern, const Pieces& pieces) {
  UErrorCode status = U_ZERO_ERROR;
  UParseError parseError;
  URegularExpression* regex =
      uregex_openC(WithWhiteSpaceProperty(pattern).c_str(), 0, &parseError, &status);
  REQUIRE_MESSAGE(U_SUCCESS(status), "ICU cannot compile ", pattern);
  Pieces out;
  for (const std::string& piece : pieces) {
    UText* text = utext_openUTF8(nullptr, piece.data(), static_cast<int64_t>(piece.size()), &status);
    uregex_setUText(regex, text, &status);
    int64_t unmatched = 0;
    while (uregex_findNext(regex, &status)) {
      const int64_t start = uregex_start64(regex, 0, &status);
      const int64_t end = uregex_end64(regex, 0, &status);
      if (end == start) continue;
      if (start > unmatched) out.push_back(piece.substr(unmatched, start - unmatched));
      out.push_back(piece.substr(start, end - start));
      unmatched = end;
    }
    if (unmatched < static_cast<int64_t>(piece.size())) out.push_back(piece.substr(unmatched));
    utext_close(text);
  }
  uregex_close(regex);
  REQUIRE(U_SUCCESS(status));
  return out;
}

Pieces IcuChain(const std::vector<std::string>& patterns, const std::string& text) {
  Pieces pieces;
  if (!text.empty()) pieces.push_back(text);
  for (const std::string& p : patterns) pieces = IcuSplit(p, pieces);
  return pieces;
}

Pieces Ours(PreTokenizerKind kind, const std::string& text) {
  Pieces out;
  for (std::string_view p : PreTokenize(kind, text)) out.emplace_back(p);
  return out;
}

// A deterministic generator (SplitMix64) of strings over the alphabet.
struct Texts {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::string Make() {
    static const std::vector<std::string> alphabet = {
        "a", "b", "s", "t", "l", "d", "e", "r", "v", "m", "A", "S", "T", "L", "D", "E", "é", "É", "ß", "ω", "Ω",
        "ǅ" /* Lt */, "ʰ" /* Lm */, "中", "\u0301" /* Mn */, "\u0903" /* Mc */, "्", "0", "7", "٣", "Ⅻ", "½",
        " ", " ", "  ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000", ".", ",", "!", "'", "'", "/", "-", "$",
        "+", "<", "=", "|", "~", "^", "«", "🙂", "_", "(", "\u2028"};
    std::string out;
    const int length = static_cast<int>(Next() % 16);
    for (int i = 0; i < length; ++i) out += alphabet[Next() % alphabet.size()];
    return out;
  }
};

std::vector<std::string> TestTexts() {
  std::vector<std::string> texts;
  for (const std::string& t : tokfx::AwkwardTexts()) {
    if (!FirstInvalidUtf8Byte(t) && t.find('\0') == std::string::npos) texts.push_back(t);
  }
  Texts random;
  for (int i = 0; i < 3000; ++i) texts.push_back(random.Make());
  return texts;
}

void CheckAgainstIcu(PreTokenizerKind kind, const std::vector<std::string>& patterns) {
  int differences = 0;
  for (const std::string& text : TestTexts()) {
    const Pieces expected = IcuChain(patterns, text);
    const Pieces got = Ours(kind, text);
    if (got != expected && ++differences <= 5) {
      std::string e, g;
      for (const auto& p : expected) e += "[" + p + "]";
      for (const auto& p : got) g += "[" + p + "]";
      FAIL_CHECK(std::string(PreTokenizerName(kind)), ": '", text, "'\n  ICU:  ", e, "\n  ours: ", g);
    }
  }
  CHECK(differences == 0);
}

const std::string kDefaultPunctuation = R"([\p{P}\$\+<=>\^~\|]+)";
const std::string kLlamaCppGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

}  // namespace

TEST_CASE("gpt-2: GPT-2's pattern") { CheckAgainstIcu(PreTokenizerKind::kGpt2, {std::string(Gpt2Pattern())}); }
TEST_CASE("llama3: Llama 3's pattern") { CheckAgainstIcu(PreTokenizerKind::kLlama3, {std::string(Llama3Pattern())}); }
TEST_CASE("qwen2: Qwen2's pattern") { CheckAgainstIcu(PreTokenizerKind::kQwen2, {std::string(Qwen2Pattern())}); }
TEST_CASE("qwen35: Qwen3.5's pattern") { CheckAgainstIcu(PreTokenizerKind::kQwen35, {std::string(Qwen35Pattern())}); }
TEST_CASE("tekken: Mistral Nemo's pattern") { CheckAgainstIcu(PreTokenizerKind::kTekken, {std::string(TekkenPattern())}); }
TEST_CASE("smollm: digits one by one, then GPT-2's pattern") {
  CheckAgainstIcu(PreTokenizerKind::kSmolLm, {R"(\p{N})", std::string(Gpt2Pattern())});
}
TEST_CASE("default: llama.cpp's chain of four") {
  CheckAgainstIcu(PreTokenizerKind::kDefault, {kDefaultPunctuation, kLlamaCppGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"});
}

}  // namespace test_split_patterns
