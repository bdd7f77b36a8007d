// A read position inside a byte span that never reads past the end.
//
// Contract: every Read/Take either succeeds and advances, or fails and leaves the position
// unchanged; nothing is read out of bounds. Values are little-endian (little_endian.h). The
// parsers turn a failed read into an error naming the field and the offset (ReportShort).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "little_endian.h"

namespace wb {

class ByteCursor {
 public:
  explicit ByteCursor(std::span<const std::byte> bytes) : bytes_(bytes) {}

  uint64_t offset() const { return offset_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - offset_; }

  template <typename T>
  bool Read(T& out) {
    if (sizeof(T) > remaining()) return false;
    out = LoadLE<T>(bytes_.data() + offset_);
    offset_ += sizeof(T);
    return true;
  }

  bool Take(uint64_t count, std::span<const std::byte>& out) {
    if (count > remaining()) return false;
    out = bytes_.subspan(static_cast<size_t>(offset_), static_cast<size_t>(count));
    offset_ += count;
    return true;
  }

 private:
  std::span<const std::byte> bytes_;
  uint64_t offset_ = 0;
};

}  // namespace wb
