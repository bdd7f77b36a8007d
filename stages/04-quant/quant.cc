// Stage 4: the decoder block on quantized weights.
//
// Stage 3's block reads every weight as a 4-byte float, and at T = 1 (one token, a decode
// step) it can go no faster than memory delivers those bytes. Here the weights arrive in
// llama.cpp's GGUF block formats: Q8_0, 32 int8 codes and one half-precision scale in 34
// bytes, and Q4_0, 32 4-bit codes and one scale in 18 bytes, a quarter and an eighth of the
// float bytes. Every matrix product multiplies them by activations quantized to Q8_0 too, so
// the inner loop is a dot product of small integers, exact in 32-bit integers, scaled once per
// block. You write three functions:
//   quantize_q8_0  floats into Q8_0 blocks, bit for bit as llama.cpp's reference does it;
//   matmul_q       y = xq . W^T (or y += that) for a Q8_0 or Q4_0 weight matrix W;
//   quant_block    stage 3's block with every matmul a matmul_q on quantized activations.
// The block's float steps (RMSNorm, RoPE, attention, SiLU) are given below, working: they
// are not what this stage teaches.
//
// `./workbook check 4` checks quantize_q8_0 first (bit for bit), then matmul_q at shapes no
// tile divides, on 1, 2 and 3 threads, for both weight types, then the block's checkpoints in
// order: norm1, norm1q, q, k, v, attnOut, attnOutq, residual1, norm2, norm2q, hidden, hiddenq,
// ffnOut, output. `./workbook bench 4` then times matmul_q against this machine's memory
// bandwidth, at T = 1 and for a prompt. The lesson is docs/stages/04-quant.md;
// `./workbook hint 4` gives one more hint each time for the first thing that fails.
//
// Three words the contract (contracts/stage04_quant.h) and the lesson use:
//   block       QK = 32 consecutive values of a row that share one scale d: value j is
//               code j times d. The layouts are ggml's (BlockQ8_0, BlockQ4_0), byte for byte.
//   half        IEEE binary16, the scale's format; HalfToFloat and FloatToHalf (given in the
//               contract) convert exactly.
//   isum        the integer dot product of a weight block's and an activation block's 32
//               codes: exact in int32, multiplied by the two scales once per block.
//
// This file is compiled with -O3 -march=native -ffp-contract=fast -fschedule-insns
// -fsched-pressure -fopenmp: OpenMP's `#pragma omp parallel` and `#pragma omp simd` work
// here, and so do GCC's vector extensions. matmul_q and quant_block are given `threads` and
// must not use more; their results must be the same for any thread count and on every run.
// The runner fills every output with NaN bytes before calling you: an element or a block
// you skip shows as never written.
//
// A plain version first is a good plan: scalar loops that follow the contract's formulas
// pass every case. Then make matmul_q fast, re-running the check after each change and the
// bench to see what it bought.
//
// Optional, last: pack_q_bytes and pack_q (the contract's end), your own layout of a weight
// matrix made once before the calls, which matmul_q may then read from W.packed. Define both
// or neither; the lesson's last section says when it pays.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <omp.h>

#include "stage04_quant.h"

namespace {

// ==== Provided: not what this stage teaches ====================================================
// The block's float steps, which stages 1 and 3 taught: plain loops, the same code in
// stages/04-quant/quant.cc and solutions/04-quant/quant.cc, so the two differ only in what
// stage 4 asks for. [[maybe_unused]] keeps the compiler quiet until your quant_block calls them.

// RMSNorm of each of `rows` rows of D values: out = in / sqrt(mean(in^2) + RMS_EPS) * weight.
[[maybe_unused]] void RmsNormRows(int rows, const float* in, const float* weight, float* out) {
  for (int t = 0; t < rows; ++t) {
    const float* row = in + static_cast<size_t>(t) * D;
    float* result = out + static_cast<size_t>(t) * D;
    float sumSquares = 0.0f;
    for (int c = 0; c < D; ++c) sumSquares += row[c] * row[c];
    const float inverseRms = 1.0f / std::sqrt(sumSquares / D + RMS_EPS);
    for (int c = 0; c < D; ++c) result[c] = row[c] * inverseRms * weight[c];
  }
}

// RoPE in place on the q part (HQ heads from column 0) and the k part (HKV heads from column
// D) of each of the T rows of qkv, never the v part: pair (f, f + ROPE_PAIRS) of every head of
// row t turns by the angle whose cosine and sine are ropeCos[t * 32 + f] and ropeSin[t * 32 + f].
[[maybe_unused]] void ApplyRope(int T, float* qkv, const float* ropeCos, const float* ropeSin) {
  for (int t = 0; t < T; ++t) {
    const float* cosRow = ropeCos + static_cast<size_t>(t) * ROPE_PAIRS;
    const float* sinRow = ropeSin + static_cast<size_t>(t) * ROPE_PAIRS;
    for (int h = 0; h < HQ + HKV; ++h) {
      // Heads 0 .. HQ-1 are q's, from column 0; heads HQ .. HQ+HKV-1 are k's, from column D,
      // which is where q's last head ends: the q and k heads are adjacent in a qkv row.
      float* head = qkv + static_cast<size_t>(t) * QKV + h * DH;
      for (int f = 0; f < ROPE_PAIRS; ++f) {
        const float a = head[f];
        const float b = head[f + ROPE_PAIRS];
        head[f] = a * cosRow[f] - b * sinRow[f];
        head[f + ROPE_PAIRS] = a * sinRow[f] + b * cosRow[f];
      }
    }
  }
}

// attnOut (T x D): causal GQA attention over the rows of qkv (q | k | v, q and k after RoPE).
// Query head h of token t reads KV head h / (HQ / HKV) of tokens 0 .. t; scores are scaled by
// 1 / sqrt(DH) and go through a softmax (two passes: the maximum, then the weights), and the
// head's output is the weighted sum of the values. Tokens are shared out among `threads`
// threads; each (token, head) is computed by one thread in one fixed order, so the result does
// not depend on how many there are.
[[maybe_unused]] void CausalAttention(int T, const float* qkv, float* attnOut, int threads) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(DH));
  constexpr int kHeadsPerKv = HQ / HKV;
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> scores(static_cast<size_t>(T));
#pragma omp for schedule(dynamic, 4)
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < HQ; ++h) {
        const int kvHead = h / kHeadsPerKv;
        const float* query = qkv + static_cast<size_t>(t) * QKV + h * DH;
        float maximum = -INFINITY;
        for (int j = 0; j <= t; ++j) {
          const float* key = qkv + static_cast<size_t>(j) * QKV + D + kvHead * DH;
          float dot = 0.0f;
          for (int i = 0; i < DH; ++i) dot += query[i] * key[i];
          scores[j] = dot * scale;
          maximum = std::max(maximum, scores[j]);
        }
        float total = 0.0f;
        for (int j = 0; j <= t; ++j) {
          scores[j] = std::exp(scores[j] - maximum);
          total += scores[j];
        }
        float* out = attnOut + static_cast<size_t>(t) * D + h * DH;
        for (int i = 0; i < DH; ++i) out[i] = 0.0f;
        for (int j = 0; j <= t; ++j) {
          const float* value = qkv + static_cast<size_t>(j) * QKV + D + KV + kvHead * DH;
          const float weight = scores[j] / total;
          for (int i = 0; i < DH; ++i) out[i] += weight * value[i];
        }
      }
    }
  }
}

