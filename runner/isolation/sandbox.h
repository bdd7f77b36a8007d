// What stands between the student's code and the runner: decided once per runner process,
// applied to every child by RunInChild and to the compiler by RunCompiler, and stated in
// every report.
//
// Contract: CurrentSandbox() says what is applied on this machine and what is not, in words
// a reader of a report understands; `in_force` and `missing` of `check --format json` are
// these two lists, and `check --require-sandbox` refuses to grade while `missing` is not
// empty (docs/instructors.md, "What a student's code can and cannot do"). When the runner is
// root, the child and the compiler run as kSandboxUid/kSandboxGid, a uid no file or login on
// the system has, with no supplementary groups. Where the kernel allows namespaces
// (confinement.h), both see only the system's files and what they need; the seccomp filter
// and the limits hold everywhere. The runner is a subreaper, so after each run whatever the
// child started is killed, however it left the process group (setsid, a double fork), and
// nothing else is.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "confinement.h"

namespace wb {

// A uid and gid outside Debian's ranges for users (1000-59999), packages (60000-64999) and
// nobody (65534): nothing on the system owns a file with them.
constexpr uid_t kSandboxUid = 65533;
constexpr gid_t kSandboxGid = 65533;

struct SandboxPlan {
  bool dropPrivileges = false;  // the runner is root, so the child runs as kSandboxUid
  bool namespaces = false;      // fresh namespaces and a filesystem view (ProbeConfinement)
  bool seccomp = false;         // the seccomp filter (ProbeConfinement)
  std::vector<std::string> inForce;
  std::vector<std::string> missing;
};

const SandboxPlan& CurrentSandbox();

// In a forked child, once its descriptors are in place: the steps the plan holds, in this
// order, the same for the student's child and for the compiler: the namespaces and the view,
// the sandbox uid (with a process-count limit), "/" as the working folder, no new
// privileges, death with the runner (checked against `runner`, which closes the race with
// its death), and the seccomp filter. Returns the step that failed, or nullptr.
const char* ApplySandbox(const SandboxPlan& plan, const FilesystemView& view, const std::string& scratch,
                         SignalPolicy signals, pid_t runner);

}  // namespace wb
