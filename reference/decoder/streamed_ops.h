// The reference operators over weight matrices that stay in their files.
//
// Contract: a WeightMatrix is read kStreamRows rows at a time, dequantised to f32 (exact:
// every stored value is a float), and handed to the stage-1 operators of
// reference/block/ops.h, so a model is never materialised, neither in f32 nor in f64; the
// activations are double throughout. Errors come from the file (a row that cannot be
// dequantised) and name it.
#pragma once

#include <span>

#include "common/expected.h"
#include "reference/block/block_recipe.h"
#include "model/config/weight_source.h"

namespace ref {

constexpr int kStreamRows = 256;

// out[r, o] = Σ_i matrix[o, i] · x[r, i]: x is rows x matrix.cols, out rows x matrix.rows.
wb::Status ProjectStreamed(std::span<const double> x, int rows, const wb::model::WeightMatrix& matrix,
                           std::span<double> out);

// out[r] = matrix row ids[r], widened to double: out is ids.size() x matrix.cols.
wb::Status GatherRows(const wb::model::WeightMatrix& matrix, std::span<const int> ids, std::span<double> out);

// out = down(act(gate · x) ⊙ (up · x)), row by row (GatedFfn of ops.h, streamed).
wb::Status GatedFfnStreamed(std::span<const double> x, int rows, const wb::model::WeightMatrix& gate,
                            const wb::model::WeightMatrix& up, const wb::model::WeightMatrix& down,
                            Activation activation, std::span<double> out);

// x[r, c] += bias[c] for every row; nothing when bias is empty.
void AddBias(std::span<double> x, int rows, std::span<const float> bias);

}  // namespace ref
