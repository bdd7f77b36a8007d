// Stage 4's kernels for weight_kernels.cc (kernel_bridges.h).
#include "kernel_bridges.h"
#include "stage04_quant.h"

namespace wb::stage05 {

static_assert(kQuantBlock == QK && kQ8BlockBytes == sizeof(BlockQ8_0), "kernel_bridges.h mirrors stage 4's blocks");

void QuantizeQ8_0(int n, const float* x, std::byte* blocks) {
  quantize_q8_0(n, x, reinterpret_cast<BlockQ8_0*>(blocks));
}

void QuantMatmul(int T, const std::byte* xq, QuantType type, const std::byte* weights, int rows, int cols, float* y,
                 Accumulate mode, int threads) {
  const QuantMatrix W{type == QuantType::kQ8_0 ? WeightType::kQ8_0 : WeightType::kQ4_0, weights, rows, cols};
  matmul_q(T, reinterpret_cast<const BlockQ8_0*>(xq), W, y, mode, threads);
}

}  // namespace wb::stage05
