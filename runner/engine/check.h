// `check`: one stage, one case file, one implementation, a report.
//
// Suites: without --cases, the stage's visible suite runs in two passes: the quick pass
// (every case not marked "slow"), then, only when every quick case passed, the full pass
// (the slow ones); the report lists the slow cases it did not run (casesNotRun), and it
// passes only when every case of the suite ran and passed. A case file given with --cases
// runs every case, in file order (graders need every case's score).
//
// Contract: RunCheck returns a report for anything the student's code does, including
// not compiling; an Error for bad usage or bad data (exit 2) or for a failure of the
// workbook itself (exit 3). Every case goes through RunCase, which stamps the case's name
// and redacts a hidden case after its driver returns, so no driver can leak one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/expected.h"
#include "../cases/case_file.h"
#include "../report/report.h"
#include "../stages/stage_driver.h"
#include "paths.h"

namespace wb {

struct CheckOptions {
  int stage = 0;
  bool solutions = false;     // check solutions/ instead of stages/
  bool showHidden = false;    // report hidden cases in full (an instructor debugging a suite)
  std::string casesPath;      // default: the stage's visible suite, quick pass then full pass
  std::string stagesDir;      // another tree's stages/ folder (a submission)
  std::string harness;        // a prebuilt child executable (tests, planted bugs)
  std::string weightsPath;    // default: the stage's own data files
  double timeLimitSeconds = 0;  // 0: the stage's default
  uint64_t memoryLimitMiB = 1024;
  double compileSeconds = 60;   // the compiler's wall-clock limit
  bool leaderboard = false;     // also measure the stage's leaderboard figures (Gradescope)
  // A stage with models (5): check on the user's own model instead of the suite's toy ones,
  // with the prompt's token ids (default: 8 from the seed) and decode steps after it.
  std::string modelPath;
  std::vector<int> tokens;
  int decodeSteps = 3;
  std::string cache = "f32";
  // "mine": link the student's own stage files of the stages the child's provided kernels come
  // from (stage 5: 3 and 4) instead of their solutions. Resolved by RunCheck into the files.
  std::string kernels = "solutions";
  std::vector<std::string> kernelFiles;
  // The instruction-set version of the kernels to run (WB_KERNEL_VERSION); "": the code's own
  // choice. `check N --solutions` sets it for each of the stage's kernel_versions in turn.
  std::string kernelVersion;
};

Expected<RunReport> RunCheck(const CheckOptions& options, const WorkbookPaths& paths);

// One case through a driver: the driver's report with the case's name, hidden flag and
// redaction applied here, whatever the driver did.
Expected<CaseReport> RunCase(const StageDriver& driver, const CaseSpec& spec, const StageContext& context);

// The child executable `check` would run for these options: a prebuilt one, or the stage
// file compiled (a file that does not compile is reported, not an error).
struct Implementation {
  std::string impl;    // "student", "solution" or the harness path
  std::string source;  // the stage file
  std::string harness;
  bool compiled = true;
  std::string compilerOutput;
  bool compileStopped = false;  // the compiler ran past its limit: not the student's syntax
};
Expected<Implementation> PrepareImplementation(const CheckOptions& options, const StageInfo& stage,
                                               const StageBuild& build, const WorkbookPaths& paths);

// 0 when every case passed, 1 otherwise.
int ExitCodeFor(const RunReport& report);

}  // namespace wb
