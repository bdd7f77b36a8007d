// The seccomp filter of the sandbox (runner/isolation/confinement.h), call by call, as it
// stands between a child and a process of its own uid: what an ordinary user's runner is to
// the student's code. Each case forks a "victim" (the runner's stand-in, in a group of its
// own) and a "prisoner" under the filter, which tries one call on the victim and reports its
// errno; a call the filter lets through is a hole (the test names it), a call the child needs
// on itself must still work. The victim is checked afterwards: alive, its limits and
// priority as they were.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/sockios.h>

#include <cerrno>
#include <functional>

#include "runner/isolation/confinement.h"

namespace {

constexpr int kFilterRefused = 200;  // the prisoner could not load the filter
constexpr int kIoprioWhoProcess = 1;
constexpr int kIoprioWhoUser = 3;
// A uid no process runs as: the per-user calls below name it, so that a filter with a hole
// renices no one (the filter refuses PRIO_USER and IOPRIO_WHO_USER whatever uid they name).
constexpr id_t kUnusedUid = 65530;

// Whether this kernel runs seccomp filters at all; where it does not, the cases are skipped.
bool SeccompWorks() {
  static const bool works = wb::ProbeConfinement().seccomp;
  return works;
}

// A process that sleeps until killed, in a process group of its own, as the runner is.
struct Victim {
  pid_t pid = 0;
  Victim() {
    pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      for (;;) pause();
    }
    setpgid(pid, pid);
  }
  ~Victim() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  bool Alive() const { return waitpid(pid, nullptr, WNOHANG) == 0; }
};

// Runs `attempt` in a forked child under the filter (in a group of its own, no new
// privileges, as ApplySandbox leaves it) and returns what it returned: 0 when the call it
// tried worked, else the call's errno.
int InPrisoner(const std::function<int()>& attempt) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || !wb::ApplySeccomp(wb::SignalPolicy::kSignalOwnGroupOnly)) {
      _exit(kFilterRefused);
    }
    _exit(attempt());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int ErrnoOf(long result) { return result == -1 ? errno : 0; }

}  // namespace

TEST_CASE("the child cannot join another process group, start a session, or signal outside its own group") {
  if (!SeccompWorks()) return;
  Victim victim;
  CHECK(InPrisoner([&] { return ErrnoOf(setpgid(0, victim.pid)); }) == EPERM);
  CHECK(InPrisoner([] { return ErrnoOf(setsid()); }) == EPERM);
  // The attack this closes: into the runner's group, then kill(0) reaches the runner.
  CHECK(InPrisoner([&] {
          if (setpgid(0, victim.pid) == 0) kill(0, SIGKILL);
          return 0;
        }) == 0);
  CHECK(victim.Alive());
  CHECK(InPrisoner([&] { return ErrnoOf(kill(victim.pid, SIGKILL)); }) == EPERM);
  CHECK(InPrisoner([&] { return ErrnoOf(kill(-victim.pid, SIGKILL)); }) == EPERM);
  CHECK(InPrisoner([] { return ErrnoOf(kill(0, 0)); }) == 0);  // its own group
  CHECK(InPrisoner([] { return ErrnoOf(raise(SIGCONT)); }) == 0);
  CHECK(victim.Alive());
}

TEST_CASE("the child cannot aim a descriptor's signals at another process") {
  if (!SeccompWorks()) return;
  Victim victim;
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const int out = fds[1];  // as the child's stdout is the write end of the runner's pipe
  CHECK(InPrisoner([&] { return ErrnoOf(fcntl(out, F_SETOWN, victim.pid)); }) == EPERM);
  CHECK(InPrisoner([&] { return ErrnoOf(fcntl(out, F_SETSIG, SIGKILL)); }) == EPERM);
  CHECK(InPrisoner([&] {
          const f_owner_ex owner{F_OWNER_PID, victim.pid};
          return ErrnoOf(fcntl(out, F_SETOWN_EX, &owner));
        }) == EPERM);
  CHECK(InPrisoner([&] { return ErrnoOf(fcntl(out, F_SETFL, O_ASYNC | O_NONBLOCK)); }) == EPERM);
  CHECK(InPrisoner([&] {
          int on = 1;
          return ErrnoOf(ioctl(out, FIOASYNC, &on));
        }) == EPERM);
  CHECK(InPrisoner([&] {
          pid_t owner = victim.pid;
          return ErrnoOf(ioctl(out, FIOSETOWN, &owner));
        }) == EPERM);
  CHECK(InPrisoner([&] {
          char c = 'x';
          return ErrnoOf(ioctl(out, TIOCSTI, &c));
        }) == EPERM);
  // What a program does with its own descriptors still works.
  CHECK(InPrisoner([&] { return ErrnoOf(fcntl(out, F_SETFL, O_NONBLOCK)); }) == 0);
  CHECK(InPrisoner([&] { return ErrnoOf(fcntl(out, F_GETFL)); }) == 0);
  CHECK(InPrisoner([&] { return ErrnoOf(fcntl(out, F_DUPFD_CLOEXEC, 10)); }) == 0);
  CHECK(InPrisoner([&] { return ErrnoOf(fcntl(out, F_GETOWN)); }) == 0);
  close(fds[0]);
  close(fds[1]);
  CHECK(victim.Alive());
}

