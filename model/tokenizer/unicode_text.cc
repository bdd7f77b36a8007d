#include "model/tokenizer/unicode_text.h"

#include <algorithm>

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/uversion.h>

namespace wb::tokenizer {

namespace {

// Whether the code point's general category is one of `mask` (ICU's U_GC_*_MASK bits).
bool InCategories(uint32_t cp, uint32_t mask) {
  if (cp > 0x10FFFF) return false;  // kInvalidCodePoint: in no class
  return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & mask) != 0;
}

// A well-formed UTF-8 text through a function of UTF-16 strings (ICU's string form).
template <typename Transform>
std::string ThroughUtf16(std::string_view text, Transform transform) {
  UErrorCode status = U_ZERO_ERROR;
  std::u16string wide(text.size() + 1, u'\0');
  int32_t wideLength = 0;
  u_strFromUTF8(wide.data(), static_cast<int32_t>(wide.size()), &wideLength, text.data(),
                static_cast<int32_t>(text.size()), &status);
  if (U_FAILURE(status)) return std::string(text);
  wide.resize(static_cast<size_t>(wideLength));
  std::u16string result = transform(wide);
  std::string out(result.size() * 3 + 1, '\0');
  int32_t outLength = 0;
  status = U_ZERO_ERROR;
  u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &outLength, result.data(),
              static_cast<int32_t>(result.size()), &status);
  if (U_FAILURE(status)) return std::string(text);
  out.resize(static_cast<size_t>(outLength));
  return out;
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

bool IsLetter(uint32_t cp) { return InCategories(cp, U_GC_L_MASK); }
bool IsNumber(uint32_t cp) { return InCategories(cp, U_GC_N_MASK); }
bool IsPunctuation(uint32_t cp) { return InCategories(cp, U_GC_P_MASK); }
bool IsMark(uint32_t cp) { return InCategories(cp, U_GC_M_MASK); }
bool IsUpperOrOtherLetterOrMark(uint32_t cp) {
  return InCategories(cp, U_GC_LU_MASK | U_GC_LT_MASK | U_GC_LM_MASK | U_GC_LO_MASK | U_GC_M_MASK);
}
bool IsLowerOrOtherLetterOrMark(uint32_t cp) {
  return InCategories(cp, U_GC_LL_MASK | U_GC_LM_MASK | U_GC_LO_MASK | U_GC_M_MASK);
}
bool IsWhitespace(uint32_t cp) {
  return cp <= 0x10FFFF && u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE);
}

std::string UnicodeVersion() {
  UVersionInfo version;
  u_getUnicodeVersion(version);
  char text[U_MAX_VERSION_STRING_LENGTH] = {};
  u_versionToString(version, text);
  return text;
}

namespace {

// Calls `transform` on each maximal well-formed UTF-8 run and copies other bytes as they are.
template <typename Transform>
std::string ForEachWellFormedRun(std::string_view text, Transform transform) {
  std::string out;
  out.reserve(text.size());
  size_t runStart = 0;
  const auto flush = [&](size_t end) {
    if (end > runStart) out += transform(text.substr(runStart, end - runStart));
  };
  for (size_t offset = 0; offset < text.size();) {
    uint32_t cp = 0;
    const size_t length = DecodeOne(text, offset, cp);
    if (length == 0) {
      flush(offset);
      out += text[offset];
      runStart = ++offset;
    } else {
      offset += length;
    }
  }
  flush(text.size());
  return out;
}

const UNormalizer2* NormalizerOf(NormalizationForm form, UErrorCode& status) {
  switch (form) {
    case NormalizationForm::kNfc: return unorm2_getNFCInstance(&status);
    case NormalizationForm::kNfd: return unorm2_getNFDInstance(&status);
    case NormalizationForm::kNfkc: return unorm2_getNFKCInstance(&status);
    case NormalizationForm::kNfkd: return unorm2_getNFKDInstance(&status);
  }
  return unorm2_getNFCInstance(&status);
}

}  // namespace

std::string Normalize(std::string_view text, NormalizationForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* normalizer = NormalizerOf(form, status);
  if (U_FAILURE(status)) return std::string(text);
  return ForEachWellFormedRun(text, [&](std::string_view run) {
    return ThroughUtf16(run, [&](const std::u16string& in) {
      // NFKC and NFKD may grow a character many times over (U+FDFA is 18 code points).
      std::u16string out(in.size() * 18 + 1, u'\0');
      UErrorCode s = U_ZERO_ERROR;
      const int32_t n = unorm2_normalize(normalizer, in.data(), static_cast<int32_t>(in.size()), out.data(),
                                         static_cast<int32_t>(out.size()), &s);
      if (U_FAILURE(s)) return in;
      out.resize(static_cast<size_t>(n));
      return out;
    });
  });
}

std::string ToLower(std::string_view text) {
  // One character at a time: HF's Lowercase maps each char by itself (Rust's char::to_lowercase,
  // full mappings such as U+0130 -> "i\u0307", no final-sigma context).
  std::string out;
  out.reserve(text.size());
  for (const TextChar& c : DecodeUtf8Lenient(text)) {
    const std::string_view one = text.substr(c.offset, c.length);
    if (c.codePoint < 0x80) {
      out += static_cast<char>(c.codePoint >= 'A' && c.codePoint <= 'Z' ? c.codePoint + 32 : c.codePoint);
    } else if (c.codePoint == kInvalidCodePoint) {
      out += one;
    } else {
      out += ThroughUtf16(one, [](const std::u16string& in) {
        std::u16string lower(8, u'\0');  // a full lower-case mapping is at most 3 code points
        UErrorCode s = U_ZERO_ERROR;
        const int32_t n = u_strToLower(lower.data(), static_cast<int32_t>(lower.size()), in.data(),
                                       static_cast<int32_t>(in.size()), "", &s);
        if (U_FAILURE(s)) return in;
        lower.resize(static_cast<size_t>(n));
        return lower;
      });
    }
  }
  return out;
}

std::optional<size_t> FirstInvalidUtf8Byte(std::string_view text) {
  for (size_t offset = 0; offset < text.size();) {
    uint32_t cp = 0;
    const size_t length = DecodeOne(text, offset, cp);
    if (length == 0) return offset;
    offset += length;
  }
  return std::nullopt;
}

const std::string& ByteToUnicode(uint8_t byte) { return Bytes().toUnicode[byte]; }

int UnicodeToByte(uint32_t cp) { return cp < 512 ? Bytes().fromUnicode[cp] : -1; }

}  // namespace wb::tokenizer
