// What the block-shaped stages share: the packed weights of one decoder block (stage 1's
// contract, generated at build time) and how an element of one of the nine buffers is named.
//
// Contract: LoadBlockWeights reads a packed weight file (common/packed_weights.h) and
// refuses one whose shape or offsets are not the block contract's, naming the file, the
// field and how to regenerate it; BlockWeightsDriver is the Prepare of every stage that
// reads them (--weights, or the build's file). BlockElement names element `index` of a checkpoint
// buffer whose first row is token `firstRow`: "token 2, head 3, channel 17".
#pragma once

#include <string>

#include "../../common/expected.h"
#include "../../common/packed_weights.h"
#include "../../reference/block/block.h"
#include "../diagnose/observations.h"
#include "../stages/stage_driver.h"

namespace wb {

// The file the build generates: block-weights.wbk in the build tree.
std::string DefaultBlockWeightsPath(const std::string& buildRoot);

Expected<PackedWeights> LoadBlockWeights(const std::string& path);

// A stage driver whose cases all read the block's packed weights, loaded once per run.
class BlockWeightsDriver : public StageDriver {
 public:
  Status Prepare(const StageContext& context) override;

 protected:
  PackedWeights weights_;
};

std::string BlockElement(ref::Checkpoint c, size_t index, const ref::BlockShape& shape, int firstRow = 0);

// Rows, width and heads of a checkpoint buffer, for observations.
BufferGeometry BlockGeometry(ref::Checkpoint c, int rows, const ref::BlockShape& shape, int firstRow = 0);

}  // namespace wb