TEST_CASE("the child sets limits, priorities and CPUs of its own only") {
  if (!SeccompWorks()) return;
  Victim victim;
  rlimit before{};
  REQUIRE(prlimit(victim.pid, RLIMIT_FSIZE, nullptr, &before) == 0);
  const int niceBefore = getpriority(PRIO_PROCESS, static_cast<id_t>(victim.pid));
  CHECK(InPrisoner([&] {
          const rlimit none{0, 0};
          return ErrnoOf(prlimit(victim.pid, RLIMIT_FSIZE, &none, nullptr));
        }) == EPERM);
  CHECK(InPrisoner([&] { return ErrnoOf(setpriority(PRIO_PROCESS, static_cast<id_t>(victim.pid), 19)); }) == EPERM);
  CHECK(InPrisoner([] { return ErrnoOf(setpriority(PRIO_USER, kUnusedUid, 19)); }) == EPERM);
  CHECK(InPrisoner([&] {
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(0, &one);
          return ErrnoOf(sched_setaffinity(victim.pid, sizeof one, &one));
        }) == EPERM);
  CHECK(InPrisoner([&] {
          const sched_param param{};
          return ErrnoOf(sched_setscheduler(victim.pid, SCHED_IDLE, &param));
        }) == EPERM);
  CHECK(InPrisoner([&] { return ErrnoOf(syscall(SYS_ioprio_set, kIoprioWhoProcess, victim.pid, 7 | (3 << 13))); }) ==
        EPERM);
  CHECK(InPrisoner([] { return ErrnoOf(syscall(SYS_ioprio_set, kIoprioWhoUser, kUnusedUid, 7 | (3 << 13))); }) == EPERM);
  // Its own: getrlimit and setrlimit (prlimit64 of pid 0), nice, one CPU, its I/O class.
  CHECK(InPrisoner([] {
          rlimit stack{};
          if (getrlimit(RLIMIT_STACK, &stack) != 0) return errno;
          return ErrnoOf(setrlimit(RLIMIT_STACK, &stack));
        }) == 0);
  CHECK(InPrisoner([] { return ErrnoOf(prlimit(getpid(), RLIMIT_NOFILE, nullptr, nullptr)); }) == 0);
  CHECK(InPrisoner([] { return ErrnoOf(setpriority(PRIO_PROCESS, 0, 5)); }) == 0);
  CHECK(InPrisoner([] {
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(0, &one);
          return ErrnoOf(sched_setaffinity(0, sizeof one, &one));
        }) == 0);
  CHECK(InPrisoner([] { return ErrnoOf(syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, 7 | (2 << 13))); }) == 0);
  rlimit after{};
  REQUIRE(prlimit(victim.pid, RLIMIT_FSIZE, nullptr, &after) == 0);
  CHECK(after.rlim_cur == before.rlim_cur);
  CHECK(getpriority(PRIO_PROCESS, static_cast<id_t>(victim.pid)) == niceBefore);
  CHECK(victim.Alive());
}

TEST_CASE("the child makes threads and processes, but no namespaces") {
  if (!SeccompWorks()) return;
  CHECK(InPrisoner([] { return ErrnoOf(unshare(CLONE_NEWUSER)); }) == EPERM);
  CHECK(InPrisoner([] { return ErrnoOf(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0)); }) ==
        EPERM);
  CHECK(InPrisoner([] { return ErrnoOf(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, nullptr, nullptr, nullptr, 0)); }) ==
        EPERM);
#ifdef SYS_clone3
  // clone3's flags are in memory, out of the filter's sight: it is "not implemented", and
  // glibc falls back to clone.
  CHECK(InPrisoner([] { return ErrnoOf(syscall(SYS_clone3, nullptr, 0)); }) == ENOSYS);
#endif
  CHECK(InPrisoner([] {
          pthread_t thread;
          const int made = pthread_create(&thread, nullptr, [](void*) -> void* { return nullptr; }, nullptr);
          if (made != 0) return made;
          return pthread_join(thread, nullptr);
        }) == 0);
  CHECK(InPrisoner([] {
          const pid_t child = fork();
          if (child == 0) _exit(7);
          int status = 0;
          if (child < 0 || waitpid(child, &status, 0) != child) return errno;
          return WEXITSTATUS(status) == 7 ? 0 : 1;
        }) == 0);
}
