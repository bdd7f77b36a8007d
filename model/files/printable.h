// Text from a file, made safe to put in a message or on a terminal.
//
// Contract: Printable(s) returns s with control characters, DEL and bytes that are not part
// of valid UTF-8 written as \xNN (backslash and quote escaped too), cut after maxBytes input
// bytes with "..." appended. Valid UTF-8 (tokenizer pieces, names) passes through unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace wb {

std::string Printable(std::string_view text, size_t maxBytes = 120);

// Whether the bytes are valid UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view text);

// A shape or a list of dims as "[a, b, c]".
std::string ShapeText(std::span<const uint64_t> shape);

// A value JSON cannot hold (RFC 8259, section 6, has no NaN or infinity; nlohmann writes them
// as null, which reads back as "no value"), as a string that reads back exactly: "inf",
// "-inf", "nan" for the default quiet NaN, and any other NaN (a payload, a sign) as
// "nan(0x7fc00001)" with its bits, 8 hex digits when the value is an f32, 16 for an f64.
// `value` must be inf or NaN.
std::string NonFiniteName(double value, bool isF32);

}  // namespace wb
