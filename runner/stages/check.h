// `check`: one stage, one case file, one implementation, a report.
//
// Contract: RunCheck returns a report for anything the student's code does, including
// not compiling; an Error only for bad usage or bad data (exit 2).
#pragma once

#include <cstdint>
#include <string>

#include "../../common/expected.h"
#include "../report/report.h"

namespace wb {

struct CheckOptions {
  int stage = 0;
  bool solutions = false;     // check solutions/ instead of stages/
  bool showHidden = false;    // report hidden cases in full (an instructor debugging a suite)
  std::string casesPath;      // default: the stage's visible suite
  std::string stagesDir;      // another tree's stages/ folder (a submission)
  std::string harness;        // a prebuilt child executable (tests, planted bugs)
  std::string weightsPath;    // default: the build's packed weights
  double timeLimitSeconds = 0;  // 0: the stage's default
  uint64_t memoryLimitMiB = 1024;
};

// Where the workbook's own files are: the source tree and the build tree.
struct WorkbookPaths {
  std::string sourceRoot;
  std::string buildRoot;
};
WorkbookPaths DefaultPaths();

Expected<RunReport> RunCheck(const CheckOptions& options, const WorkbookPaths& paths);

// 0 when every case passed, 1 otherwise.
int ExitCodeFor(const RunReport& report);

}  // namespace wb
