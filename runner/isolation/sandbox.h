// What stands between the student's code and the runner: decided once per runner process,
// applied to every child by RunInChild, and stated in every report.
//
// Contract: CurrentSandbox() says what RunInChild applies on this machine and what it does
// not (yet), in words a reader of a report understands; `in_force` and `missing` of
// `check --format json` are these two lists (docs/instructors.md, "What a student's code can
// and cannot do"). When the runner runs as root, the child runs as kSandboxUid/kSandboxGid,
// a uid no file or login on the system has, with no supplementary groups: it cannot signal,
// trace or read the memory of the runner, nor write a file the runner or the instructor owns,
// As an ordinary user the child keeps the runner's uid, and the report says so. Where the
// kernel allows namespaces (confinement.h), the child and the compiler see only the system's
// files and what they need; a seccomp filter holds everywhere. Either way the runner is a
// subreaper, so after each run whatever the child started is killed, however it left the
// process group (setsid, a double fork), and nothing else is.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace wb {

// A uid and gid outside Debian's ranges for users (1000-59999), packages (60000-64999) and
// nobody (65534): nothing on the system owns a file with them.
constexpr uid_t kSandboxUid = 65533;
constexpr gid_t kSandboxGid = 65533;

struct SandboxPlan {
  bool dropPrivileges = false;  // the runner is root, so the child runs as kSandboxUid
  bool namespaces = false;      // fresh namespaces and a filesystem view (ProbeConfinement)
  std::vector<std::string> inForce;
  std::vector<std::string> missing;
};

const SandboxPlan& CurrentSandbox();

}  // namespace wb
