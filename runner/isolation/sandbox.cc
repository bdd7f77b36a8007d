#include "sandbox.h"

#include <unistd.h>

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
        "the child's process group, and whatever it started outside it, is killed after each run",
    };
    if (p.dropPrivileges) {
      p.inForce.push_back("the child runs as uid 65533, not as root, with no groups");
      p.inForce.push_back("a process-count limit for that uid");
    } else {
      p.missing.push_back(
          "an unprivileged uid: the runner is not root, so the child has the runner's own uid and can signal it");
    }
    p.missing.push_back("pid, mount, network and IPC namespaces");
    p.missing.push_back("a filesystem view without the hidden suites, the solutions and the reference");
    p.missing.push_back("a seccomp filter");
    p.missing.push_back("an address-space limit before the harness starts (the harness sets it once it runs)");
    return p;
  }();
  return plan;
}

}  // namespace wb
