// The kernel's walls around a process that is about to run untrusted code: the student's
// harness, or the compiler reading the student's file.
//
// Contract: everything here but ProbeConfinement runs in a forked child between fork and
// exec, and returns false when a step fails, so that the child can end before any untrusted
// code runs. The steps, in the order a child takes them:
//   EnterNamespaces  fresh mount, network, IPC and UTS namespaces (and a user namespace
//                    when the runner is not root, which maps the runner's uid to itself), and
//                    a filesystem view that holds only the paths of a FilesystemView, each at
//                    its own path: the system's programs and libraries read-only, the few
//                    paths the process needs, a small private /tmp, /dev/null and friends.
//                    Everything else (the workbook tree, the hidden suites, the solutions,
//                    the report paths, home folders) is simply not there.
//   ApplySeccomp     a seccomp filter (libseccomp) that refuses, with EPERM, the system
//                    calls no stage function or compiler needs and that reach outside the
//                    process: ptrace, process_vm_readv/writev, mounts, namespaces, kernel
//                    modules and keys, bpf, perf events, io_uring, pidfds, sockets other than
//                    AF_UNIX, a move to another process group or session, new namespaces
//                    (clone flags; clone3 answers ENOSYS), the descriptor commands that aim
//                    signals elsewhere (F_SETOWN, F_SETSIG, O_ASYNC, FIOASYNC, ...) and
//                    the terminal's TIOCSTI; limits, priorities, CPUs and I/O classes of any
//                    process but itself; and with kSignalOwnGroupOnly, signals to any process
//                    but the child itself or its own process group. As an ordinary user the
//                    child has the runner's uid, so these are what keep it from the runner.
// ProbeConfinement says, once, in the runner, whether this machine allows the namespaces
// (a container may forbid them), so the report can say what is in force.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace wb {

struct FilesystemView {
  std::vector<std::string> readOnly;  // absolute host paths, visible at the same path
  std::vector<std::string> writable;  // absolute host paths, visible at the same path, writable
};

// The view every confined process starts from: the system's programs, libraries and
// configuration (/usr, /etc, the /lib and /bin links), and nothing of the workbook.
// EnterNamespaces adds /proc (the harness reads its own memory use there; AddressSanitizer
// its own maps): one of the view's own that shows only the child's uid where the runner may
// mount it, else the host's, read-only.
FilesystemView SystemView();

struct ConfinementProbe {
  bool namespaces = false;  // EnterNamespaces works here
  std::string whyNot;       // when it does not: the step that failed and errno's words
  bool privateProc = false; // the view's /proc is its own, hiding other uids' processes
  bool seccomp = false;     // ApplySeccomp works here (a kernel without seccomp refuses it)
  std::string whyNoSeccomp;
};

// Tries EnterNamespaces and ApplySeccomp, each in a throwaway child; the answer is cached
// for the process.
const ConfinementProbe& ProbeConfinement();

// `asRoot`: the runner is root, so no user namespace is needed (and the uid is dropped later).
// `scratch` is an empty folder the view's root is built in (it is mounted over, in the
// child's own namespace only).
bool EnterNamespaces(const FilesystemView& view, const std::string& scratch, bool asRoot);

enum class SignalPolicy { kAny, kSignalOwnGroupOnly };

bool ApplySeccomp(SignalPolicy signals);

// The step of EnterNamespaces or ApplySeccomp that failed last in this process.
const char* LastConfinementStep();

}  // namespace wb
