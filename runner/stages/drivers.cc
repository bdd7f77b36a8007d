// The table of stage drivers.
#include "block_stage.h"
#include "build_config.h"
#include "decode_stage.h"
#include "stage_driver.h"

namespace wb {

const StageDriver* FindStageDriver(int stage) {
  static const StageDriver kDrivers[] = {
      {.number = 1,
       .harnessLibrary = WB_HARNESS_STAGE01,
       .solutionHarness = WB_SOLUTION_STAGE01,
       .defaultTimeLimit = [](const CaseSpec& c) { return DefaultBlockTimeLimit(c.T); },
       .runCase = RunBlockCase},
      {.number = 2,
       .harnessLibrary = WB_HARNESS_STAGE02,
       .solutionHarness = WB_SOLUTION_STAGE02,
       .defaultTimeLimit = DefaultDecodeTimeLimit,
       .runCase = RunDecodeCase},
  };
  for (const StageDriver& d : kDrivers) {
    if (d.number == stage) return &d;
  }
  return nullptr;
}

}  // namespace wb
