// Stage 3's kernels for weight_kernels.cc (kernel_bridges.h).
#include "kernel_bridges.h"
#include "stage03_fused.h"

namespace wb::stage05 {

void FloatMatmul(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode, int threads) {
  matmul(T, out, in, x, W, y, mode, threads);
}

void FloatSwiglu(int T, int out, int in, const float* x, const float* gate, const float* up, float* hidden,
                 int threads) {
  matmul_swiglu(T, out, in, x, gate, up, hidden, threads);
}

}  // namespace wb::stage05
