// Stage 1: one pre-norm decoder block, in float, with plain loops.
//
// Fill in the six TODO blocks in order, and run `./workbook check 1` after each one: the
// runner checks your nine buffers in the order the block computes them and stops at the
// first that is wrong. Each TODO says what it must write, what it may read, and where the
// lesson (docs/stages/01-block.md) explains how. Stuck on a checkpoint? `./workbook hint 1`
// shows one more hint for the first checkpoint you get wrong each time you run it.
//
// Everything you may rely on is in contracts/stage01_block.h: the sizes D, HQ, HKV, DH, KV,
// F, the constants RMS_EPS and ROPE_PAIRS, and the offsets OFF_RMS1 .. OFF_WDOWN of each
// tensor in `w`. Use the offsets; do not work them out from the shapes. Every buffer is
// row-major with one row per token: token t's row of a D-wide buffer starts at t * D, of a
// KV-wide buffer (k, v) at t * KV. Write every element of every output: the runner fills
// them with NaN before calling you, so an element you skip shows up as never written.
//
// Small helper functions of your own above decoder_block (a dot product, one row's RMSNorm,
// ...) are welcome: several steps need the same piece twice.
#include <cmath>
#include <cstddef>
#include <vector>

#include "stage01_block.h"

void decoder_block(int T, const float* w, const float* x,
                   const float* ropeCos, const float* ropeSin,
                   float* norm1, float* q, float* k, float* v, float* attnOut,
                   float* residual1, float* norm2, float* ffnOut, float* output) {
  std::vector<float> scores(T);  // scratch (T): one query head's attention scores, if you want it
  std::vector<float> hidden(F);  // scratch (F): one token's FFN hidden row, if you want it

  // 1. Writes norm1 (T x D): each row of x, RMS-normalised with RMS_EPS and scaled by the
  //    weight vector rms1 (D floats at w + OFF_RMS1). Reads x and w.
  //    How: lesson, "RMSNorm" (#rmsnorm). Checkpoint norm1.
  // TODO

  // 2. Writes q (T x D), k (T x KV) and v (T x KV): token t's norm1 row projected by WQ
  //    (D x D at OFF_WQ), WK (KV x D at OFF_WK) and WV (KV x D at OFF_WV), each stored
  //    (out, in). Reads norm1 and w. v is final after this step; q and k change in step 3.
  //    How: lesson, "Projections" (#projections-one-dot-product-per-weight-row).
  //    Checkpoint v (q and k are checked after step 3).
  // TODO

  // 3. Rewrites q and k in place with RoPE, at token t's position t: every head of both,
  //    with the angles in row t of ropeCos and ropeSin (ROPE_PAIRS entries per row, as the
  //    contract describes). v is not part of this step.
  //    How: lesson, "RoPE rotates the pairs (f, f+32)" (#rope-rotates-the-pairs-f-f32).
  //    Checkpoints q and k.
  // TODO

  // 4. Writes attnOut (T x D): head h of row t (DH floats at attnOut + t * D + h * DH) is
  //    query head h of token t attending, causally, over the keys and values of the
  //    tokens it may see, through the KV head that query head h shares. Reads q, k, v; may
  //    use scores. The head mapping, the mask, the score scale and the stable softmax:
  //    lesson, "Attention, step by step" (#attention-step-by-step). Checkpoint attnOut.
  // TODO

  // 5. Writes residual1 (T x D): attnOut's row projected by WO (D x D at OFF_WO), added to
  //    the residual stream. Reads x, attnOut and w.
  //    How: lesson, "Pre-norm: the residual stream is never normalised"
  //    (#pre-norm-the-residual-stream-is-never-normalised). Checkpoint residual1.
  // TODO

  // 6. The FFN half, for each token. Writes norm2 (T x D), RMSNorm of residual1 with the
  //    weights rms2 at OFF_RMS2; ffnOut (T x D), the gated FFN of norm2 through Wgate and
  //    Wup (F x D at OFF_WGATE and OFF_WUP) and Wdown (D x F at OFF_WDOWN); and output
  //    (T x D), the stream after the FFN half. Reads residual1 and w; may use hidden.
  //    How: lesson, "The block" (#the-block) and "The gated FFN" (#the-gated-ffn).
  //    Checkpoints norm2, ffnOut, output.
  // TODO
}
