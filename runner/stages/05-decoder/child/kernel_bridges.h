// The stage-3 and stage-4 kernels as weight_kernels.cc calls them. Stages 3 and 4's contract
// headers each define the stage-1 sizes, so they cannot share a translation unit: each is
// included by one bridge file (float_bridge.cc, quant_bridge.cc) that forwards to it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "accumulate.h"

namespace wb::stage05 {

// Stage 3's matmul and matmul_swiglu (contracts/stage03_fused.h).
void FloatMatmul(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode, int threads);
void FloatSwiglu(int T, int out, int in, const float* x, const float* gate, const float* up, float* hidden,
                 int threads);

// Stage 4's blocks and kernels (contracts/stage04_quant.h).
constexpr int kQuantBlock = 32;       // QK
constexpr size_t kQ8BlockBytes = 34;  // sizeof(BlockQ8_0)
enum class QuantType { kQ8_0, kQ4_0 };
// quantize_q8_0 of n values into n / 32 blocks at `blocks`.
void QuantizeQ8_0(int n, const float* x, std::byte* blocks);
// matmul_q with W = {type, weights, rows, cols, packed, packedFirstRow}; xq as QuantizeQ8_0
// wrote it; packed null when the matrix is not packed.
void QuantMatmul(int T, const std::byte* xq, QuantType type, const std::byte* weights, int rows, int cols, float* y,
                 Accumulate mode, int threads, const std::byte* packed = nullptr, int packedFirstRow = 0);
// Stage 4's optional step: 0 when the stage-4 file defines neither pack_q_bytes nor pack_q,
// else the bytes pack_q_bytes asks for the matrix {type, weights, rows, cols}. A file that
// defines one and not the other is told so, on stderr, and the child stops.
size_t QuantPackedBytes(QuantType type, const std::byte* weights, int rows, int cols);
// pack_q of that matrix into `packed` (QuantPackedBytes bytes, zeroed, 64-byte aligned).
void QuantPack(QuantType type, const std::byte* weights, int rows, int cols, std::byte* packed);

}  // namespace wb::stage05
