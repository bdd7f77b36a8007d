#include "sandbox.h"

#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>


namespace wb {

const SandboxPlan& CurrentSandbox() {
  static const SandboxPlan plan = [] {
    SandboxPlan p;
    p.dropPrivileges = geteuid() == 0;
    p.inForce = {
        "stdin is /dev/null",
        "no core files",
        "a CPU-time limit (every core for the time limit) and a 1 MiB file-size limit, set before the harness starts",
        "no new privileges (no set-uid programs)",
        "the child is killed if the runner dies",
        "the runner cannot be traced or read while a child runs (not dumpable)",
        // In place of a pid namespace, by choice: the first process of a new pid namespace is
        // its init, which the kernel shields from the signals it sends itself
        // (pid_namespaces(7)), so abort() or raise() in the student's code would not end it
        // as they end any other program, and the report could not say what happened.
        "a child past its time limit is killed by its pid and its group, and waited for a bounded time",
        "the child's process group, and whatever it started outside it, is killed after each run (the runner "
        "is their subreaper, instead of a pid namespace, whose init the kernel would shield from abort() and "
        "raise())",
    };
    if (p.dropPrivileges) {
      p.inForce.push_back("the child runs as uid 65533, not as root, with no groups");
      p.inForce.push_back("a process-count limit for that uid");
    } else {
      p.missing.push_back(
          "an unprivileged uid: the runner is not root, so the child keeps the runner's own uid, and what is "
          "in force is what keeps it from the runner");
    }
    const ConfinementProbe& probe = ProbeConfinement();
    p.namespaces = probe.namespaces;
    if (p.namespaces) {
      p.inForce.push_back(p.dropPrivileges ? "fresh mount, network, IPC and UTS namespaces"
                                           : "fresh user, mount, network, IPC and UTS namespaces");
      p.inForce.push_back(
          "a filesystem view with only the system's programs and libraries and the harness (no workbook tree, no "
          "hidden suites, no solutions, no report paths) for the child, and the stage folder and contract headers "
          "for the compiler");
      p.inForce.push_back("no network");
      if (probe.privateProc) {
        p.inForce.push_back("a /proc of the child's own, in which the runner and other users' processes do not exist");
      } else {
        p.missing.push_back(
            "a /proc of the child's own: only root may mount one, so the child sees the host's /proc, read-only "
            "(other processes' command lines, not their memory: the runner is not dumpable)");
      }
    } else {
      p.missing.push_back(fmt::format("mount, network and IPC namespaces, and with them the filesystem view and no "
                                      "network: this machine refuses them ({})",
                                      probe.whyNot));
    }
    p.seccomp = probe.seccomp;
    if (p.seccomp) {
      p.inForce.push_back(
          "a seccomp filter: no ptrace, no access to other processes' memory, no signals but to its own process "
          "group, which it cannot leave, no signals by descriptor (F_SETOWN, O_ASYNC), no limits, priorities or "
          "CPUs of other processes, no sockets but AF_UNIX, no mounts, namespaces, kernel modules, keys, bpf, perf "
          "events or io_uring");
    } else {
      p.missing.push_back(fmt::format("a seccomp filter: this kernel refuses it ({})", probe.whyNoSeccomp));
    }
#ifdef __SANITIZE_ADDRESS__
    p.missing.push_back("an address-space limit (this runner is built with AddressSanitizer, for the workbook's tests)");
#else
    p.inForce.push_back("an address-space limit, set before the harness starts");
#endif
    p.inForce.push_back("a compile time and memory limit");
    return p;
  }();
  return plan;
}

const char* ApplySandbox(const SandboxPlan& plan, const FilesystemView& view, const std::string& scratch,
                         SignalPolicy signals, pid_t runner) {
  constexpr rlim_t kProcesses = 256;  // threads count too: room for OpenMP or a compiler, not a fork bomb
  if (plan.namespaces && !EnterNamespaces(view, scratch, plan.dropPrivileges)) return LastConfinementStep();
  if (plan.dropPrivileges) {
    const rlimit processes{kProcesses, kProcesses};
    setrlimit(RLIMIT_NPROC, &processes);
    // Groups first, then the gid, then the uid: once the uid is gone, nothing else can change.
    if (setgroups(0, nullptr) != 0 || setresgid(kSandboxGid, kSandboxGid, kSandboxGid) != 0 ||
        setresuid(kSandboxUid, kSandboxUid, kSandboxUid) != 0) {
      return "the sandbox uid";
    }
  }
  if (chdir("/") != 0) return "chdir";  // the runner's folder is not the child's
  // Both after the uid change, which would clear the parent-death signal.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "PR_SET_NO_NEW_PRIVS";
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != runner) return "PR_SET_PDEATHSIG";
  if (plan.seccomp && !ApplySeccomp(signals)) return LastConfinementStep();
  return nullptr;
}

}  // namespace wb
