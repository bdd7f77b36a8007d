// A whole file mapped read-only into memory.
//
// Contract: Open() maps a regular, non-empty file with PROT_READ and MAP_PRIVATE and returns an
// owner that unmaps it on destruction. The object is move-only; moving it keeps the mapping at
// the same address, so spans taken from bytes() stay valid for as long as some MappedFile owns
// the mapping. Errors name the path: a missing or unreadable path, a directory or other
// non-regular file, an empty file, or a failed mmap. Nothing is copied and nothing throws.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "common/expected.h"

namespace wb {

class MappedFile {
 public:
  static Expected<MappedFile> Open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {address_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const std::byte* address, size_t size)
      : path_(std::move(path)), address_(address), size_(size) {}
  void Unmap();

  std::string path_;
  const std::byte* address_ = nullptr;
  size_t size_ = 0;
};

}  // namespace wb
