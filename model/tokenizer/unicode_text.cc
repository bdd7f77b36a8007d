#include "model/tokenizer/unicode_text.h"

#include <algorithm>

namespace wb::tokenizer {

namespace {

struct CodePointRange {
  uint32_t first;
  uint32_t last;
};

#include "model/tokenizer/unicode_ranges.inc"

template <size_t N>
bool InRanges(const CodePointRange (&ranges)[N], uint32_t cp) {
  // The first range whose last code point is >= cp; cp is inside it or in no range.
  const CodePointRange* it =
      std::lower_bound(ranges, ranges + N, cp, [](const CodePointRange& r, uint32_t v) { return r.last < v; });
  return it != ranges + N && it->first <= cp;
}

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length and code point of the well-formed sequence at text[offset], or length 0 (RFC 3629's
// table of well-formed byte sequences).
size_t DecodeOne(std::string_view text, size_t offset, uint32_t& cp) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[offset + i]); };
  const size_t left = text.size() - offset;
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  size_t length = 0;
  uint32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2, min = 0x80, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3, min = 0x800, cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4, min = 0x10000, cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (left < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if (!IsContinuation(byte(i))) return 0;
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return length;
}

struct ByteTable {
  std::array<std::string, 256> toUnicode;
  std::array<int, 512> fromUnicode{};  // every mapped code point is below 0x144

  ByteTable() {
    fromUnicode.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      AppendUtf8(toUnicode[b], cp);
      fromUnicode[cp] = b;
    }
  }
};

const ByteTable& Bytes() {
  static const ByteTable table;
  return table;
}

}  // namespace

std::vector<TextChar> DecodeUtf8Lenient(std::string_view text) {
  std::vector<TextChar> chars;
  chars.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) {
    uint32_t cp = 0;
    size_t length = DecodeOne(text, offset, cp);
    if (length == 0) {
      length = 1;
      cp = kInvalidCodePoint;
    }
    chars.push_back({cp, static_cast<uint32_t>(offset), static_cast<uint32_t>(length)});
    offset += length;
  }
  return chars;
}

size_t Utf8CharLength(std::string_view text, size_t offset) {
  uint32_t cp = 0;
  const size_t length = DecodeOne(text, offset, cp);
  return length == 0 ? 1 : length;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool IsLetter(uint32_t cp) { return InRanges(kLetterRanges, cp); }
bool IsNumber(uint32_t cp) { return InRanges(kNumberRanges, cp); }
bool IsPunctuation(uint32_t cp) { return InRanges(kPunctuationRanges, cp); }
bool IsWhitespace(uint32_t cp) { return InRanges(kWhitespaceRanges, cp); }
const char* UnicodeTablesVersion() { return kUnicodeVersion; }

const std::string& ByteToUnicode(uint8_t byte) { return Bytes().toUnicode[byte]; }

int UnicodeToByte(uint32_t cp) { return cp < 512 ? Bytes().fromUnicode[cp] : -1; }

}  // namespace wb::tokenizer
