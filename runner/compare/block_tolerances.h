// Per-checkpoint tolerances of the block stages (1 and 2), with the reasoning for each.
#pragma once

#include "../../reference/block/block.h"
#include "compare.h"

namespace wb {

Tolerance BlockTolerance(ref::Checkpoint checkpoint);

}  // namespace wb
