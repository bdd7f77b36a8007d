// Escaping of untrusted text for messages; see printable.h.
#include "printable.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace wb {

namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if there is none (RFC 3629).
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;  // at most U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t length = Utf8SequenceLength(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string Printable(std::string_view text, size_t maxBytes) {
  std::string out;
  const size_t end = text.size() < maxBytes ? text.size() : maxBytes;
  for (size_t i = 0; i < end;) {
    const auto c = static_cast<uint8_t>(text[i]);
    const size_t length = Utf8SequenceLength(text, i);
    if (c == '\\' || c == '\'' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (length == 0 || c < 0x20 || c == 0x7F || i + length > end) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  if (end < text.size()) out += "...";
  return out;
}

std::string ShapeText(std::span<const uint64_t> shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string NonFiniteName(double value, bool isF32) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (isF32) {
    const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(value));
    return bits == 0x7FC00000u ? "nan" : fmt::format("nan(0x{:08x})", bits);
  }
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  return bits == 0x7FF8000000000000ull ? "nan" : fmt::format("nan(0x{:016x})", bits);
}

}  // namespace wb
