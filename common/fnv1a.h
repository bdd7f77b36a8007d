// FNV-1a, 64-bit: the checksum stamped into the workbook's packed data files.
// Offset basis 0xcbf29ce484222325 and prime 0x100000001b3 are the published FNV
// parameters (Fowler, Noll, Vo; IETF draft-eastlake-fnv). It detects corruption, not
// tampering, which is all a data file needs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wb {

inline uint64_t Fnv1a64(const void* data, size_t bytes, uint64_t hash = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace wb
