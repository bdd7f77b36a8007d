// Ending and reaping a child by pid and pidfd, within a bound; see child_handle.h.
#include "child_handle.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace wb {

ChildHandle::ChildHandle(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd_ >= 0) {
    // Close-on-exec: no later child of the runner inherits it.
    const int flags = fcntl(pidfd_, F_GETFD);
    if (flags >= 0) fcntl(pidfd_, F_SETFD, flags | FD_CLOEXEC);
  }
#endif
}

ChildHandle::~ChildHandle() {
  if (pidfd_ >= 0) close(pidfd_);
}

bool ChildHandle::TryReap(int* status) {
  if (reaped_) return true;
  int ended = 0;
  pid_t done;
  while ((done = waitpid(pid_, &ended, WNOHANG)) < 0 && errno == EINTR) {
  }
  // ECHILD: reaped elsewhere (a leftovers sweep); it has ended all the same.
  if (done == pid_ || (done < 0 && errno == ECHILD)) {
    reaped_ = true;
    if (status != nullptr && done == pid_) *status = ended;
  }
  return reaped_;
}

bool ChildHandle::TryStopped() {
  if (reaped_) return false;
  siginfo_t info{};
  int got;
  while ((got = waitid(P_PID, static_cast<id_t>(pid_), &info, WSTOPPED | WNOHANG)) < 0 && errno == EINTR) {
  }
  return got == 0 && info.si_pid == pid_ && info.si_code == CLD_STOPPED;
}

void ChildHandle::Resume() {
  if (!reaped_) kill(pid_, SIGCONT);
}

void ChildHandle::Kill() {
  if (!reaped_) {
    bool sent = false;
#ifdef SYS_pidfd_send_signal
    if (pidfd_ >= 0) sent = syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0) == 0;
#endif
    if (!sent) kill(pid_, SIGKILL);
  }
  // The group the runner made for it, whoever is still in it (the id stays the group's while
  // it has members, so it cannot name another process's group).
  kill(-pid_, SIGKILL);
}

bool ChildHandle::ReapWithin(int* status, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!TryReap(status)) {
    const auto left = std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    const int wait = static_cast<int>(std::min(left, 50.0)) + 1;
    if (pidfd_ >= 0) {
      pollfd ended{pidfd_, POLLIN, 0};
      poll(&ended, 1, wait);
    } else {
      usleep(static_cast<useconds_t>(std::min(wait, 5)) * 1000);
    }
  }
  return true;
}

bool ChildHandle::KillAndReap(int* status, double seconds) {
  Kill();
  return ReapWithin(status, seconds);
}

}  // namespace wb
