// Deterministic data for the block stages: packed weights, input rows, RoPE tables.
//
// Contract: every value comes from SplitMix64 (common/splitmix64.h) in a documented order,
// so the same seed gives the same bytes on every machine.
//   weights: one stream seeded with the weight seed, walked in packed storage order;
//            norm weights 1 + u/4 (in [0.75, 1.25)), matrix entries u/16, u in [-1, 1).
//            u/16 keeps every projection's output near unit scale (512 terms of variance
//            1/768 each) so the block's buffers stay O(1) before a case scales them.
//   inputs:  one stream seeded with the case seed, row-major, value float(u * x_scale);
//            the first rows do not depend on how many rows are drawn.
//   tables:  cos and sin of t * 10000^(-f/32), rounded to float.
#pragma once

#include <cstdint>
#include <vector>

#include "../../common/packed_weights.h"
#include "../block/block_shape.h"

namespace ref {

constexpr uint64_t kBlockWeightSeed = 20261130;  // the stage-1 model: fixed, documented
constexpr double kRopeBase = 10000.0;

wb::PackedWeights GenerateBlockWeights(const BlockShape& shape, uint64_t seed);

// Multiplies every matrix entry (not the norm weights) by scale, rounding to float.
void ScaleBlockMatrices(const BlockShape& shape, std::vector<float>& packed, double scale);

std::vector<float> GenerateInputRows(uint64_t seed, int rows, int width, double scale);

// rows x headDim/2 tables for positions 0 .. rows-1.
void MakeFloatRopeTables(int rows, int headDim, double base, std::vector<float>& cos, std::vector<float>& sin);

}  // namespace ref
