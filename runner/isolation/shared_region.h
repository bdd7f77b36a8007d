// The runner's side of the shared region (layout in shared_layout.h).
//
// Contract: Create<Layout> lays out a call layout's buffers (call_layout.h), each in its
// own pages between two guard pages, and returns a region whose memfd the child maps. The
// runner fills inputs and the layout's Params, calls PoisonOutputs, runs the child, then
// reads the outputs back and asks Locate where a faulting address fell and CanaryDamage
// whether a write landed in front of a buffer. The layout (each buffer's name, offsets and
// size, the region's size) is the runner's own copy, made when the region is created: the
// child can write the header's pages, so nothing of the layout is ever read back from them.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../common/expected.h"
#include "call_layout.h"
#include "shared_layout.h"

namespace wb {

// One buffer of a region: its size and whether the child may write it. A buffer of floats
// gives `floats`; a buffer of anything else (stage 4's quantized blocks) gives `bytes`
// instead, and is read back with Bytes().
struct BufferSize {
  size_t floats = 0;
  shm::Access access = shm::kReadOnly;
  size_t bytes = 0;  // when not 0, the buffer's size in bytes, and `floats` is ignored

  static BufferSize Bytes(size_t count, shm::Access access) { return {.floats = 0, .access = access, .bytes = count}; }
};

// Where an offset into the region falls.
struct RegionLocation {
  enum class Kind { kHeader, kGuardBefore, kSlackBefore, kData, kGuardAfter, kOutside };
  Kind kind = Kind::kOutside;
  const shm::BufferSlot* slot = nullptr;
  int64_t distance = 0;  // bytes before the data's start or past its end; index in kData
};

class SharedRegion {
 public:
  template <CallLayout L>
  static Expected<SharedRegion> Create(const std::array<BufferSize, L::kBufferCount>& sizes) {
    std::array<BufferSpec, L::kBufferCount> specs;
    for (uint32_t i = 0; i < L::kBufferCount; ++i) {
      const size_t bytes = sizes[i].bytes != 0 ? sizes[i].bytes : sizes[i].floats * sizeof(float);
      specs[i] = {L::kNames[i], bytes, sizes[i].access};
    }
    return CreateSlots(L::kId, specs);
  }
  SharedRegion(SharedRegion&& other) noexcept;
  SharedRegion& operator=(SharedRegion&& other) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  ~SharedRegion();

  int fd() const { return fd_; }
  shm::Header& header() { return *reinterpret_cast<shm::Header*>(base_); }
  const shm::Header& header() const { return *reinterpret_cast<const shm::Header*>(base_); }

  // A buffer of the layout, as floats.
  template <CallLayout L>
  std::span<float> Floats(typename L::Buffer buffer) {
    return SlotFloats(static_cast<uint32_t>(buffer));
  }
  template <CallLayout L>
  void SetParams(const typename L::Params& params) {
    std::memcpy(header().params, &params, sizeof(params));
  }
  // A buffer of the layout, as bytes (any buffer, whatever it holds).
  template <CallLayout L>
  std::span<unsigned char> Bytes(typename L::Buffer buffer) {
    return SlotBytes(static_cast<uint32_t>(buffer));
  }
  std::span<float> SlotFloats(uint32_t slot);
  std::span<unsigned char> SlotBytes(uint32_t slot);
  // The runner's copy of the layout.
  uint32_t bufferCount() const { return static_cast<uint32_t>(slots_.size()); }
  const shm::BufferSlot& slot(uint32_t i) const { return slots_.at(i); }
  uint64_t totalBytes() const { return bytes_; }

  // Fills every writable buffer with kPoisonWord (its bytes in order from the buffer's first
  // byte, the last word cut short when the size is not a multiple of 4) and every slack
  // with kCanaryByte, and
  // resets the child's report.
  void PoisonOutputs();
  // How many slack bytes in front of a buffer no longer hold the canary, and the
  // distance of the farthest one from the data's start.
  size_t CanaryDamage(const shm::BufferSlot& slot, int64_t* farthest = nullptr) const;
  RegionLocation Locate(uint64_t offset) const;

 private:
  struct BufferSpec {
    const char* name = "";
    size_t bytes = 0;
    shm::Access access = shm::kReadOnly;
  };
  static Expected<SharedRegion> CreateSlots(uint32_t layoutId, std::span<const BufferSpec> buffers);
  SharedRegion(int fd, unsigned char* base, size_t bytes, std::vector<shm::BufferSlot> slots, size_t page)
      : fd_(fd), base_(base), bytes_(bytes), page_(page), slots_(std::move(slots)) {}
  void Release();

  int fd_ = -1;
  unsigned char* base_ = nullptr;
  size_t bytes_ = 0;
  size_t page_ = 0;
  std::vector<shm::BufferSlot> slots_;
};

}  // namespace wb
