// Stage 2: one decoder step with a KV cache and one-pass attention, in float, with plain
// loops.
//
// Fill in the seven TODO blocks in order, and run `./workbook check 2` after each one: the
// runner calls your function several times per case (a prefill, then decode steps) and
// checks every buffer of every call, in the order they are computed: fix the first one it
// reports as wrong. Lesson: docs/stages/02-kv-cache.md.
//
// The contract is contracts/stage02_decode.h: MAX_T, the cache, the RoPE tables over
// absolute positions, and the signature. Sizes and offsets are stage 1's
// (contracts/stage01_block.h). Token t of this call sits at position pos + t; its rows in
// x and in the nine output buffers are row t, its rows in the cache and the RoPE tables
// are row pos + t. Blocks 1, 2, 6 and 7 are what you wrote in stage 1.
#include <cmath>
#include <cstddef>
#include <vector>

#include "stage02_decode.h"

void decoder_step(int n, int pos, const float* w, const float* x,
                  const float* ropeCos, const float* ropeSin,
                  float* kCache, float* vCache,
                  float* norm1, float* q, float* k, float* v, float* attnOut,
                  float* residual1, float* norm2, float* ffnOut, float* output) {
  std::vector<float> accumulator(DH);  // scratch: one query head's accumulator (you may use it)
  std::vector<float> hidden(F);        // scratch: one token's FFN hidden row (you may use it)

  // 1. norm1 (n x D): RMSNorm of each new row of x with the weights at OFF_RMS1, as in
  //    stage 1.
  // TODO

  // 2. q (n x D), k (n x KV), v (n x KV): WQ, WK and WV times norm1's row, as in stage 1.
  // TODO

  // 3. RoPE on q and k, in place, at absolute positions: token t of this call is at
  //    position pos + t, so its angles are row pos + t of the tables, ropeCos[(pos + t) * 32
  //    + f] and ropeSin[(pos + t) * 32 + f]. Not row t: that is its place in this call,
  //    not in the sequence.
  // TODO

  // 4. Append to the cache: row pos + t of kCache gets k's row t (after RoPE), row pos + t
  //    of vCache gets v's row t. Rows are KV = 128 floats wide. Write no other row: rows
  //    before pos hold earlier calls' keys and values, and the runner checks they are
  //    untouched.
  // TODO

  // 5. attnOut (n x D): attention in one pass. For token t (position p = pos + t) and
  //    query head h, which reads key/value head h / 4, visit the cache rows j = 0 .. p
  //    in order, never a row after p. Keep three things instead of an array of scores:
  //    the largest score so far m (start at -INFINITY), a normaliser l (start at 0) and
  //    a 64-value accumulator (start at 0). For each row: the score s is the dot product
  //    of the query head and key head j times 1/8. If s > m, multiply l and every value
  //    of the accumulator by exp(m - s), then set m = s. Then add e = exp(s - m) to l and
  //    e times value head j to the accumulator. Head h of attnOut's row t is the
  //    accumulator divided by l.
  // TODO

  // 6. residual1 (n x D) = x + WO times attnOut's row, as in stage 1.
  // TODO

  // 7. The FFN half, for each new token, as in stage 1: norm2 = RMSNorm of residual1
  //    (OFF_RMS2); hidden = SiLU(Wgate . norm2) * (Wup . norm2); ffnOut = Wdown . hidden;
  //    output = residual1 + ffnOut.
  // TODO
}
