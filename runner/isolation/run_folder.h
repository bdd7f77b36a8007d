// A folder of one run (a sandboxed child's copy of the harness, a compile's output), made so
// that a run killed before it could clean up (a watchdog's SIGKILL, a crash of the runner)
// leaves nothing behind for long.
//
// Contract: MakeRunFolder creates PARENT/PREFIX<pid>-XXXXXX (mkdtemp, mode 0700), the pid
// being this runner's, after removing every PARENT/PREFIX<pid>-* whose runner is no longer
// alive and that this user owns (root: any owner, since compile folders are the sandbox uid's). Only folders of that exact form are touched, so checks side by side keep
// theirs. Returns the new folder's path, or the system's reason it could not be made.
#pragma once

#include <string>

#include "../../common/expected.h"

namespace wb {

Expected<std::string> MakeRunFolder(const std::string& parent, const std::string& prefix);

}  // namespace wb
