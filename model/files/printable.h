// Text from a file, made safe to put in a message or on a terminal.
//
// Contract: Printable(s) returns s with control characters, DEL and bytes that are not part
// of valid UTF-8 written as \xNN (backslash and quote escaped too), cut after maxBytes input
// bytes with "..." appended. Valid UTF-8 (tokenizer pieces, names) passes through unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace wb {

std::string Printable(std::string_view text, size_t maxBytes = 120);

// Whether the bytes are valid UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view text);

}  // namespace wb
