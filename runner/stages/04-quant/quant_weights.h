// Stage 4's weights as the driver uses them: the three weight files read, checked and laid
// out as the contract's QuantWeights, plus their exact values for the reference.
//
// Contract: LoadQuantWeightSet opens one weight file (reference/gen/quant_weight_files.h) and
// refuses, naming the file and what is wrong, anything that is not the file the build
// writes: another architecture or shape, a missing tensor or one of another type or size, a
// checksum that does not match the tensors' bytes. It undoes llama.cpp's q/k row order, so
// `matrices[0]` is stage 1's WQ|WK|WV (QKV x D) as blocks, and `values` is the set's
// weights dequantized exactly (ggml's dequantize_row_*: every value is a float) in stage 1's
// packed layout, which the float64 reference reads as it reads stage 1's.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "common/expected.h"
#include "quant_call.h"
#include "reference/gen/quant_weight_files.h"

namespace wb::stage04 {

struct QuantMatrixBytes {
  Weight type = Weight::kQ8_0;
  int rows = 0;
  int cols = 0;
  std::vector<unsigned char> bytes;  // rows x (cols / 32) blocks of `type`
};

struct QuantWeightSet {
  ref::quant::WeightSet set = ref::quant::WeightSet::kQ8_0;
  std::string path;
  std::vector<float> rms1, rms2;
  // wqkv, wo, wgate, wup, wdown: QuantBlockCall::kMatrices' order.
  std::array<QuantMatrixBytes, 5> matrices;
  std::vector<float> values;  // the dequantized weights, in the stage-1 packed layout
};

// The three sets by name ("q8_0", "q4_0", "mixed").
using QuantWeightSets = std::map<std::string, QuantWeightSet>;

// Bytes of one block of a weight type: 34 (Q8_0) or 18 (Q4_0).
size_t BlockBytes(Weight type);

Expected<QuantWeightSet> LoadQuantWeightSet(const std::string& path, ref::quant::WeightSet set);

// The folder the build writes the three files to.
std::string DefaultQuantWeightsFolder(const std::string& buildRoot);

}  // namespace wb::stage04
