// Streams text that arrives a token at a time, where one token may end inside a UTF-8
// character (byte-level BPE splits characters across tokens): bytes are held back until the
// character they start is complete, so a terminal never shows half of one.
//
// Contract: Write() prints every byte it was given except an unfinished character's, which
// it keeps (at most 3 bytes) for the next call; Flush() prints what is kept. Bytes that can
// never complete a character (a stray continuation byte, a lead byte followed by a
// non-continuation) are printed as they are. Allocates nothing.
#pragma once

#include <cstdio>
#include <string_view>

namespace wb::generate {

class Utf8Stream {
 public:
  void Write(std::string_view bytes, std::FILE* out) {
    for (char c : bytes) {
      const auto b = static_cast<unsigned char>(c);
      if (held_ > 0 && (b & 0xC0) != 0x80) Flush(out);  // the held character will never finish
      if (held_ == 0) {
        const int length = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
        if (length == 1) {
          std::fputc(c, out);
          continue;
        }
        expected_ = length;
      }
      pending_[held_++] = c;
      if (held_ == expected_) Flush(out);
    }
    std::fflush(out);
  }

  void Flush(std::FILE* out) {
    if (held_ > 0) std::fwrite(pending_, 1, static_cast<size_t>(held_), out);
    held_ = 0;
    std::fflush(out);
  }

 private:
  char pending_[4] = {};
  int held_ = 0;
  int expected_ = 0;
};

}  // namespace wb::generate
