// The float64 reference of one decoder block, as nine checkpoints.
//
// Contract: the block is the sequence of nine named buffers below, in dependency order.
// ComputeCheckpoint evaluates one of them from its upstream buffers, so the same function
// builds the reference chain (upstream = the reference's own buffers), the runner's local
// check (upstream = the student's buffers) and each misconception (a flipped recipe).
//
//   norm1     = RMSNorm(x) * rms1                          rows x model
//   q         = RoPE(norm1 . WQ^T)                         rows x qWidth
//   k         = RoPE(norm1 . WK^T)                         rows x kvWidth
//   v         = norm1 . WV^T                               rows x kvWidth
//   attnOut   = causal GQA softmax(q k^T * scale) v        rows x qWidth
//   residual1 = x + attnOut . WO^T                         rows x model
//   norm2     = RMSNorm(residual1) * rms2                  rows x model
//   ffnOut    = (SiLU(norm2 . Wgate^T) * norm2 . Wup^T) . Wdown^T   rows x model
//   output    = residual1 + ffnOut                         rows x model
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "block_recipe.h"
#include "block_shape.h"

namespace ref {

enum class Checkpoint { kNorm1, kQ, kK, kV, kAttnOut, kResidual1, kNorm2, kFfnOut, kOutput };
constexpr int kCheckpointCount = 9;
constexpr std::array<Checkpoint, kCheckpointCount> kCheckpointOrder = {
    Checkpoint::kNorm1, Checkpoint::kQ,         Checkpoint::kK,
    Checkpoint::kV,     Checkpoint::kAttnOut,   Checkpoint::kResidual1,
    Checkpoint::kNorm2, Checkpoint::kFfnOut,    Checkpoint::kOutput};

constexpr int Index(Checkpoint c) { return static_cast<int>(c); }
std::string_view CheckpointName(Checkpoint c);
// Values per row of a checkpoint buffer.
int CheckpointWidth(Checkpoint c, const BlockShape& shape);
// The checkpoints a checkpoint is computed from (x and the tables are always available).
std::span<const Checkpoint> Upstream(Checkpoint c);

// Views of the nine weight tensors, in the packed storage order of the stage-1 contract.
struct BlockWeights {
  std::span<const float> rms1, wq, wk, wv, wo, rms2, gate, up, down;
};
// Offsets (in floats) of the nine tensors in a packed buffer, in storage order.
std::array<size_t, 9> PackedOffsets(const BlockShape& shape);
size_t PackedFloats(const BlockShape& shape);
BlockWeights ViewPacked(const BlockShape& shape, std::span<const float> packed);

// What the block reads besides its weights: `rows` input rows and their RoPE tables.
struct BlockInputs {
  int rows = 0;
  std::span<const double> x;        // rows x model
  std::span<const double> ropeCos;  // rows x headDim/2
  std::span<const double> ropeSin;
};

using BlockState = std::array<std::vector<double>, kCheckpointCount>;

// One checkpoint from `upstream` (only the buffers Upstream(c) names are read).
std::vector<double> ComputeCheckpoint(Checkpoint c, const BlockShape& shape,
                                      const BlockRecipe& recipe, const BlockWeights& weights,
                                      const BlockInputs& inputs, const BlockState& upstream);

// The whole chain: every checkpoint from the reference's own upstream buffers.
BlockState RunBlock(const BlockShape& shape, const BlockRecipe& recipe,
                    const BlockWeights& weights, const BlockInputs& inputs);

}  // namespace ref
