// Stage 2: one decoder step with a KV cache and one-pass attention, in float, with plain
// loops.
//
// Fill in the seven TODO blocks in order, and run `./workbook check 2` after each one: the
// runner calls your function several times per case (a prefill, then decode steps) and
// checks every buffer of every call, in the order they are computed: fix the first one it
// reports as wrong. Each TODO says what it must write, what it may read, and where the
// lesson (docs/stages/02-kv-cache.md) explains how. Stuck? `./workbook hint 2` shows one
// more hint for the first checkpoint you get wrong each time you run it.
//
// The contract is contracts/stage02_decode.h: MAX_T, the cache, the RoPE tables over
// absolute positions, and the signature. Sizes and offsets are stage 1's
// (contracts/stage01_block.h). Token t of this call sits at position pos + t: its rows in
// x and in the nine output buffers are row t, its rows in the cache and the RoPE tables
// are row pos + t. Blocks 1, 2, 6 and 7 are what you wrote in stage 1; helper functions
// of your own above decoder_step are welcome.
#include <cmath>
#include <cstddef>
#include <vector>

#include "stage02_decode.h"

void decoder_step(int n, int pos, const float* w, const float* x,
                  const float* ropeCos, const float* ropeSin,
                  float* kCache, float* vCache,
                  float* norm1, float* q, float* k, float* v, float* attnOut,
                  float* residual1, float* norm2, float* ffnOut, float* output) {
  std::vector<float> accumulator(DH);  // scratch (DH): one query head's running sum, if you want it
  std::vector<float> hidden(F);        // scratch (F): one token's FFN hidden row, if you want it

  // 1. Writes norm1 (n x D): each new row of x, RMS-normalised and scaled by rms1
  //    (OFF_RMS1), as in stage 1. Reads x and w. Checkpoint stepS.norm1.
  // TODO

  // 2. Writes q (n x D), k (n x KV), v (n x KV): norm1's rows projected by WQ, WK and WV
  //    (OFF_WQ, OFF_WK, OFF_WV), as in stage 1. Reads norm1 and w. Checkpoint stepS.v.
  // TODO

  // 3. Rewrites q and k in place with RoPE, as in stage 1 but at absolute positions:
  //    token t of this call uses row pos + t of ropeCos and ropeSin, not row t.
  //    How: lesson, "RoPE at the absolute position" (#rope-at-the-absolute-position).
  //    Checkpoints stepS.q and stepS.k.
  // TODO

  // 4. Writes the call's rows of the cache: kCache row pos + t holds k's row t as it is
  //    after step 3, vCache row pos + t holds v's row t (rows of KV floats). Writes no
  //    other row of either cache. Reads k and v.
  //    How: lesson, "The cache" (#the-cache) and "Keys are cached after RoPE"
  //    (#keys-are-cached-after-rope). Checkpoints stepS.cacheOtherRows, stepS.kCache,
  //    stepS.vCache.
  // TODO

  // 5. Writes attnOut (n x D): head h of row t is query head h of the token at position
  //    p = pos + t attending over cache rows 0 .. p (never a later row), through the same
  //    KV head as in stage 1, in one pass over the rows with an online softmax: no array
  //    of scores. Reads q, kCache and vCache; may use accumulator.
  //    How: lesson, "Attention in one pass: the online softmax"
  //    (#attention-in-one-pass-the-online-softmax) and "A token attends to rows 0 to p
  //    only" (#a-token-attends-to-rows-0-to-p-only). Checkpoint stepS.attnOut.
  // TODO

  // 6. Writes residual1 (n x D): attnOut projected by WO (OFF_WO) and added to the
  //    residual stream, as in stage 1. Reads x, attnOut and w. Checkpoint stepS.residual1.
  // TODO

  // 7. Writes norm2, ffnOut and output (n x D each): the FFN half, as in stage 1
  //    (OFF_RMS2, OFF_WGATE, OFF_WUP, OFF_WDOWN). Reads residual1 and w; may use hidden.
  //    Checkpoints stepS.norm2, stepS.ffnOut, stepS.output; then sameAsPrefill.
  // TODO
}
