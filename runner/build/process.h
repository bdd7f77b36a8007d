// Runs the compiler on a student's file: confined like the student's code (a filesystem view,
// no network, a seccomp filter, the sandbox uid when the runner is root) and under a
// wall-clock, memory and output limit. Student code itself runs through isolation/child_process.
//
// Contract: RunCompiler returns what the command printed (stdout and stderr merged, at most
// outputLimitBytes of it) and how it ended; an error only when the runner cannot start it.
// A command still running at the time limit is killed with its whole process group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/expected.h"

namespace wb {

struct CompileLimits {
  double wallSeconds = 60;
  uint64_t memoryBytes = uint64_t{4} << 30;    // address space of each compiler process
  uint64_t fileBytes = uint64_t{512} << 20;    // the largest file it may write
  uint64_t outputLimitBytes = uint64_t{1} << 20;  // kept of what it prints
};

struct CompilerView {
  std::vector<std::string> readOnly;  // absolute paths the compiler reads besides the system's
  std::string writable;               // the one folder it writes, its output in it
};

struct CommandResult {
  int exitStatus = 0;  // the exit status, or 128 + signal
  bool timedOut = false;
  uint64_t outputBytes = 0;  // all it printed, kept or not
  std::string output;
};

Expected<CommandResult> RunCompiler(const std::vector<std::string>& argv, const CompilerView& view,
                                    const CompileLimits& limits);

}  // namespace wb