// gateThenHidden[i] = SiLU(gate[i]) * up[i] for `count` values, in place over the gate
// products; SiLU(g) = g / (1 + exp(-g)).
[[maybe_unused]] void SiluTimesUp(size_t count, float* gateThenHidden, const float* up) {
  for (size_t i = 0; i < count; ++i) {
    const float g = gateThenHidden[i];
    gateThenHidden[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace

void quantize_q8_0(int n, const float* x, BlockQ8_0* out) {
  // TODO quantize_q8_0: the n / QK blocks of Q8_0 of x, block b from x[b * QK .. b * QK + 31]:
  // out[b].d the half of the block's scale d = amax / 127 (amax the largest |x| of the block),
  // out[b].qs its 32 codes, each x times 1 / d rounded to the nearest integer with halfway
  // cases away from zero, bit for bit as the contract spells it (an all-zero block is d 0 and
  // codes 0). Lesson: "The Q8_0 block" (#the-q8_0-block) and "Quantizing activations"
  // (#quantizing-activations). Checkpoint quantize_q8_0.
}

void matmul_q(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int threads) {
  // TODO matmul_q: for every row t < T and weight row o < W.rows, y[t * W.rows + o] is the sum
  // over the row's W.cols / QK blocks b of half(W's block (o, b).d) * half(xq's block (t, b).d)
  // * isum, isum the exact int32 dot product of the two blocks' 32 codes (a Q4_0 code is its
  // nibble minus 8; value j < 16 is the low nibble of qs[j], value j >= 16 the high nibble of
  // qs[j - 16]). Written with kOverwrite, added with kAdd; every element exactly once, on at
  // most `threads` threads, the same bits for any count. Lesson: "The Q4_0 block"
  // (#the-q4_0-block) and "The integer dot product" (#the-integer-dot-product).
  // Checkpoint matmul_q.
}

void quant_block(int T, int threads, const QuantWeights& w, const float* x,
                 const float* ropeCos, const float* ropeSin,
                 float* norm1, BlockQ8_0* norm1q, float* qkv, float* attnOut,
                 BlockQ8_0* attnOutq, float* residual1, float* norm2, BlockQ8_0* norm2q,
                 float* hidden, BlockQ8_0* hiddenq, float* output) {
  // Lesson for every step below: "The quantized block" (#the-quantized-block).

  // 1. TODO norm1 (T x D): RmsNormRows of x with w.rms1; then norm1q (T x D / QK blocks), its
  //    quantization with quantize_q8_0. Checkpoints norm1 and norm1q.

  // 2. TODO qkv (T x QKV) = norm1q . wqkv^T: ONE matmul_q over w.wqkv (WQ|WK|WV as one
  //    matrix). Checkpoint v.

  // 3. TODO RoPE in place on the q and k parts of each qkv row (ApplyRope). Checkpoints q, k.

  // 4. TODO attnOut (T x D): CausalAttention over qkv; then attnOutq, its quantization.
  //    Checkpoints attnOut and attnOutq.

  // 5. TODO residual1 (T x D) = x + attnOutq . wo^T: residual1 starts as a copy of x, then one
  //    matmul_q with w.wo adds into it (Accumulate::kAdd). Checkpoint residual1.

  // 6. TODO norm2 (T x D): RmsNormRows of residual1 with w.rms2; then norm2q, its
  //    quantization. Checkpoints norm2 and norm2q.

  // 7. TODO hidden (T x F) = SiLU(norm2q . wgate^T) * (norm2q . wup^T): two matmul_q calls
  //    (w.wgate and w.wup) and SiluTimesUp to combine them; then hiddenq, its quantization.
  //    Checkpoints hidden and hiddenq.

  // 8. TODO output (T x D) = residual1 + hiddenq . wdown^T: output starts as a copy of
  //    residual1, then one matmul_q with w.wdown adds into it. The runner checks ffnOut as
  //    output - residual1. Checkpoints ffnOut and output.
}
