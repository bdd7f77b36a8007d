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

// What a product does to its input rows first.
enum class ProductInputs {
  kExact,
  // For a Q8_0 or Q4_0 matrix, each input row rounded to float and quantized to Q8_0 blocks
  // (ggml's quantize_row_q8_0_ref: the model library's QuantizeRowQ8_0), then read back: the
  // values llama.cpp's kernels and stage 4's matmul_q multiply; other types are left exact.
  kQ8_0ForBlockMatrices,
};

// out[r, o] = Σ_i matrix[o, i] · x[r, i]: x is rows x matrix.cols, out rows x matrix.rows.
wb::Status ProjectStreamed(std::span<const double> x, int rows, const wb::model::WeightMatrix& matrix,
                           std::span<double> out, ProductInputs inputs = ProductInputs::kExact);

// out[r] = matrix row ids[r], widened to double: out is ids.size() x matrix.cols.
wb::Status GatherRows(const wb::model::WeightMatrix& matrix, std::span<const int> ids, std::span<double> out);

// out = down(act(gate · x) ⊙ (up · x)), row by row (GatedFfn of ops.h, streamed).
wb::Status GatedFfnStreamed(std::span<const double> x, int rows, const wb::model::WeightMatrix& gate,
                            const wb::model::WeightMatrix& up, const wb::model::WeightMatrix& down,
                            Activation activation, std::span<double> out,
                            ProductInputs inputs = ProductInputs::kExact);

// How far each element of GatedFfnStreamed's out may move when code of the hidden rows' Q8_0
// quantization (the input of `down`) that sits at a rounding boundary is rounded the other
// way: a float computation of the same hidden rows differs from this one's by float roundings,
// so a value within kFlipWindow code steps of a half-way point may take either neighbouring
// code, which moves out[r, o] by a code step times |down[o, i]|. The sum of those over every
// such code of row r; rows x down.rows. Empty when `inputs` does not quantize or `down` is not
// Q8_0 or Q4_0: nothing can flip.
constexpr double kFlipWindow = 0.02;  // code steps: float roundings of a hidden value move it far less
wb::Expected<std::vector<double>> GatedFfnFlipSlack(std::span<const double> x, int rows,
                                                    const wb::model::WeightMatrix& gate,
                                                    const wb::model::WeightMatrix& up,
                                                    const wb::model::WeightMatrix& down, Activation activation,
                                                    ProductInputs inputs);

// x[r, c] += bias[c] for every row; nothing when bias is empty.
void AddBias(std::span<double> x, int rows, std::span<const float> bias);

}  // namespace ref
