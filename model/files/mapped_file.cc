// Read-only mapping of a whole file; see mapped_file.h.
#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace wb {

namespace {

// Closes a file descriptor when it goes out of scope; the mapping does not need it open.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() { ::close(fd_); }

 private:
  int fd_;
};

}  // namespace

Expected<MappedFile> MappedFile::Open(const std::string& path, Residence residence) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return BadUsage(fmt::format("{}: no such file or directory", path));
    return BadUsage(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
  }
  const FdCloser closer(fd);
  struct stat info {};
  if (::fstat(fd, &info) != 0) return SystemError(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  if (S_ISDIR(info.st_mode)) return BadUsage(fmt::format("{}: is a directory, expected a file", path));
  if (!S_ISREG(info.st_mode)) return BadUsage(fmt::format("{}: is not a regular file", path));
  if (info.st_size == 0) return BadData(fmt::format("{}: the file is empty", path));
  const auto size = static_cast<size_t>(info.st_size);
  if (residence == Residence::kInMemory) return ReadIntoMemory(path, fd, size);
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (address == MAP_FAILED) return SystemError(fmt::format("{}: cannot map {} bytes: {}", path, size, std::strerror(errno)));
  return MappedFile(path, static_cast<const std::byte*>(address), size);
}

Expected<MappedFile> MappedFile::ReadIntoMemory(const std::string& path, int fd, size_t size) {
  void* address = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (address == MAP_FAILED) {
    return SystemError(fmt::format("{}: cannot allocate {} bytes to read it into: {}", path, size, std::strerror(errno)));
  }
  MappedFile owner(path, static_cast<const std::byte*>(address), size);  // unmaps on every early return
  // Huge pages: one TLB entry per 2 MiB instead of per 4 KiB while the weights stream by. A
  // hint only: a kernel without transparent huge pages, or set to "never", ignores it.
  ::madvise(address, size, MADV_HUGEPAGE);
  auto* bytes = static_cast<char*>(address);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, bytes + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SystemError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    if (n == 0) return BadData(fmt::format("{}: the file ended at byte {} of {} while being read", path, done, size));
    done += static_cast<size_t>(n);
  }
  // Read-only from here on, as a mapping of the file would be.
  if (::mprotect(address, size, PROT_READ) != 0) {
    return SystemError(fmt::format("{}: cannot make its copy read-only: {}", path, std::strerror(errno)));
  }
  return owner;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      address_(std::exchange(other.address_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    path_ = std::move(other.path_);
    address_ = std::exchange(other.address_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { Unmap(); }

void MappedFile::Unmap() {
  if (address_ != nullptr) ::munmap(const_cast<std::byte*>(address_), size_);
  address_ = nullptr;
  size_ = 0;
}

}  // namespace wb
