#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

namespace wb {
namespace {

constexpr int kRegionFd = 3;  // the descriptor number the child finds the region on

// Appends to a trimmed capture: the first `keep` bytes, and a rolling last `keep` bytes.
void Capture(CapturedOutput& out, const char* data, size_t n, size_t keep) {
  out.totalBytes += n;
  size_t used = 0;
  if (out.head.size() < keep) {
    used = std::min(n, keep - out.head.size());
    out.head.append(data, used);
  }
  if (used < n) {
    out.tail.append(data + used, n - used);
    if (out.tail.size() > 2 * keep) out.tail.erase(0, out.tail.size() - keep);
  }
}

void Drain(int& fd, CapturedOutput& out, size_t keep) {
  if (fd < 0) return;
  char chunk[65536];
  for (;;) {
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      Capture(out, chunk, static_cast<size_t>(n), keep);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close(fd);  // end of stream or error
    fd = -1;
    return;
  }
}

[[noreturn]] void ExecChild(const std::string& harness, int regionFd, int outFd, int errFd,
                            const std::string& fdArgument) {
  setpgid(0, 0);
  rlimit noCore{0, 0};
  setrlimit(RLIMIT_CORE, &noCore);  // a crash must not leave a core file in the student's tree
  dup2(outFd, STDOUT_FILENO);
  dup2(errFd, STDERR_FILENO);
  if (regionFd != kRegionFd) {
    dup2(regionFd, kRegionFd);
  } else {
    fcntl(kRegionFd, F_SETFD, 0);
  }
  const int stdinFd = open("/dev/null", O_RDONLY);
  if (stdinFd >= 0) dup2(stdinFd, STDIN_FILENO);
  for (int fd = kRegionFd + 1; fd < 1024; ++fd) close(fd);
  char* argv[] = {const_cast<char*>(harness.c_str()), const_cast<char*>(fdArgument.c_str()), nullptr};
  execv(harness.c_str(), argv);
  _exit(shm::kExecFailedExit);  // reported as a workbook failure
}

}  // namespace

std::string CapturedOutput::Text() const {
  if (totalBytes <= head.size() + tail.size()) return head + tail;
  const size_t keep = head.size();
  const std::string shownTail = tail.size() > keep ? tail.substr(tail.size() - keep) : tail;
  const uint64_t hidden = totalBytes - head.size() - shownTail.size();
  return fmt::format("{}\n[... {} bytes not shown ...]\n{}", head, hidden, shownTail);
}

Expected<ChildOutcome> RunInChild(const std::string& harnessPath, SharedRegion& region,
                                  const ChildLimits& limits) {
  if (access(harnessPath.c_str(), X_OK) != 0) {
    return BadUsage(fmt::format("cannot run {}: {}", harnessPath, std::strerror(errno)));
  }
  region.header().memoryLimitBytes =
      limits.memoryBytes == 0 ? 0 : limits.memoryBytes + region.header().totalBytes;
  int outPipe[2];
  int errPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) != 0) return SystemError(fmt::format("pipe: {}", std::strerror(errno)));
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    close(outPipe[0]);
    close(outPipe[1]);
    return SystemError(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const std::string fdArgument = std::to_string(kRegionFd);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]}) close(fd);
    return SystemError(fmt::format("fork: {}", std::strerror(e)));
  }
  if (pid == 0) ExecChild(harnessPath, region.fd(), outPipe[1], errPipe[1], fdArgument);
  setpgid(pid, pid);  // also from this side, so the group exists before any kill
  close(outPipe[1]);
  close(errPipe[1]);
  int outFd = outPipe[0];
  int errFd = errPipe[0];
  fcntl(outFd, F_SETFL, O_NONBLOCK);
  fcntl(errFd, F_SETFL, O_NONBLOCK);

  ChildOutcome outcome;
  int status = 0;
  bool exited = false;
  bool timedOut = false;
  const auto deadline = start + std::chrono::duration<double>(limits.wallSeconds);
  while (!exited) {
    pollfd fds[2] = {{outFd, POLLIN, 0}, {errFd, POLLIN, 0}};
    poll(fds, 2, 20);
    Drain(outFd, outcome.stdoutText, limits.keepOutputBytes);
    Drain(errFd, outcome.stderrText, limits.keepOutputBytes);
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      exited = true;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      exited = true;
      timedOut = true;
    }
  }
  // Whatever the child left in the pipes; then end any process it left behind.
  Drain(outFd, outcome.stdoutText, limits.keepOutputBytes);
  Drain(errFd, outcome.stderrText, limits.keepOutputBytes);
  kill(-pid, SIGKILL);
  if (outFd >= 0) close(outFd);
  if (errFd >= 0) close(errFd);

  outcome.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::memcpy(&outcome.report, const_cast<const shm::ChildReport*>(&region.header().child), sizeof(outcome.report));
  outcome.callSeconds = static_cast<double>(outcome.report.callNanoseconds) * 1e-9;
  if (timedOut) {
    outcome.ending = ChildOutcome::Ending::kTimeLimit;
  } else if (WIFSIGNALED(status)) {
    outcome.ending = ChildOutcome::Ending::kSignal;
    outcome.signal = WTERMSIG(status);
  } else {
    outcome.exitStatus = WEXITSTATUS(status);
    if (outcome.report.phase == shm::kReturned && outcome.exitStatus == 0) {
      outcome.ending = ChildOutcome::Ending::kReturned;
    } else if (outcome.report.phase == shm::kHarnessFailed && outcome.exitStatus == shm::kHarnessFailedExit) {
      // The harness refused the region before any student code was called: the runner and
      // the harness disagree, which no student file can cause by mistake.
      const std::string note(outcome.report.note, strnlen(outcome.report.note, sizeof(outcome.report.note)));
      return InternalError(fmt::format("the child's harness ({}) stopped before calling the stage function: {}. "
                                       "This is a bug in the workbook, not in your code: rebuild with ./workbook, "
                                       "and report it if it persists",
                                       harnessPath, note));
    } else if (outcome.report.phase == shm::kSpawned && outcome.exitStatus == shm::kExecFailedExit) {
      return InternalError(fmt::format("cannot execute the child {}: this is a bug in the workbook; rebuild with "
                                       "./workbook, and report it if it persists",
                                       harnessPath));
    } else {
      // Before the harness was ready, too: a static initializer in the student's file.
      outcome.ending = ChildOutcome::Ending::kExitedEarly;
    }
  }
  return outcome;
}

}  // namespace wb
