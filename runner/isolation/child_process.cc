#include "child_process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "confinement.h"
#include "sandbox.h"

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

constexpr rlim_t kChildFileBytes = rlim_t{1} << 20;  // the child has no file to write
constexpr rlim_t kChildProcesses = 256;  // threads count too: room for OpenMP, not a fork bomb

void SetLimit(int resource, rlim_t soft, rlim_t hard) {
  const rlimit limit{soft, hard};
  setrlimit(resource, &limit);
}

// The environment the child sees: not the runner's (which may hold an instructor's tokens),
// only what the harness and its libraries read. LeakSanitizer stops the world with ptrace,
// which the seccomp filter refuses, so a sanitized harness runs without leak checks.
std::vector<std::string> ChildEnvironment() {
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"};
  for (const char* name : {"OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "UBSAN_OPTIONS", "ASAN_OPTIONS"}) {
    const char* value = std::getenv(name);
    if (value == nullptr && std::string_view(name) != "ASAN_OPTIONS") continue;
    std::string entry = fmt::format("{}={}", name, value == nullptr ? "" : value);
    if (std::string_view(name) == "ASAN_OPTIONS") entry += value == nullptr || *value == '\0' ? "detect_leaks=0" : ":detect_leaks=0";
    env.push_back(std::move(entry));
  }
  return env;
}

// Everything here runs in the forked child before exec, so it binds the harness's static
// constructors and the student's too. A step that fails ends the child before any student
// code runs (kExecFailedExit): a sandbox half applied is not a sandbox.
struct ChildSetup {
  std::string harness;     // the private copy, at the same path inside the view
  std::string scratch;     // an empty folder for the view's root
  std::string fdArgument;  // the region's descriptor number, as text
  std::vector<std::string> environment;
  double wallSeconds = 0;
  uint64_t addressSpaceBytes = 0;  // 0: none before exec
  pid_t runner = 0;
};

[[noreturn]] void ExecChild(const ChildSetup& setup, int regionFd, int outFd, int errFd, const SandboxPlan& sandbox) {
  setpgid(0, 0);
  SetLimit(RLIMIT_CORE, 0, 0);  // a crash must not leave a core file in the student's tree
  SetLimit(RLIMIT_FSIZE, kChildFileBytes, kChildFileBytes);
  // CPU time is summed over threads, so the backstop behind the wall clock allows every core
  // for the whole time limit (stage 3+ code runs OpenMP); then SIGXCPU, then SIGKILL.
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const rlim_t cpu = static_cast<rlim_t>(std::ceil(setup.wallSeconds * static_cast<double>(cores))) + 1;
  SetLimit(RLIMIT_CPU, cpu, cpu + 1);
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
  if (sandbox.namespaces) {
    FilesystemView view = SystemView();
    view.readOnly.push_back(setup.harness);
    if (!EnterNamespaces(view, setup.scratch, sandbox.dropPrivileges)) _exit(shm::kExecFailedExit);
  }
  if (sandbox.dropPrivileges) {
    SetLimit(RLIMIT_NPROC, kChildProcesses, kChildProcesses);
    // Groups first, then the gid, then the uid: once the uid is gone, nothing else can change.
    if (setgroups(0, nullptr) != 0 || setresgid(kSandboxGid, kSandboxGid, kSandboxGid) != 0 ||
        setresuid(kSandboxUid, kSandboxUid, kSandboxUid) != 0) {
      _exit(shm::kExecFailedExit);
    }
  }
  if (chdir("/") != 0) _exit(shm::kExecFailedExit);  // the runner's folder is not the child's
  // No set-uid program can give privileges back; and the child ends with the runner. Both come
  // after the uid change, which would clear the parent-death signal; checking that the runner
  // is still there closes the race with its death.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(shm::kExecFailedExit);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != setup.runner) _exit(shm::kExecFailedExit);
  if (!ApplySeccomp(SignalPolicy::kSignalOwnGroupOnly)) _exit(shm::kExecFailedExit);
  // Last, so that nothing above runs out of room: the memory limit binds static constructors.
  if (setup.addressSpaceBytes > 0) SetLimit(RLIMIT_AS, setup.addressSpaceBytes, setup.addressSpaceBytes);
  std::vector<char*> env;
  for (const std::string& entry : setup.environment) env.push_back(const_cast<char*>(entry.c_str()));
  env.push_back(nullptr);
  char* argv[] = {const_cast<char*>(setup.harness.c_str()), const_cast<char*>(setup.fdArgument.c_str()), nullptr};
  execve(setup.harness.c_str(), argv, env.data());
  _exit(shm::kExecFailedExit);  // reported as a workbook failure
}

// The harness, copied where the sandbox uid may execute it and nobody else may write: a fresh
// folder (0711) under the system's temporary directory, removed after the run, with an empty
// folder beside the copy that the child's filesystem view is built in. The workbook's own
// folder may be private to root; and a copy per run means no other check of the same tree can
// swap the binary under this one.
class PrivateHarness {
 public:
  static Expected<PrivateHarness> Copy(const std::string& harness) {
    std::error_code ec;
    std::string pattern = (std::filesystem::temp_directory_path(ec) / "wb-sandbox-XXXXXX").string();
    if (ec || mkdtemp(pattern.data()) == nullptr) {
      return SystemError(fmt::format("cannot make a folder for the sandboxed child: {}", std::strerror(errno)));
    }
    PrivateHarness copy;
    copy.folder_ = pattern;
    copy.path_ = pattern + "/harness";
    copy.scratch_ = pattern + "/view";
    if (chmod(pattern.c_str(), 0711) != 0 || mkdir(copy.scratch_.c_str(), 0700) != 0 ||
        !std::filesystem::copy_file(harness, copy.path_, std::filesystem::copy_options::overwrite_existing, ec) ||
        chmod(copy.path_.c_str(), 0755) != 0) {
      return SystemError(fmt::format("cannot copy {} for the sandboxed child: {}", harness,
                                     ec ? ec.message() : std::strerror(errno)));
    }
    return copy;
  }
  PrivateHarness(PrivateHarness&& other) noexcept
      : folder_(std::move(other.folder_)), path_(std::move(other.path_)), scratch_(std::move(other.scratch_)) {
    other.folder_.clear();
  }
  PrivateHarness(const PrivateHarness&) = delete;
  ~PrivateHarness() {
    std::error_code ignored;
    if (!folder_.empty()) std::filesystem::remove_all(folder_, ignored);
  }
  const std::string& path() const { return path_; }
  const std::string& scratch() const { return scratch_; }

 private:
  PrivateHarness() = default;
  std::string folder_, path_, scratch_;
};

// The real uid of process `pid` ("Uid:" of /proc/PID/status, which a process cannot hide by
// making itself undumpable), or -1 when it is gone.
long RealUidOf(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) == 0) return std::strtol(line.c_str() + 4, nullptr, 10);
  }
  return -1;
}

