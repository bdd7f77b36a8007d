// The pre-tokenizers' splits, derived by hand from the published patterns (pre_tokenizer.h),
// the Unicode classes and GPT-2's byte table they rest on.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/unicode_text.h"
#include "tokenizer_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_pre_tokenizers {

using namespace wb::tokenizer;
using Pieces = std::vector<std::string>;

namespace {

Pieces Split(PreTokenizerKind kind, const std::string& text) {
  Pieces out;
  for (std::string_view p : PreTokenize(kind, text)) out.emplace_back(p);
  return out;
}

constexpr PreTokenizerKind kAll[] = {PreTokenizerKind::kGpt2,   PreTokenizerKind::kLlama3, PreTokenizerKind::kQwen2,
                                     PreTokenizerKind::kQwen35, PreTokenizerKind::kTekken, PreTokenizerKind::kSmolLm,
                                     PreTokenizerKind::kDefault};

}  // namespace

TEST_CASE("'Hello world's 12345 !!' under each pattern") {
  const std::string text = "Hello world's 12345 !!";
  CHECK(Split(PreTokenizerKind::kGpt2, text) == Pieces{"Hello", " world", "'s", " 12345", " !!"});
  // \p{N}{1,3} takes no space before it, so the space stands alone (\s+ as the last resort).
  CHECK(Split(PreTokenizerKind::kLlama3, text) == Pieces{"Hello", " world", "'s", " ", "123", "45", " !!"});
  CHECK(Split(PreTokenizerKind::kQwen2, text) == Pieces{"Hello", " world", "'s", " ", "1", "2", "3", "4", "5", " !!"});
  // Digits first: "Hello world's " then GPT-2's pattern inside it leaves the trailing space alone.
  CHECK(Split(PreTokenizerKind::kSmolLm, text) == Pieces{"Hello", " world", "'s", " ", "1", "2", "3", "4", "5", " !!"});
  // Punctuation runs first ("'", "!!"), then GPT-2, then \p{N}+, then three ASCII digits.
  CHECK(Split(PreTokenizerKind::kDefault, text) ==
        Pieces{"Hello", " world", "'", "s", " ", "123", "45", " ", "!!"});
}

TEST_CASE("tekken: words split at a change of case, digits alone, slashes kept after punctuation") {
  // An upper-case run gives back its last letter to a lower-case run that follows it.
  CHECK(Split(PreTokenizerKind::kTekken, "HTTPServer is OK") == Pieces{"HTTPServer", " is", " OK"});
  CHECK(Split(PreTokenizerKind::kTekken, "camelCaseWord") == Pieces{"camel", "Case", "Word"});
  CHECK(Split(PreTokenizerKind::kTekken, "x=12;") == Pieces{"x", "=", "1", "2", ";"});
  CHECK(Split(PreTokenizerKind::kTekken, "a.//b") == Pieces{"a", ".//", "b"});
  CHECK(Split(PreTokenizerKind::kTekken, "I'm") == Pieces{"I", "'m"});  // no contraction rule: "'" leads the word
}

TEST_CASE("qwen35: marks go with letters") {
  // Qwen2's pattern cuts a decomposed "é" in two: the combining accent leads the next word.
  CHECK(Split(PreTokenizerKind::kQwen2, "cafe\u0301s") == Pieces{"cafe", "\u0301s"});
  CHECK(Split(PreTokenizerKind::kQwen35, "cafe\u0301s") == Pieces{"cafe\u0301s"});
  CHECK(Split(PreTokenizerKind::kQwen35, "नमस्ते 12") == Pieces{"नमस्ते", " ", "1", "2"});
}

TEST_CASE("whitespace runs: the last space goes with the next word") {
  CHECK(Split(PreTokenizerKind::kGpt2, "a   b") == Pieces{"a", "  ", " b"});
  CHECK(Split(PreTokenizerKind::kGpt2, "a\n\nb") == Pieces{"a", "\n", "\n", "b"});
  CHECK(Split(PreTokenizerKind::kGpt2, "a  ") == Pieces{"a", "  "});
  CHECK(Split(PreTokenizerKind::kGpt2, "x\t y") == Pieces{"x", "\t", " y"});
  CHECK(Split(PreTokenizerKind::kLlama3, "x   y") == Pieces{"x", "  ", " y"});
  // \s*[\r\n]+ takes the whitespace up to the last line break.
  CHECK(Split(PreTokenizerKind::kLlama3, "a\n\nb") == Pieces{"a", "\n\n", "b"});
  CHECK(Split(PreTokenizerKind::kLlama3, "a \n \n  b") == Pieces{"a", " \n \n", " ", " b"});
  // [^\r\n\p{L}\p{N}]?\p{L}+ lets a tab lead a word.
  CHECK(Split(PreTokenizerKind::kLlama3, "x\ty") == Pieces{"x", "\ty"});
  // ?[^\s\p{L}\p{N}]+[\r\n]* keeps line breaks after punctuation.
  CHECK(Split(PreTokenizerKind::kLlama3, "ok!\n\nnext") == Pieces{"ok", "!\n\n", "next"});
}

TEST_CASE("contractions: case-sensitive in GPT-2, any case in Llama 3 and Qwen2") {
  CHECK(Split(PreTokenizerKind::kGpt2, "I'M it's") == Pieces{"I", "'", "M", " it", "'s"});
  CHECK(Split(PreTokenizerKind::kLlama3, "I'M it's") == Pieces{"I", "'M", " it", "'s"});
  CHECK(Split(PreTokenizerKind::kQwen2, "WE'LL") == Pieces{"WE", "'LL"});
  CHECK(Split(PreTokenizerKind::kGpt2, "we'll've") == Pieces{"we", "'ll", "'ve"});
}

