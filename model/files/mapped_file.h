// A whole file mapped read-only into memory.
//
// Contract: Open() maps a regular, non-empty file with PROT_READ and MAP_PRIVATE and returns an
// owner that unmaps it on destruction. The object is move-only; moving it keeps the mapping at
// the same address, so spans taken from bytes() stay valid for as long as some MappedFile owns
// the mapping. Errors name the path: a missing or unreadable path, a directory or other
// non-regular file, an empty file, a failed mmap, or (Residence::kInMemory) a failed read.
// Nothing throws. With Residence::kMapped nothing is copied; with kInMemory the file is read
// once into anonymous memory, which is then made read-only: the same bytes, the same contract.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "common/expected.h"

namespace wb {

// Where a file's bytes live once opened.
//   kMapped    the page cache's own pages, mapped: nothing copied, pages read on first touch.
//   kInMemory  a private anonymous copy, read whole at Open, with transparent huge pages asked
//              for (madvise MADV_HUGEPAGE; a hint the kernel may ignore). For a decoder that
//              streams every weight once per token: on this project's machine, decode read a
//              TinyLlama-shaped Q4_0 file's weights 25 to 35 % faster from such a copy than
//              from the mapped file (docs/generate.md).
enum class Residence { kMapped, kInMemory };

class MappedFile {
 public:
  static Expected<MappedFile> Open(const std::string& path, Residence residence = Residence::kMapped);

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
  static Expected<MappedFile> ReadIntoMemory(const std::string& path, int fd, size_t size);
  void Unmap();

  std::string path_;
  const std::byte* address_ = nullptr;
  size_t size_ = 0;
};

}  // namespace wb
