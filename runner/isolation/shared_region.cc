#include "shared_region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include <fmt/format.h>

namespace wb {
namespace {

size_t RoundUp(size_t n, size_t page) { return (n + page - 1) / page * page; }

}  // namespace

Expected<SharedRegion> SharedRegion::CreateSlots(uint32_t layoutId, std::span<const BufferSpec> buffers) {
  if (buffers.size() > static_cast<size_t>(shm::kMaxBuffers)) {
    return InternalError(fmt::format("{} buffers exceed the region's {} slots", buffers.size(), shm::kMaxBuffers));
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Header pages, then per buffer: guard | data pages (data pushed to their end) | guard.
  size_t at = RoundUp(sizeof(shm::Header), page);
  std::vector<shm::BufferSlot> slots(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferSpec& b = buffers[i];
    const size_t nameBytes = std::strlen(b.name);
    if (nameBytes >= static_cast<size_t>(shm::kNameBytes)) {
      return InternalError(fmt::format("buffer name '{}' is too long", b.name));
    }
    shm::BufferSlot& s = slots[i];
    std::memset(&s, 0, sizeof(s));
    std::memcpy(s.name, b.name, nameBytes);
    s.guardBefore = at;
    s.regionBegin = at + page;
    const size_t dataPages = RoundUp(b.bytes == 0 ? 1 : b.bytes, page);
    s.guardAfter = s.regionBegin + dataPages;
    s.dataBytes = b.bytes;
    s.dataOffset = s.guardAfter - b.bytes;
    s.access = b.access;
    at = s.guardAfter + page;
  }
  const size_t total = at;

  const int fd = memfd_create("workbook-region", 0);
  if (fd < 0) return SystemError(fmt::format("memfd_create failed: {}", std::strerror(errno)));
  if (ftruncate(fd, static_cast<off_t>(total)) != 0) {
    const int e = errno;
    close(fd);
    return SystemError(fmt::format("cannot size the shared region to {} bytes: {}", total, std::strerror(e)));
  }
  // MAP_POPULATE: every page is written next (the copies, the poison), and faulting them in
  // one call is several times cheaper than one fault per page.
  void* mapped = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (mapped == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return SystemError(fmt::format("cannot map the shared region: {}", std::strerror(e)));
  }
  SharedRegion region(fd, static_cast<unsigned char*>(mapped), total, slots, page);
  shm::Header& h = region.header();
  h.magic = shm::kMagic;
  h.version = shm::kVersion;
  h.pageSize = static_cast<uint32_t>(page);
  h.totalBytes = total;
  h.layoutId = layoutId;
  h.bufferCount = static_cast<uint32_t>(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) h.buffers[i] = slots[i];
  return region;
}

SharedRegion::SharedRegion(SharedRegion&& other) noexcept
    : fd_(other.fd_), base_(other.base_), bytes_(other.bytes_), page_(other.page_), slots_(std::move(other.slots_)) {
  other.fd_ = -1;
  other.base_ = nullptr;
  other.bytes_ = 0;
}

SharedRegion& SharedRegion::operator=(SharedRegion&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = other.fd_;
    base_ = other.base_;
    bytes_ = other.bytes_;
    page_ = other.page_;
    slots_ = std::move(other.slots_);
    other.fd_ = -1;
    other.base_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

SharedRegion::~SharedRegion() { Release(); }

void SharedRegion::Release() {
  if (base_ != nullptr) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

std::span<float> SharedRegion::SlotFloats(uint32_t slot) {
  const shm::BufferSlot& s = slots_.at(slot);
  return {reinterpret_cast<float*>(base_ + s.dataOffset), s.dataBytes / sizeof(float)};
}

std::span<unsigned char> SharedRegion::SlotBytes(uint32_t slot) {
  const shm::BufferSlot& s = slots_.at(slot);
  return {base_ + s.dataOffset, s.dataBytes};
}

void SharedRegion::PoisonOutputs() {
  shm::Header& h = header();
  for (const shm::BufferSlot& s : slots_) {
    std::memset(base_ + s.regionBegin, shm::kCanaryByte, s.dataOffset - s.regionBegin);
    if (s.access != shm::kWritable) continue;
    unsigned char* data = base_ + s.dataOffset;
    const uint32_t word = shm::kPoisonWord;
    for (size_t at = 0; at < s.dataBytes; at += sizeof(word)) {
      std::memcpy(data + at, &word, std::min(sizeof(word), s.dataBytes - at));
    }
  }
  std::memset(&h.child, 0, sizeof(h.child));
}

size_t SharedRegion::CanaryDamage(const shm::BufferSlot& slot, int64_t* farthest) const {
  size_t damaged = 0;
  int64_t far = 0;
  for (uint64_t at = slot.regionBegin; at < slot.dataOffset; ++at) {
    if (base_[at] != shm::kCanaryByte) {
      ++damaged;
      const auto distance = static_cast<int64_t>(slot.dataOffset - at);
      if (distance > far) far = distance;
    }
  }
  if (farthest != nullptr) *farthest = far;
  return damaged;
}

RegionLocation SharedRegion::Locate(uint64_t offset) const {
  RegionLocation where;
  if (slots_.empty() || offset < slots_[0].guardBefore) {
    where.kind = offset < bytes_ ? RegionLocation::Kind::kHeader : RegionLocation::Kind::kOutside;
    return where;
  }
  for (const shm::BufferSlot& s : slots_) {
    where.slot = &s;
    if (offset >= s.guardBefore && offset < s.regionBegin) {
      where.kind = RegionLocation::Kind::kGuardBefore;
      where.distance = static_cast<int64_t>(s.dataOffset - offset);
      return where;
    }
    if (offset >= s.regionBegin && offset < s.dataOffset) {
      where.kind = RegionLocation::Kind::kSlackBefore;
      where.distance = static_cast<int64_t>(s.dataOffset - offset);
      return where;
    }
    if (offset >= s.dataOffset && offset < s.guardAfter) {
      where.kind = RegionLocation::Kind::kData;
      where.distance = static_cast<int64_t>(offset - s.dataOffset);
      return where;
    }
    if (offset >= s.guardAfter && offset < s.guardAfter + page_) {
      where.kind = RegionLocation::Kind::kGuardAfter;
      where.distance = static_cast<int64_t>(offset - s.guardAfter);
      return where;
    }
  }
  where.slot = nullptr;
  where.kind = RegionLocation::Kind::kOutside;
  return where;
}

}  // namespace wb
