// Little-endian loads from byte spans, for the file parsers and the block decoders.
//
// Contract: LoadLE<T>(p) reads sizeof(T) bytes at p (any alignment) as a little-endian T.
// The caller guarantees the bytes exist; bounds are the cursor's job (byte_cursor.h).
// GGUF and safetensors are little-endian (ggml's docs/gguf.md, safetensors' README.md); the
// workbook builds only on little-endian hosts, which the static_assert enforces.
#pragma once

#include <bit>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace wb {

static_assert(std::endian::native == std::endian::little,
              "the model-file readers assume a little-endian host, like the files they read");

template <typename T>
T LoadLE(const std::byte* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

}  // namespace wb
