#include "file_watcher.h"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

namespace wb {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(300);
constexpr int kSettleMilliseconds = 150;  // editors write in several steps

}  // namespace

Expected<FileWatcher> FileWatcher::Watch(const std::string& path, bool forcePolling) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return BadUsage(fmt::format("{}: no such file to watch", path));
  if (!forcePolling) {
    const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd >= 0) {
      const std::string folder = std::filesystem::path(path).parent_path().string();
      if (inotify_add_watch(fd, folder.empty() ? "." : folder.c_str(),
                            IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_MODIFY) >= 0) {
        FileWatcher watcher(path, Mode::kInotify, fd);
        watcher.Snapshot();
        return watcher;
      }
      close(fd);
    }
  }
  FileWatcher watcher(path, Mode::kPolling, -1);
  watcher.Snapshot();
  return watcher;
}

FileWatcher::FileWatcher(FileWatcher&& other) noexcept
    : path_(std::move(other.path_)), mode_(other.mode_), fd_(other.fd_), lastModified_(other.lastModified_),
      lastSize_(other.lastSize_) {
  other.fd_ = -1;
}

FileWatcher::~FileWatcher() {
  if (fd_ >= 0) close(fd_);
}

void FileWatcher::Snapshot() {
  struct stat st {};
  if (stat(path_.c_str(), &st) == 0) {
    lastModified_ = st.st_mtim;
    lastSize_ = st.st_size;
  } else {
    lastSize_ = -1;
  }
}

void FileWatcher::WaitForChange() {
  const std::string name = std::filesystem::path(path_).filename().string();
  for (;;) {
    if (mode_ == Mode::kInotify) {
      pollfd p{fd_, POLLIN, 0};
      poll(&p, 1, -1);
      alignas(inotify_event) char buffer[4096];
      bool ours = false;
      for (;;) {
        const ssize_t n = read(fd_, buffer, sizeof(buffer));
        if (n <= 0) break;
        for (ssize_t at = 0; at < n;) {
          const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
          if (event->len > 0 && name == event->name) ours = true;
          at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        }
      }
      if (!ours) continue;
      // Let the save finish, and swallow the rest of its events.
      std::this_thread::sleep_for(std::chrono::milliseconds(kSettleMilliseconds));
      while (read(fd_, buffer, sizeof(buffer)) > 0) {
      }
      Snapshot();
      return;
    }
    std::this_thread::sleep_for(kPollInterval);
    struct stat st {};
    if (stat(path_.c_str(), &st) != 0) continue;  // mid-rename: look again
    if (st.st_size != lastSize_ || st.st_mtim.tv_sec != lastModified_.tv_sec ||
        st.st_mtim.tv_nsec != lastModified_.tv_nsec) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kSettleMilliseconds));
      Snapshot();
      return;
    }
  }
}

}  // namespace wb
