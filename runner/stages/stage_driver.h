// A stage driver: how the runner checks one case of one stage.
//
// Contract: drivers.cc lists one driver per available stage. A driver names the harness
// library a student's file is linked with, the prebuilt solution child, and runs one case
// with a given child executable, returning a report for anything the child does.
#pragma once

#include <string>

#include "../../common/packed_weights.h"
#include "../cases/case_file.h"
#include "../isolation/child_process.h"
#include "../report/report.h"

namespace wb {

struct StageContext {
  const PackedWeights* weights = nullptr;  // the block stages' packed weights
  std::string harness;                     // the child executable
  std::string lessonPath;                  // for misconception links
  ChildLimits limits;
};

struct StageDriver {
  int number = 0;
  const char* harnessLibrary = "";   // linked with a student's stage file
  const char* solutionHarness = "";  // the solution's prebuilt child
  double (*defaultTimeLimit)(const CaseSpec&) = nullptr;
  CaseReport (*runCase)(const CaseSpec&, const StageContext&) = nullptr;
};

// nullptr when the stage has no driver yet.
const StageDriver* FindStageDriver(int stage);

}  // namespace wb
