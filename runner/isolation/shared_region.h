// The runner's side of the shared region (layout in shared_layout.h).
//
// Contract: Create lays out the buffers, each in its own pages between two guard pages,
// and returns a region whose memfd the child maps. The runner fills inputs, calls
// PoisonOutputs, runs the child, then reads the outputs back and asks Locate where a
// faulting address fell and CanaryDamage whether a write landed in front of a buffer.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../common/expected.h"
#include "shared_layout.h"

namespace wb {

struct BufferSpec {
  std::string name;
  size_t bytes = 0;
  shm::Access access = shm::kReadOnly;
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
  static Expected<SharedRegion> Create(int stage, std::span<const BufferSpec> buffers);
  SharedRegion(SharedRegion&& other) noexcept;
  SharedRegion& operator=(SharedRegion&& other) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  ~SharedRegion();

  int fd() const { return fd_; }
  shm::Header& header() { return *reinterpret_cast<shm::Header*>(base_); }
  const shm::Header& header() const { return *reinterpret_cast<const shm::Header*>(base_); }

  const shm::BufferSlot* Slot(std::string_view name) const;
  std::span<std::byte> Bytes(std::string_view name);
  std::span<float> Floats(std::string_view name);

  // Fills every writable buffer with kPoisonWord and every slack with kCanaryByte, and
  // resets the child's report.
  void PoisonOutputs();
  // How many slack bytes in front of a buffer no longer hold the canary, and the
  // distance of the farthest one from the data's start.
  size_t CanaryDamage(const shm::BufferSlot& slot, int64_t* farthest = nullptr) const;
  RegionLocation Locate(uint64_t offset) const;

 private:
  SharedRegion(int fd, unsigned char* base, size_t bytes) : fd_(fd), base_(base), bytes_(bytes) {}
  void Release();

  int fd_ = -1;
  unsigned char* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace wb
