// Stage 1's driver: one case = generate the inputs, run decoder_block in a child,
// compare the nine buffers with the float64 reference, diagnose what is off.
#pragma once

#include <string>

#include "../../common/expected.h"
#include "../../common/packed_weights.h"
#include "../cases/case_file.h"
#include "../isolation/child_process.h"
#include "../report/report.h"
#include "stage_driver.h"

namespace wb {

// Reads the stage-1 packed weights and checks they have the contract's shape and offsets.
Expected<PackedWeights> LoadBlockWeights(const std::string& path);

CaseReport RunBlockCase(const CaseSpec& spec, const StageContext& context);

// The default wall-clock limit for a case of T tokens: 10 s, more for long sequences.
double DefaultBlockTimeLimit(int T);

}  // namespace wb
