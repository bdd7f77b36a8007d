// The Unicode the tokenizers need: lenient UTF-8 decoding, the character classes of the
// pre-tokenizer patterns, Unicode normalization, and GPT-2's byte-to-unicode table.
//
// Contract: DecodeUtf8Lenient never fails. A well-formed UTF-8 sequence (RFC 3629: no overlong
// forms, no surrogates, at most U+10FFFF) is one character; any other byte is one character of
// its own, with code point kInvalidCodePoint, which is in no class (not a letter, number,
// punctuation, mark or whitespace). Classes follow the regex engines behind the tokenizers
// (Oniguruma for HF tokenizers, llama.cpp's src/unicode.cpp): \p{L} = Lu Ll Lt Lm Lo,
// \p{N} = Nd Nl No, \p{P} = Pc Pd Ps Pe Pi Pf Po, \p{M} = Mn Mc Me, \s = the White_Space
// property. The data is ICU's (u_charType, u_hasBinaryProperty; UnicodeVersion() names the
// Unicode version of the ICU the workbook is linked with).
// Normalize applies a Unicode normalization form (UAX #15) to each well-formed run of the text;
// bytes that are not UTF-8 pass through unchanged. ToLower maps each character by itself to its
// full Unicode lower case (ICU's u_strToLower, root locale, one character at a time: Rust's
// char::to_lowercase, which HF's Lowercase uses; no final-sigma rule), likewise.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb::tokenizer {

constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFF;

struct TextChar {
  uint32_t codePoint = kInvalidCodePoint;
  uint32_t offset = 0;  // first byte in the text
  uint32_t length = 0;  // bytes, 1 to 4
};

std::vector<TextChar> DecodeUtf8Lenient(std::string_view text);
// The bytes of one character starting at text[offset] (1 for an invalid byte); at least 1.
size_t Utf8CharLength(std::string_view text, size_t offset);
void AppendUtf8(std::string& out, uint32_t codePoint);

bool IsLetter(uint32_t codePoint);
bool IsNumber(uint32_t codePoint);
bool IsPunctuation(uint32_t codePoint);
bool IsWhitespace(uint32_t codePoint);
bool IsMark(uint32_t codePoint);
// Tekken's split (pre_tokenizer.h) distinguishes letter cases: Lu Lt Lm Lo or a mark, and
// Ll Lm Lo or a mark.
bool IsUpperOrOtherLetterOrMark(uint32_t codePoint);
bool IsLowerOrOtherLetterOrMark(uint32_t codePoint);
std::string UnicodeVersion();

enum class NormalizationForm { kNfc, kNfd, kNfkc, kNfkd };
std::string Normalize(std::string_view text, NormalizationForm form);
std::string ToLower(std::string_view text);
// Whether every byte of text belongs to a well-formed UTF-8 sequence; else the offset of the
// first byte that does not.
std::optional<size_t> FirstInvalidUtf8Byte(std::string_view text);

// GPT-2's reversible byte <-> printable character map (bytes_to_unicode in openai/gpt-2's
// src/encoder.py): the printable Latin-1 bytes '!'..'~', '¡'..'¬', '®'..'ÿ' stand for
// themselves; the other 68 bytes, in increasing order, become U+0100, U+0101, ...
// ByteToUnicode(b) is that character's UTF-8; UnicodeToByte gives -1 for a code point not in
// the table.
const std::string& ByteToUnicode(uint8_t byte);
int UnicodeToByte(uint32_t codePoint);

}  // namespace wb::tokenizer
