// Runs a command to completion and captures what it printed (stdout and stderr merged).
// Used for the compiler; student code runs through isolation/child_process instead.
#pragma once

#include <string>
#include <vector>

#include "../../common/expected.h"

namespace wb {

struct CommandResult {
  int exitStatus = 0;  // the exit status, or 128 + signal
  std::string output;
};

Expected<CommandResult> RunCommand(const std::vector<std::string>& argv);

}  // namespace wb
