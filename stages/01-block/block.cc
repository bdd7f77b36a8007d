// Stage 1: one pre-norm decoder block, in float, with plain loops.
//
// Fill in the six TODO blocks in order, and run `./workbook check 1` after each one: the
// runner checks your nine buffers in the order the block computes them and stops at the
// first that is wrong. Lesson: docs/stages/01-block.md.
//
// Everything you need is in contracts/stage01_block.h: the sizes D, HQ, HKV, DH, KV, F,
// RMS_EPS, ROPE_PAIRS and the offsets OFF_RMS1 .. OFF_WDOWN of each tensor in `w`. Use the
// offsets; do not work them out from the shapes. Buffers are row-major: token t's row of a
// D-wide buffer starts at t * D, of a KV-wide buffer (k, v) at t * KV.
#include <cmath>
#include <cstddef>
#include <vector>

#include "stage01_block.h"

void decoder_block(int T, const float* w, const float* x,
                   const float* ropeCos, const float* ropeSin,
                   float* norm1, float* q, float* k, float* v, float* attnOut,
                   float* residual1, float* norm2, float* ffnOut, float* output) {
  std::vector<float> scores(T);  // scratch: one query's attention scores (you may use it)
  std::vector<float> hidden(F);  // scratch: one token's FFN hidden row (you may use it)

  // 1. norm1 (T x D). For each token: divide its row of x by sqrt(mean of the squares
  //    + RMS_EPS), then multiply element by element with the weights at w + OFF_RMS1.
  // TODO

  // 2. q (T x D), k (T x KV), v (T x KV): each a matrix times norm1's row. WQ is D x D at
  //    OFF_WQ, WK and WV are KV x D at OFF_WK and OFF_WV; output element o of a matrix
  //    is the dot product of its row o with the input row.
  // TODO

  // 3. RoPE on q and k, in place. Each head has DH = 64 values; at token t, value f and
  //    value f + 32 of every head form a pair rotated by the angle whose cosine and sine
  //    are ropeCos[t * 32 + f] and ropeSin[t * 32 + f]: (a, b) -> (a cos - b sin,
  //    a sin + b cos). v is not rotated.
  // TODO

  // 4. attnOut (T x D): causal attention. For token t and query head h, which reads
  //    key/value head h / 4: a score for every key j <= t is the dot product of the two
  //    64-value heads times 1/sqrt(DH) = 1/8. Turn the scores into weights with a softmax
  //    that subtracts the largest score first, and write the weighted sum of the value
  //    heads into head h of attnOut's row t.
  // TODO

  // 5. residual1 (T x D) = x + WO times attnOut's row (WO is D x D at OFF_WO).
  // TODO

  // 6. The FFN half, for each token:
  //    norm2 = RMSNorm of residual1 with the weights at OFF_RMS2;
  //    gate = Wgate . norm2 and up = Wup . norm2 (both F x D);
  //    hidden = SiLU(gate) * up, element by element, where SiLU(g) = g / (1 + exp(-g));
  //    ffnOut = Wdown . hidden (Wdown is D x F);  output = residual1 + ffnOut.
  // TODO
}
