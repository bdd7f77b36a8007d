// A stage's call layout: the buffers its stage function reads and writes, in slot order,
// and the scalar parameters of one call. The runner and the child's harness compile the
// same layout, so a buffer is found by its enumerator on both sides, never by a string.
//
// A layout is a struct with
//   static constexpr uint32_t kId;                          LayoutId("stage name, version")
//   enum Buffer : uint32_t { kFirst, ..., kBufferCount };   slot i is buffer i
//   static constexpr std::array<const char*, kBufferCount> kNames;   names in reports
//   struct Params { ... };                                  trivially copyable
// The runner stores Params in the region's header; the child refuses a region whose id or
// buffer count is not its layout's (a stale build), as a harness failure.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "shared_layout.h"

namespace wb {

// FNV-1a over the text: a layout's id from its name, the same on both sides.
constexpr uint32_t LayoutId(const char* text) {
  uint32_t hash = 2166136261u;
  for (; *text != '\0'; ++text) hash = (hash ^ static_cast<unsigned char>(*text)) * 16777619u;
  return hash;
}

template <typename L>
concept CallLayout = requires {
  { L::kId } -> std::convertible_to<uint32_t>;
  { L::kBufferCount } -> std::convertible_to<uint32_t>;
  { L::kNames[0] } -> std::convertible_to<const char*>;
  typename L::Params;
} && std::is_trivially_copyable_v<typename L::Params> && sizeof(typename L::Params) <= shm::kParamBytes &&
    L::kNames.size() == L::kBufferCount && L::kBufferCount <= shm::kMaxBuffers;

}  // namespace wb