TEST_CASE("Unicode classes: letters of other scripts, marks, numbers") {
  CHECK(Split(PreTokenizerKind::kGpt2, "Привет мир") == Pieces{"Привет", " мир"});
  // Devanagari: the virama and the vowel sign are marks, neither letters nor numbers.
  CHECK(Split(PreTokenizerKind::kGpt2, "नमस्ते") == Pieces{"नमस", "्", "त", "े"});
  CHECK(Split(PreTokenizerKind::kLlama3, "नमस्ते") == Pieces{"नमस", "्त", "े"});
  CHECK(Split(PreTokenizerKind::kQwen2, "٣٤") == Pieces{"٣", "٤"});  // Arabic-Indic digits are \p{N}
  CHECK(Split(PreTokenizerKind::kGpt2, "你好，世界") == Pieces{"你好", "，", "世界"});
  CHECK(Split(PreTokenizerKind::kGpt2, "a\u00a0b") == Pieces{"a", "\u00a0", "b"});  // NBSP is \s, not " "
}

TEST_CASE("invalid UTF-8 bytes are characters of no class") {
  CHECK(Split(PreTokenizerKind::kGpt2, "a\xff" "b") == Pieces{"a", "\xff", "b"});
  CHECK(Split(PreTokenizerKind::kLlama3, "a\xff" "b") == Pieces{"a", "\xff" "b"});
  CHECK(Split(PreTokenizerKind::kGpt2, "\xc3 x") == Pieces{"\xc3", " x"});  // a lead byte without its tail
}

TEST_CASE("the pieces always make up the text") {
  for (PreTokenizerKind kind : kAll) {
    for (const std::string& text : tokfx::AwkwardTexts()) {
      std::string joined;
      for (std::string_view p : PreTokenize(kind, text)) {
        CHECK(!p.empty());
        joined += p;
      }
      CHECK(joined == text);
    }
  }
}

TEST_CASE("GGUF names map as llama.cpp maps them") {
  CHECK(PreTokenizerFromGgufName("llama-bpe")->kind == PreTokenizerKind::kLlama3);
  CHECK(PreTokenizerFromGgufName("llama-bpe")->ignoreMerges);
  CHECK(PreTokenizerFromGgufName("gpt-2")->kind == PreTokenizerKind::kGpt2);
  CHECK(PreTokenizerFromGgufName("qwen2")->kind == PreTokenizerKind::kQwen2);
  CHECK(PreTokenizerFromGgufName("smollm")->kind == PreTokenizerKind::kSmolLm);
  CHECK(PreTokenizerFromGgufName("olmo")->kind == PreTokenizerKind::kGpt2);
  CHECK(PreTokenizerFromGgufName("tekken")->kind == PreTokenizerKind::kTekken);
  CHECK(PreTokenizerFromGgufName("tekken")->ignoreMerges);
  CHECK(PreTokenizerFromGgufName("tekken")->addsBos);
  CHECK(PreTokenizerFromGgufName("qwen35")->kind == PreTokenizerKind::kQwen35);
  CHECK(!PreTokenizerFromGgufName("qwen2")->addsBos);
  CHECK(PreTokenizerFromGgufName("")->kind == PreTokenizerKind::kDefault);
  CHECK(!PreTokenizerFromGgufName("mystery").has_value());
}

TEST_CASE("Unicode classes (ICU) and GPT-2's byte table") {
  CHECK(IsMark(0x0301));
  CHECK(!IsLetter(0x0301));
  CHECK(IsUpperOrOtherLetterOrMark(U'ǅ'));  // Lt
  CHECK(!IsLowerOrOtherLetterOrMark(U'ǅ'));
  CHECK(IsLowerOrOtherLetterOrMark(U'中'));  // Lo is both
  CHECK(IsUpperOrOtherLetterOrMark(U'中'));
  CHECK(!IsLetter(kInvalidCodePoint));
  CHECK(IsLetter(U'Ж'));
  CHECK(IsLetter(U'中'));
  CHECK(!IsLetter(U'1'));
  CHECK(IsNumber(U'٣'));
  CHECK(IsNumber(U'Ⅻ'));  // Nl
  CHECK(IsWhitespace(0x3000));
  CHECK(!IsWhitespace(0x1C));  // Python's isspace says yes; White_Space says no
  CHECK(IsPunctuation(U'«'));
  // bytes_to_unicode: printable Latin-1 stands for itself; the rest count up from U+0100.
  CHECK(ByteToUnicode('A') == "A");
  CHECK(ByteToUnicode(0x00) == "\u0100");
  CHECK(ByteToUnicode(' ') == "\u0120");  // "Ġ": 0x00-0x20 are the first 33
  CHECK(ByteToUnicode('\n') == "\u010A");  // "Ċ"
  CHECK(ByteToUnicode(0x7F) == "\u0121");  // the 34th
  CHECK(ByteToUnicode(0xAD) == "\u0143");  // soft hyphen, the last one mapped
  CHECK(ByteToUnicode(0xAE) == "\u00AE");
  for (int b = 0; b < 256; ++b) {
    const auto chars = DecodeUtf8Lenient(ByteToUnicode(static_cast<uint8_t>(b)));
    REQUIRE(chars.size() == 1);
    CHECK(UnicodeToByte(chars[0].codePoint) == b);
  }
}

}  // namespace test_pre_tokenizers