// The processes whose parent is `parent`: field 4 of /proc/PID/stat, after the command name
// in parentheses (which may itself hold spaces and parentheses, hence the last ')').
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent) {
      children.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return children;
}

// What the child left behind, out of its process group too (setsid, a double fork): the
// runner is a subreaper (PR_SET_CHILD_SUBREAPER), so an orphan comes back to it rather than to
// init. Each round kills and reaps the runner's children that run the student's code (the
// sandbox uid's, or any when there is no sandbox uid); theirs come back for the next round.
// Only this runner's own descendants are touched, so checks running side by side are safe.
void KillLeftovers(const SandboxPlan& sandbox) {
  for (int round = 0; round < 1000; ++round) {
    bool found = false;
    for (const pid_t child : ChildrenOf(getpid())) {
      if (sandbox.dropPrivileges && RealUidOf(child) != static_cast<long>(kSandboxUid)) continue;
      found = true;
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
    if (!found) return;
  }
}

// The runner is not dumpable while a child runs: a process of its own uid cannot read its
// memory through /proc/PID/mem or attach to it. Restored afterwards, for debuggers.
class NotDumpable {
 public:
  NotDumpable() : before_(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)) { prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
  ~NotDumpable() {
    if (before_ > 0) prctl(PR_SET_DUMPABLE, before_, 0, 0, 0);
  }
  NotDumpable(const NotDumpable&) = delete;

 private:
  int before_;
};

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
  const SandboxPlan& sandbox = CurrentSandbox();
  auto privateCopy = PrivateHarness::Copy(harnessPath);
  if (!privateCopy.ok()) {
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]}) close(fd);
    return privateCopy.error();
  }
  ChildSetup setup;
  setup.harness = privateCopy->path();
  setup.scratch = privateCopy->scratch();
  setup.fdArgument = std::to_string(kRegionFd);
  setup.environment = ChildEnvironment();
  setup.wallSeconds = limits.wallSeconds;
#ifndef __SANITIZE_ADDRESS__
  // A sanitized runner runs sanitized harnesses, whose shadow memory no limit on the address
  // space allows; they go without one (the workbook's own tests only).
  setup.addressSpaceBytes = region.header().memoryLimitBytes;
#endif
  setup.runner = getpid();
  const NotDumpable notDumpable;
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  (void)subreaper;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1]}) close(fd);
    return SystemError(fmt::format("fork: {}", std::strerror(e)));
  }
  if (pid == 0) ExecChild(setup, region.fd(), outPipe[1], errPipe[1], sandbox);
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
  KillLeftovers(sandbox);
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
