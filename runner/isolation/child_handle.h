// A process the runner forked to run untrusted code, ended by its pid and reaped within a
// bound: the runner never waits on it past its limit plus a grace period.
//
// Contract: make a ChildHandle right after fork, in the runner. Until the child is reaped its
// pid names it and nothing else (an unreaped child's pid is not reused), and its pidfd
// (pidfd_open(2), where the kernel has them) names it for good; Kill sends SIGKILL through the
// pidfd (else kill(2) by pid) and then to the process group the runner made for it, so a
// child that left its group (as setpgid into the runner's would) is ended all the same.
// ReapWithin polls the pidfd (or waitpid without blocking) and gives up after `seconds`,
// leaving a child that will not die (one stuck in the kernel) to be reaped later.
#pragma once

#include <sys/types.h>

namespace wb {

// How long a child killed with SIGKILL may take to be reaped before the runner moves on.
constexpr double kReapGraceSeconds = 5.0;

class ChildHandle {
 public:
  explicit ChildHandle(pid_t pid);
  ~ChildHandle();
  ChildHandle(const ChildHandle&) = delete;
  ChildHandle& operator=(const ChildHandle&) = delete;

  pid_t pid() const { return pid_; }
  // Readable once the child has ended (for poll), or -1 where the kernel has no pidfds.
  int endedFd() const { return pidfd_; }
  bool reaped() const { return reaped_; }
  // Reaps the child if it has ended; never blocks. True when reaped, with its wait status.
  bool TryReap(int* status);
  // Whether the child has stopped (by a signal) since this was last asked; never blocks.
  bool TryStopped();
  // Continues a stopped child (SIGCONT).
  void Resume();
  void Kill();
  // Kills the child and waits at most `seconds` for it to be reaped.
  bool KillAndReap(int* status, double seconds = kReapGraceSeconds);
  // Waits at most `seconds` for the child to end by itself.
  bool ReapWithin(int* status, double seconds);

 private:
  pid_t pid_;
  int pidfd_ = -1;
  bool reaped_ = false;
};

}  // namespace wb
