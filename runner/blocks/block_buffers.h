// What the fused stages (3 and 4) make of the block's buffers that the contract lays out
// differently from stage 1: q, k and v as column slices of qkv, ffnOut derived from output
// and residual1, and the FFN's two halves as separate reference steps (hidden, then Wdown).
//
// Contract: ColumnSlice copies columns [first, first + width) of each of T rows. DeriveFfnOut
// is output - residual1 element by element, except that an element of either that was never
// written (or is NaN) passes through as it is, so a report says what the code left. The two
// reference steps are float64, over the weights given (stage 1's, or a quantized set's exact
// values), from whatever input rows they are given (the reference's, or the student's).
#pragma once

#include <span>
#include <vector>

#include "reference/block/block.h"
#include "reference/block/block_recipe.h"

namespace wb {

std::vector<float> ColumnSlice(std::span<const float> rows, int T, int rowWidth, int first, int width);

std::vector<float> DeriveFfnOut(std::span<const float> output, std::span<const float> residual1);

// hidden = SiLU(x . Wgate^T) * (x . Wup^T) (GatedBranch::kUp: SiLU on the up product instead).
std::vector<double> GatedHidden(std::span<const double> x, int T, const ref::BlockShape& shape,
                                const ref::BlockWeights& w, ref::GatedBranch branch);

// hidden . Wdown^T.
std::vector<double> DownProjection(std::span<const double> hidden, int T, const ref::BlockShape& shape,
                                   const ref::BlockWeights& w);

}  // namespace wb
