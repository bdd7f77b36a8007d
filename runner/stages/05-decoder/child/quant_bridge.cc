// Stage 4's kernels for weight_kernels.cc (kernel_bridges.h).
#include <cstdio>
#include <cstdlib>

#include "kernel_bridges.h"
#include "stage04_quant.h"

namespace wb::stage05 {

static_assert(kQuantBlock == QK && kQ8BlockBytes == sizeof(BlockQ8_0), "kernel_bridges.h mirrors stage 4's blocks");

void QuantizeQ8_0(int n, const float* x, std::byte* blocks) {
  quantize_q8_0(n, x, reinterpret_cast<BlockQ8_0*>(blocks));
}

void QuantMatmul(int T, const std::byte* xq, QuantType type, const std::byte* weights, int rows, int cols, float* y,
                 Accumulate mode, int threads, const std::byte* packed, int packedFirstRow) {
  const QuantMatrix W{type == QuantType::kQ8_0 ? WeightType::kQ8_0 : WeightType::kQ4_0, weights, rows, cols, packed,
                      packedFirstRow};
  matmul_q(T, reinterpret_cast<const BlockQ8_0*>(xq), W, y, mode, threads);
}

size_t QuantPackedBytes(QuantType type, const std::byte* weights, int rows, int cols) {
  const bool bytes = &pack_q_bytes != nullptr;
  const bool pack = &pack_q != nullptr;
  if (bytes != pack) {
    std::fprintf(stderr, "your stage-4 file defines %s but not %s: define both, or neither (stage04_quant.h)\n",
                 bytes ? "pack_q_bytes" : "pack_q", bytes ? "pack_q" : "pack_q_bytes");
    std::abort();
  }
  if (!bytes) return 0;
  return pack_q_bytes({type == QuantType::kQ8_0 ? WeightType::kQ8_0 : WeightType::kQ4_0, weights, rows, cols});
}

void QuantPack(QuantType type, const std::byte* weights, int rows, int cols, std::byte* packed) {
  pack_q({type == QuantType::kQ8_0 ? WeightType::kQ8_0 : WeightType::kQ4_0, weights, rows, cols}, packed);
}

}  // namespace wb::stage05
