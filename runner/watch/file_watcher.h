// Waits for a file to change: inotify on its folder (so editors that save by writing a new
// file and renaming it are seen too), or, where inotify is unavailable or not wanted,
// polling its modification time and size.
#pragma once

#include <string>
#include <sys/types.h>

#include "../../common/expected.h"

namespace wb {

class FileWatcher {
 public:
  enum class Mode { kInotify, kPolling };

  static Expected<FileWatcher> Watch(const std::string& path, bool forcePolling);
  FileWatcher(FileWatcher&& other) noexcept;
  FileWatcher& operator=(FileWatcher&&) = delete;
  FileWatcher(const FileWatcher&) = delete;
  ~FileWatcher();

  Mode mode() const { return mode_; }
  // Blocks until the file's content changes, then waits a moment for the save to settle.
  void WaitForChange();

 private:
  FileWatcher(std::string path, Mode mode, int fd) : path_(std::move(path)), mode_(mode), fd_(fd) {}
  void Snapshot();

  std::string path_;
  Mode mode_;
  int fd_ = -1;
  struct timespec lastModified_ {};
  off_t lastSize_ = -1;
};

}  // namespace wb
