// The confined compiler; see process.h.
#include "process.h"

#include <fcntl.h>
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
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "../isolation/child_handle.h"
#include "../isolation/confinement.h"
#include "../isolation/sandbox.h"

namespace wb {
namespace {

void SetCompilerLimit(int resource, rlim_t value) {
  const rlimit limit{value, value};
  setrlimit(resource, &limit);
}

// The command's program, found on PATH as execvp would, so its folder can join the view.
std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string folders = path == nullptr ? "/usr/bin:/bin" : path;
  for (size_t begin = 0; begin <= folders.size();) {
    const size_t end = std::min(folders.find(':', begin), folders.size());
    const std::string candidate = fmt::format("{}/{}", folders.substr(begin, end - begin), name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return name;
}

// In the forked child; any step that fails ends it before the compiler runs.
[[noreturn]] void ExecCompiler(const std::vector<std::string>& argv, const std::string& program,
                               const FilesystemView& view, const std::string& scratch, const CompileLimits& limits,
                               int outFd, const SandboxPlan& sandbox, pid_t runner) {
  constexpr int kCannotStart = 127;
  setpgid(0, 0);
  SetCompilerLimit(RLIMIT_CORE, 0);
  SetCompilerLimit(RLIMIT_FSIZE, limits.fileBytes);
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  SetCompilerLimit(RLIMIT_CPU, static_cast<rlim_t>(std::ceil(limits.wallSeconds * static_cast<double>(cores))) + 1);
  dup2(outFd, STDOUT_FILENO);
  dup2(outFd, STDERR_FILENO);
  const int stdinFd = open("/dev/null", O_RDONLY);
  if (stdinFd >= 0) dup2(stdinFd, STDIN_FILENO);
  for (int fd = STDERR_FILENO + 1; fd < 1024; ++fd) close(fd);
  if (ApplySandbox(sandbox, view, scratch, SignalPolicy::kAny, runner) != nullptr) _exit(kCannotStart);
  SetCompilerLimit(RLIMIT_AS, limits.memoryBytes);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char path[] = "PATH=/usr/bin:/bin";
  char locale[] = "LC_ALL=C";  // plain quotes in messages, the same on every machine
  char tmp[] = "TMPDIR=/tmp";
  char* env[] = {path, locale, tmp, nullptr};
  execve(program.c_str(), args.data(), env);
  _exit(kCannotStart);
}

}  // namespace

Expected<CommandResult> RunCompiler(const std::vector<std::string>& argv, const CompilerView& compilerView,
                                    const CompileLimits& limits) {
  const SandboxPlan& sandbox = CurrentSandbox();
  const std::string program = FindProgram(argv.at(0));
  FilesystemView view = SystemView();
  view.readOnly.insert(view.readOnly.end(), compilerView.readOnly.begin(), compilerView.readOnly.end());
  view.readOnly.push_back(std::filesystem::path(program).parent_path().string());
  view.writable.push_back(compilerView.writable);
  // The view is built in an empty folder beside the output, which the compiler never sees.
  const std::string scratch = compilerView.writable + ".view";
  if (mkdir(scratch.c_str(), 0700) != 0 && errno != EEXIST) {
    return SystemError(fmt::format("{}: cannot make a folder for the compiler's sandbox: {}", scratch,
                                   std::strerror(errno)));
  }
  struct RemoveScratch {
    const std::string& path;
    ~RemoveScratch() { rmdir(path.c_str()); }
  } removeScratch{scratch};
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return SystemError(fmt::format("pipe: {}", std::strerror(errno)));
  const pid_t runner = getpid();
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(fds[0]);
    close(fds[1]);
    return SystemError(fmt::format("cannot run {}: fork: {}", argv[0], std::strerror(e)));
  }
  if (pid == 0) ExecCompiler(argv, program, view, scratch, limits, fds[1], sandbox, runner);
  setpgid(pid, pid);
  ChildHandle compiler(pid);
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  CommandResult result;
  const auto deadline = start + std::chrono::duration<double>(limits.wallSeconds);
  bool open = true;
  const auto drain = [&] {
    char chunk[8192];
    while (open) {
      const ssize_t n = read(fds[0], chunk, sizeof(chunk));
      if (n > 0) {
        result.outputBytes += static_cast<uint64_t>(n);
        const uint64_t kept = std::min<uint64_t>(limits.outputLimitBytes, result.output.size());
        result.output.append(chunk, std::min<size_t>(static_cast<size_t>(n), limits.outputLimitBytes - kept));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        if (n == 0 || errno != EAGAIN) open = false;
        return;
      }
    }
  };
  int status = 0;
  for (;;) {
    pollfd fd[2] = {{open ? fds[0] : -1, POLLIN, 0}, {compiler.endedFd(), POLLIN, 0}};
    poll(fd, 2, open ? 20 : 5);
    drain();
    if (compiler.TryReap(&status)) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      // By pid and by group, waited on for the grace period at most.
      if (!compiler.KillAndReap(&status)) status = SIGKILL;
      result.timedOut = true;
      break;
    }
  }
  drain();
  compiler.Kill();  // whatever the driver left running in its group
  close(fds[0]);
  result.exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace wb
