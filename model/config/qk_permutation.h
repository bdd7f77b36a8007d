// llama.cpp's q/k row permutation for llama-family GGUF files (`LlamaModel.permute`,
// llama.cpp's convert_hf_to_gguf.py).
//
// Contract: the converter regroups each head's rows so that the two halves HF's rotate_half
// pairs (i and i + headDim/2) become adjacent rows (2i and 2i + 1):
//   GGUF row h·hd + 2i + j  =  HF row h·hd + j·hd/2 + i,   i < hd/2, j ∈ {0, 1},
// with hd = rows / heads, heads = the projection's own head count (query heads for q,
// key/value heads for k). The same map applies to a bias vector (a matrix of one column).
// These functions are exact inverses of each other; rows must be a multiple of 2·heads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace wb::model {

uint64_t GgufRowOfHfRow(uint64_t hfRow, uint64_t rows, uint64_t heads);
uint64_t HfRowOfGgufRow(uint64_t ggufRow, uint64_t rows, uint64_t heads);

// A row-major rows x cols matrix (or a vector, cols = 1) from HF order to GGUF order, and back.
std::vector<float> PermuteRowsToGguf(std::span<const float> hf, uint64_t rows, uint64_t cols, uint64_t heads);
std::vector<float> PermuteRowsToHf(std::span<const float> gguf, uint64_t rows, uint64_t cols, uint64_t heads);

}  // namespace wb::model
