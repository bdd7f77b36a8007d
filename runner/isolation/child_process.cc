#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
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
#include <optional>
#include <random>
#include <string_view>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "child_handle.h"
#include "confinement.h"
#include "run_folder.h"
#include "sandbox.h"

namespace wb {
namespace {

constexpr int kRegionFd = 3;        // the descriptor number the child finds the region on
constexpr int kExecReportFd = 4;    // close-on-exec: a step before exec that fails says so here

// A bench child's seed: from the kernel's random source (std::random_device reads it on
// Linux), never 0, which means "not written yet".
uint64_t FreshTimedSeed() {
  std::random_device source;
  uint64_t seed = 0;
  while (seed == 0) seed = (uint64_t{source()} << 32) | source();
  return seed;
}

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

void SetLimit(int resource, rlim_t soft, rlim_t hard) {
  const rlimit limit{soft, hard};
  setrlimit(resource, &limit);
}

// The environment the child sees: not the runner's (which may hold an instructor's tokens),
// only what the harness and its libraries read. LeakSanitizer stops the world with ptrace,
// which the seccomp filter refuses, so a sanitized harness runs without leak checks.
std::vector<std::string> ChildEnvironment(const std::string& kernelVersion) {
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"};
  if (!kernelVersion.empty()) env.push_back("WB_KERNEL_VERSION=" + kernelVersion);
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
  // After the program's name: the region's descriptor number, as text, for a harness; a
  // program's own arguments for RunConfinedProgram.
  std::vector<std::string> arguments;
  std::vector<std::string> environment;
  double wallSeconds = 0;
  uint64_t addressSpaceBytes = 0;  // 0: none before exec
  pid_t runner = 0;
  std::vector<std::string> readable;  // ChildLimits::readablePaths
};

// A step before exec failed: the runner reads why from the close-on-exec pipe, so it never
// mistakes this for anything the student's code did (which can exit with any status).
[[noreturn]] void Refuse(const char* step) {
  const std::string why = fmt::format("{}: {}", step, std::strerror(errno));
  (void)!write(kExecReportFd, why.data(), why.size());
  _exit(shm::kExecFailedExit);
}

[[noreturn]] void ExecChild(const ChildSetup& setup, int regionFd, int outFd, int errFd, int execFd,
                            const SandboxPlan& sandbox) {
  // Every descriptor the child keeps moves out of the way first, then to its number: no dup2
  // below can overwrite one still needed (a runner with few files open has its pipes at 3 and 4).
  const int highRegion = regionFd < 0 ? -1 : fcntl(regionFd, F_DUPFD, 100);
  const int highExec = fcntl(execFd, F_DUPFD_CLOEXEC, 100);
  const int highOut = fcntl(outFd, F_DUPFD, 100);
  const int highErr = fcntl(errFd, F_DUPFD, 100);
  if ((regionFd >= 0 && highRegion < 0) || highExec < 0 || highOut < 0 || highErr < 0 ||
      dup2(highExec, kExecReportFd) != kExecReportFd || fcntl(kExecReportFd, F_SETFD, FD_CLOEXEC) != 0) {
    const char why[] = "moving the descriptors";
    (void)!write(execFd, why, sizeof why - 1);
    _exit(shm::kExecFailedExit);
  }
  setpgid(0, 0);
  SetLimit(RLIMIT_CORE, 0, 0);  // a crash must not leave a core file in the student's tree
  SetLimit(RLIMIT_FSIZE, kChildFileBytes, kChildFileBytes);
  // CPU time is summed over threads, so the backstop behind the wall clock allows every core
  // for the whole time limit (stage 3+ code runs OpenMP); then SIGXCPU, then SIGKILL.
  // No wall-clock limit (an interactive program's): no CPU limit either.
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  if (setup.wallSeconds > 0) {
    const rlim_t cpu = static_cast<rlim_t>(std::ceil(setup.wallSeconds * static_cast<double>(cores))) + 1;
    SetLimit(RLIMIT_CPU, cpu, cpu + 1);
  }
  if (dup2(highOut, STDOUT_FILENO) < 0 || dup2(highErr, STDERR_FILENO) < 0 ||
      (highRegion >= 0 && dup2(highRegion, kRegionFd) < 0)) {
    Refuse("dup2");
  }
  if (highRegion < 0) close(kRegionFd);  // a program has no region: nothing of the runner's there
  const int stdinFd = open("/dev/null", O_RDONLY);
  if (stdinFd < 0 || dup2(stdinFd, STDIN_FILENO) < 0) Refuse("stdin from /dev/null");
  for (int fd = kExecReportFd + 1; fd < 1024; ++fd) close(fd);
  FilesystemView view = SystemView();
  view.readOnly.push_back(setup.harness);
  view.readOnly.insert(view.readOnly.end(), setup.readable.begin(), setup.readable.end());
  if (const char* failed = ApplySandbox(sandbox, view, setup.scratch, SignalPolicy::kSignalOwnGroupOnly, setup.runner)) {
    Refuse(failed);
  }
  // Last, so that nothing above runs out of room: the memory limit binds static constructors.
  if (setup.addressSpaceBytes > 0) SetLimit(RLIMIT_AS, setup.addressSpaceBytes, setup.addressSpaceBytes);
  std::vector<char*> env;
  for (const std::string& entry : setup.environment) env.push_back(const_cast<char*>(entry.c_str()));
  env.push_back(nullptr);
  std::vector<char*> argv = {const_cast<char*>(setup.harness.c_str())};
  for (const std::string& argument : setup.arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  execve(setup.harness.c_str(), argv.data(), env.data());
  Refuse("execve");
}

// A pipe whose ends close with it (both close-on-exec: the child keeps what it dup2s).
struct Pipe {
  int read = -1;
  int write = -1;
  bool Open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
  void CloseWrite() {
    if (write >= 0) close(write);
    write = -1;
  }
  Pipe() = default;
  Pipe(const Pipe&) = delete;
  ~Pipe() {
    CloseWrite();
    if (read >= 0) close(read);
  }
};

// The harness, copied where the sandbox uid may execute it and nobody else may write: a fresh
// folder (0711) under the system's temporary directory, removed after the run, with an empty
// folder beside the copy that the child's filesystem view is built in. The workbook's own
// folder may be private to root; and a copy per run means no other check of the same tree can
// swap the binary under this one.
class PrivateHarness {
 public:
  static Expected<PrivateHarness> Copy(const std::string& harness) {
    std::error_code ec;
    const auto temporary = std::filesystem::temp_directory_path(ec);
    if (ec) return SystemError(fmt::format("no temporary folder for the sandboxed child: {}", ec.message()));
    auto folder = MakeRunFolder(temporary.string(), "wb-sandbox-");
    if (!folder.ok()) return folder.error();
    PrivateHarness copy;
    copy.folder_ = *folder;
    copy.path_ = *folder + "/harness";
    copy.scratch_ = *folder + "/view";
    if (chmod(folder->c_str(), 0711) != 0 || mkdir(copy.scratch_.c_str(), 0700) != 0 ||
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
// in parentheses (which may itself hold spaces and parentheses, hence the last ')'); and
// field 3, the state, 'Z' for a zombie, which has already ended.
struct ChildProcess {
  pid_t pid = 0;
  bool zombie = false;
};

std::vector<ChildProcess> ChildrenOf(pid_t parent) {
  std::vector<ChildProcess> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // read(2), not a stream: a process that ends between the open and the read makes the
    // read fail with ESRCH, which std::filebuf turns into an exception; here it just means
    // the process is gone, and any process on the machine may end at any moment.
    std::string text;
    const int fd = open((entry.path() / "stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buffer[1024];
    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
    close(fd);
    const size_t nameEnd = text.rfind(')');
    if (nameEnd == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(text.c_str() + nameEnd + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent) {
      children.push_back({static_cast<pid_t>(std::stol(name)), state == 'Z'});
    }
  }
  return children;
}

// What the child left behind, out of its process group too (setsid, a double fork): the
// runner is a subreaper (PR_SET_CHILD_SUBREAPER), so an orphan comes back to it rather than to
// init. Each round kills and reaps the runner's children that run the student's code (the
// sandbox uid's, or any when there is no sandbox uid); theirs come back for the next round.
// Only this runner's own descendants are touched, so checks running side by side are safe.
// Returns how many it killed.
size_t KillLeftovers(const SandboxPlan& sandbox, const std::vector<pid_t>& spare) {
  size_t killed = 0;
  for (int round = 0; round < 1000; ++round) {
    bool found = false;
    for (const ChildProcess& child : ChildrenOf(getpid())) {
      if (std::find(spare.begin(), spare.end(), child.pid) != spare.end()) continue;
      if (sandbox.dropPrivileges && RealUidOf(child.pid) != static_cast<long>(kSandboxUid)) continue;
      found = true;
      ChildHandle leftover(child.pid);
      // A leftover that cannot be reaped within the grace period (stuck in the kernel) is left
      // to a later sweep, never waited on.
      if (!leftover.KillAndReap(nullptr)) return killed + 1;
      if (!child.zombie) ++killed;
    }
    if (!found) break;
  }
  return killed;
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

// What the report pipe of a child says once it is closed: nothing when exec succeeded (the pipe
// is close-on-exec), else why a step of the sandbox before it failed.
std::string ReadExecReport(int fd) {
  char why[256] = {};
  ssize_t said = 0;
  while ((said = read(fd, why, sizeof(why) - 1)) < 0 && errno == EINTR) {
  }
  return said > 0 ? std::string(why, static_cast<size_t>(said)) : std::string();
}

}  // namespace

size_t KillLeftoverProcesses(const std::vector<pid_t>& spare) { return KillLeftovers(CurrentSandbox(), spare); }

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
      limits.memoryBytes == 0 ? 0 : limits.memoryBytes + region.totalBytes();
  region.header().timedSeed = 0;
  Pipe out, err, execReport;
  for (Pipe* pipe : {&out, &err, &execReport}) {
    if (!pipe->Open()) return SystemError(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const SandboxPlan& sandbox = CurrentSandbox();
  auto privateCopy = PrivateHarness::Copy(harnessPath);
  if (!privateCopy.ok()) return privateCopy.error();
  ChildSetup setup;
  setup.harness = privateCopy->path();
  setup.scratch = privateCopy->scratch();
  setup.readable = limits.readablePaths;
  setup.arguments = {std::to_string(kRegionFd)};
  setup.environment = ChildEnvironment(limits.kernelVersion);
  setup.wallSeconds = limits.wallSeconds;
#ifndef __SANITIZE_ADDRESS__
  // A sanitized runner runs sanitized harnesses, whose shadow memory no limit on the address
  // space allows; they go without one (the workbook's own tests only).
  setup.addressSpaceBytes = limits.memoryBytes == 0 ? 0 : limits.memoryBytes + region.totalBytes();
#endif
  setup.runner = getpid();
  const NotDumpable notDumpable;
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  (void)subreaper;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) return SystemError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) ExecChild(setup, region.fd(), out.write, err.write, execReport.write, sandbox);
  setpgid(pid, pid);  // also from this side, so the group exists before any kill
  ChildHandle child(pid);
  out.CloseWrite();
  err.CloseWrite();
  execReport.CloseWrite();
  if (const std::string why = ReadExecReport(execReport.read); !why.empty()) {
    child.KillAndReap(nullptr);
    return InternalError(fmt::format("cannot start the sandboxed child for {} ({}): this is a bug in the workbook "
                                     "or a limit of this machine; rebuild with ./workbook, and report it if it persists",
                                     harnessPath, why));
  }
  int outFd = out.read;
  int errFd = err.read;
  out.read = err.read = -1;  // Drain closes them at the end of their streams
  fcntl(outFd, F_SETFL, O_NONBLOCK);
  fcntl(errFd, F_SETFL, O_NONBLOCK);

  ChildOutcome outcome;
  int status = 0;
  bool timedOut = false;
  std::optional<std::chrono::steady_clock::time_point> timedFrom;  // resumeStops: the first resuming
  const auto deadline = start + std::chrono::duration<double>(limits.wallSeconds);
  // Woken by output, by the child's end (its pidfd) or every 20 ms; past the deadline the
  // child is killed by pid and by group, and waited on for the grace period at most: a child
  // that left its group, or will not die, cannot hold the runner.
  for (;;) {
    pollfd fds[3] = {{outFd, POLLIN, 0}, {errFd, POLLIN, 0}, {child.endedFd(), POLLIN, 0}};
    poll(fds, 3, 20);
    Drain(outFd, outcome.stdoutText, limits.keepOutputBytes);
    Drain(errFd, outcome.stderrText, limits.keepOutputBytes);
    if (child.TryReap(&status)) {
      if (timedFrom) {
        outcome.timedSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - *timedFrom).count();
      }
      break;
    }
    // The child waits, stopped, until it is resumed: the clock starts at the resuming, so how
    // soon the stop is seen does not matter.
    if (limits.resumeStops && child.TryStopped()) {
      if (!timedFrom) {
        outcome.timedSeed = FreshTimedSeed();
        region.header().timedSeed = outcome.timedSeed;
        timedFrom = std::chrono::steady_clock::now();
      }
      child.Resume();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      child.KillAndReap(&status);
      timedOut = true;
      break;
    }
  }
  // Whatever the child left in the pipes; then end any process it left behind.
  Drain(outFd, outcome.stdoutText, limits.keepOutputBytes);
  Drain(errFd, outcome.stderrText, limits.keepOutputBytes);
  // Killed one generation at a time, so each is counted while it still runs; then the
  // child's group once more, which by now holds nothing.
  outcome.leftoverProcesses = KillLeftovers(sandbox, {});
  child.Kill();
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
    } else {
      // Before the harness was ready, too: a static initializer in the student's file.
      outcome.ending = ChildOutcome::Ending::kExitedEarly;
    }
  }
  return outcome;
}

}  // namespace wb

namespace wb {
namespace {

volatile sig_atomic_t g_interruptsToForward = 0;

// SIGCHLD, blocked in this thread and readable from a signalfd, while it lives (when `on`);
// fd() is -1 otherwise (poll skips it). The thread's signal mask is restored after.
class ChildSignalWatch {
 public:
  explicit ChildSignalWatch(bool on) {
    if (!on) return;
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    if (pthread_sigmask(SIG_BLOCK, &child, &previous_) != 0) return;
    blocked_ = true;
    fd_ = signalfd(-1, &child, SFD_NONBLOCK | SFD_CLOEXEC);
  }
  ~ChildSignalWatch() {
    if (fd_ >= 0) close(fd_);
    if (blocked_) pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  ChildSignalWatch(const ChildSignalWatch&) = delete;
  ChildSignalWatch& operator=(const ChildSignalWatch&) = delete;
  int fd() const { return fd_; }
  void Drain() const {
    if (fd_ < 0) return;
    signalfd_siginfo info;
    while (read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    }
  }

 private:
  int fd_ = -1;
  bool blocked_ = false;
  sigset_t previous_{};
};

void CountInterrupt(int) { g_interruptsToForward = g_interruptsToForward + 1; }

// Writes all of `data` to `fd` (a terminal or a pipe that may take it in parts).
void WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t written = write(fd, data, n);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // the reader went away: what is left is dropped
    data += written;
    n -= static_cast<size_t>(written);
  }
}

}  // namespace

Expected<ProgramRun> RunConfinedProgram(const std::vector<std::string>& argv, const ProgramLimits& limits,
                                        int relayStdout) {
  if (argv.empty() || access(argv[0].c_str(), X_OK) != 0) {
    return BadUsage(fmt::format("cannot run {}: {}", argv.empty() ? "" : argv[0], std::strerror(errno)));
  }
  Pipe out, err, execReport;
  for (Pipe* pipe : {&out, &err, &execReport}) {
    if (!pipe->Open()) return SystemError(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const SandboxPlan& sandbox = CurrentSandbox();
  auto privateCopy = PrivateHarness::Copy(argv[0]);
  if (!privateCopy.ok()) return privateCopy.error();
  ChildSetup setup;
  setup.harness = privateCopy->path();
  setup.scratch = privateCopy->scratch();
  setup.readable = limits.readablePaths;
  setup.arguments.assign(argv.begin() + 1, argv.end());
  setup.environment = ChildEnvironment(limits.kernelVersion);
  setup.wallSeconds = limits.wallSeconds;
#ifndef __SANITIZE_ADDRESS__
  setup.addressSpaceBytes = limits.memoryBytes;
#endif
  setup.runner = getpid();
  const NotDumpable notDumpable;
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  (void)subreaper;
  std::fflush(nullptr);  // nothing buffered here is printed twice by the child's copy
  // Ctrl-C reaches the runner's process group, not the program's: it is passed on, so the
  // program can stop as it would at a terminal (generate ends its text and prints its figures).
  struct sigaction forward {}, previous {};
  forward.sa_handler = CountInterrupt;
  sigemptyset(&forward.sa_mask);
  g_interruptsToForward = 0;
  sigaction(SIGINT, &forward, &previous);
  struct RestoreInterrupt {
    struct sigaction* previous;
    ~RestoreInterrupt() { sigaction(SIGINT, previous, nullptr); }
  } restore{&previous};
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) return SystemError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    sigaction(SIGINT, &previous, nullptr);
    ExecChild(setup, -1, out.write, err.write, execReport.write, sandbox);
  }
  setpgid(pid, pid);
  ChildHandle child(pid);
  out.CloseWrite();
  err.CloseWrite();
  execReport.CloseWrite();
  if (const std::string why = ReadExecReport(execReport.read); !why.empty()) {
    child.KillAndReap(nullptr);
    return InternalError(fmt::format("cannot start {} in the sandbox ({}): this is a bug in the workbook or a limit of "
                                     "this machine", argv[0], why));
  }
  ProgramRun run;
  int fds[2] = {out.read, err.read};
  out.read = err.read = -1;
  for (const int fd : fds) fcntl(fd, F_SETFL, O_NONBLOCK);
  const auto relay = [&](int& fd, int to) {
    if (fd < 0) return;
    char chunk[65536];
    for (;;) {
      const ssize_t n = read(fd, chunk, sizeof chunk);
      if (n > 0) {
        if (to >= 0) {
          WriteAll(to, chunk, static_cast<size_t>(n));
        } else {
          run.stdoutText.append(chunk, static_cast<size_t>(n));
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      close(fd);
      fd = -1;
      return;
    }
  };
  int status = 0;
  int forwarded = 0;
  // timedSpans: whether a span is open, and its start (a plain pair: GCC 12 warns, wrongly, that
  // an optional time_point may be read uninitialised).
  bool spanOpen = false;
  std::chrono::steady_clock::time_point spanFrom{};
  // timedSpans: the child's stops wake the loop at once (SIGCHLD, blocked in this thread and
  // read from a signalfd); should another thread of the runner take the signal, the loop
  // still looks every millisecond while a span runs.
  const ChildSignalWatch stops(limits.timedSpans);
  for (;;) {
    pollfd polled[4] = {
        {fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}, {child.endedFd(), POLLIN, 0}, {stops.fd(), POLLIN, 0}};
    poll(polled, 4, spanOpen ? 1 : 50);
    stops.Drain();
    relay(fds[0], relayStdout);
    relay(fds[1], STDERR_FILENO);
    for (; forwarded < g_interruptsToForward; ++forwarded) {
      kill(pid, SIGINT);
      run.interrupted = true;
    }
    if (child.TryReap(&status)) break;
    if (limits.timedSpans && child.TryStopped()) {
      const auto now = std::chrono::steady_clock::now();
      ++run.stops;
      if (spanOpen) {
        run.spanSeconds.push_back(std::chrono::duration<double>(now - spanFrom).count());
      } else {
        // The clock starts before the child can run: once resumed, its threads may take every
        // CPU, and this process might not run again until the span has ended.
        spanFrom = now;
      }
      spanOpen = !spanOpen;
      child.Resume();
    }
    if (limits.wallSeconds > 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::duration<double>(limits.wallSeconds)) {
      child.KillAndReap(&status);
      run.timedOut = true;
      break;
    }
  }
  relay(fds[0], relayStdout);
  relay(fds[1], STDERR_FILENO);
  KillLeftovers(sandbox, {});
  child.Kill();
  for (const int fd : fds) {
    if (fd >= 0) close(fd);
  }
  run.exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

}  // namespace wb
