// Pieces every stage driver fills a report with the same way.
#pragma once

#include <string>

#include "../compare/compare.h"
#include "../report/report.h"

namespace wb {

// Status, counts, error size, tolerance and points of a checkpoint from its chain comparison.
void RecordComparison(const Comparison& chain, double points, CheckpointReport& checkpoint);

// A case whose code printed more than the output limit fails, with `flood` as its headline
// (or as a note when something else already headlines the case). Nothing when flood is "".
void ApplyOutputFlood(const std::string& flood, CaseReport& report);

}  // namespace wb
