// Stage 3: the decoder block as a few fast kernels.
//
// Stage 1's block did its work one token and one dot product at a time, and spent most of
// its time waiting for weights to arrive from memory. Here the same block is four functions,
// and three of them are kernels the runner checks on their own before it runs the block:
//   matmul            y = x . W^T for all T rows at once, or y += that;
//   matmul_swiglu     the FFN's two input matmuls and SiLU(gate) * up in one pass;
//   causal_attention  every token's attention, reading q, k and v from the rows of qkv;
//   fused_block       the block as a short sequence of calls to those three.
// `./workbook check 3` checks matmul first, at shapes no tile divides and on 1, 2 and 3
// threads, then matmul_swiglu, causal_attention, and then the block's ten checkpoints in
// order, as stage 1 does. `./workbook bench 3` then times your kernels against this
// machine's limits and against OpenBLAS. The lesson is docs/stages/03-fused.md;
// `./workbook hint 3` gives one more hint each time for the first thing that fails.
//
// Three words the contract (contracts/stage03_fused.h) and the lesson use:
//   fused       two steps done in one pass over the data, so the intermediate result is
//               never written to memory and read back: WQ|WK|WV as one matmul, SwiGLU as
//               the last step of the matmul that makes gate and up, a residual add as the
//               last step of the matmul that makes its other term.
//   blocked     (tiled) a loop nest that works on a small block of the output at a time,
//               sized so that what it reads stays in registers and cache while it is reused.
//   accumulate  Accumulate::kAdd: the matmul adds its product to what y already holds,
//               instead of writing over it (kOverwrite).
//
// This file is compiled with -O3 -march=native -ffp-contract=fast -fschedule-insns
// -fsched-pressure -fopenmp: OpenMP's `#pragma omp parallel` and `#pragma omp simd` work
// here, and so do GCC's vector extensions. Each kernel is given `threads` and must not use
// more; its result must be the same for any thread count and on every run. The runner fills
// every output with NaN before calling you: an element you skip shows as never written.
//
// A plain version first is a good plan: stage 1's loops inside these four functions pass
// every case on one thread. Then make them fast, one kernel at a time, re-running the check
// after each change and the bench to see what it bought.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include <omp.h>

#include "stage03_fused.h"

void matmul(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode, int threads) {
  // TODO matmul: for every row t < T and column o < out, the dot product of x's row t (in
  // floats at x + t * in) with W's row o (in floats at W + o * in); written to y[t * out + o]
  // with kOverwrite, added to it with kAdd. Every element exactly once, on at most `threads`
  // threads. Lesson: "Register tiles" (#register-tiles) and "Threads without races"
  // (#threads-without-races). Checkpoint matmul.
}

void matmul_swiglu(int T, int out, int in, const float* x, const float* Wgate, const float* Wup, float* hidden,
                   int threads) {
  // TODO matmul_swiglu: hidden[t * out + o] = SiLU(g) * u, where g and u are x's row t
  // dotted with Wgate's and Wup's row o, and SiLU(g) = g / (1 + exp(-g)). g and u are not
  // stored anywhere. Lesson: "Fusing the SwiGLU epilogue" (#fusing-the-swiglu-epilogue).
  // Checkpoint matmul_swiglu.
}

void causal_attention(int T, const float* qkv, float* attnOut, int threads) {
  // TODO causal_attention: head h of attnOut's row t (DH floats at attnOut + t * D + h * DH)
  // is query head h of token t (at qkv + t * QKV + h * DH) attending over the keys
  // (qkv + j * QKV + D + kvHead * DH) and values (qkv + j * QKV + D + KV + kvHead * DH) of
  // tokens j = 0 .. t, kvHead = h / (HQ / HKV), scores scaled by 1 / sqrt(DH), in one pass
  // over tiles of keys with an online softmax. Lesson: "Tiles of keys, one softmax"
  // (#tiles-of-keys-one-softmax). Checkpoint causal_attention.
}

void fused_block(int T, int threads, const float* w, const float* x,
                 const float* ropeCos, const float* ropeSin,
                 float* norm1, float* qkv, float* attnOut, float* residual1,
                 float* norm2, float* hidden, float* output) {
  // 1. TODO norm1 (T x D): stage 1's RMSNorm of each row of x, with rms1 at OFF_RMS1.
  //    Checkpoint norm1.

  // 2. TODO qkv (T x QKV): norm1 through WQ, WK and WV with ONE matmul call (the three
  //    matrices are adjacent rows of w, from OFF_WQ). Lesson: "One GEMM for q, k and v"
  //    (#one-gemm-for-q-k-and-v). Checkpoint v.

  // 3. TODO RoPE in place on the q part (HQ heads from column 0) and the k part (HKV heads
  //    from column D) of each qkv row, with row t of the tables; not the v part.
  //    Checkpoints q and k.

  // 4. TODO attnOut (T x D): causal_attention over qkv. Checkpoint attnOut.

  // 5. TODO residual1 (T x D) = x + attnOut . WO^T: residual1 starts as a copy of x, then
  //    one matmul with WO (at OFF_WO) adds into it. Lesson: "The residual as accumulate"
  //    (#the-residual-as-accumulate). Checkpoint residual1.

  // 6. TODO norm2 (T x D): RMSNorm of each row of residual1, with rms2 at OFF_RMS2.
  //    Checkpoint norm2.

  // 7. TODO hidden (T x F): one matmul_swiglu of norm2 over Wgate (OFF_WGATE) and Wup
  //    (OFF_WUP). Checkpoint hidden.

  // 8. TODO output (T x D) = residual1 + hidden . Wdown^T: output starts as a copy of
  //    residual1, then one matmul with Wdown (at OFF_WDOWN, rows of F) adds into it. The
  //    runner checks ffnOut as output - residual1. Checkpoints ffnOut and output.
}
