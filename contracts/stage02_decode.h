// Stage 2 contract: decoding with a KV cache and one-pass attention.
//
// Shared, unchanged, by stages/02-kv-cache/decode.cc (your file) and
// solutions/02-kv-cache/decode.cc; the runner's harness is compiled against it too. Read it,
// use its names, never edit it: graders compile your file against this exact header.
//
// Everything from stage 1 holds: the sizes, the packed weights `w` at the offsets
// OFF_RMS1 .. OFF_WDOWN, the nine buffers and what each one holds (stage01_block.h).
//
// What is new. One call runs the block on n new tokens at absolute positions
// pos .. pos + n - 1; a generation is a first call (the prefill) at pos = 0, then calls
// that continue where the previous one stopped, usually with n = 1 (decode steps).
//
// RoPE tables. ropeCos and ropeSin are MAX_T x 32 and cover every absolute position:
// entry [p * 32 + f] is cos / sin of the angle p * 10000^(-f / 32), the same formula as
// stage 1. Token t of a call sits at position pos + t and is rotated with row pos + t.
//
// The cache. kCache and vCache are MAX_T x KV, row-major: row p holds the key (after
// RoPE) and the value of the token at position p. The caller owns them and keeps them
// between calls. When a call starts, rows 0 .. pos - 1 hold what earlier calls wrote; the
// call writes rows pos .. pos + n - 1 and no other row.
//
// Attention. The token at position p attends to cache rows 0 .. p (itself included, no
// later row), in one pass over the rows with an online softmax: a running maximum, a
// running normaliser and an accumulator that is rescaled whenever the maximum grows. No
// array of scores.
#pragma once

#include "stage01_block.h"

constexpr int MAX_T = 4096;  // positions the cache and the RoPE tables hold

// Runs one pre-norm decoder block over n new tokens at positions pos .. pos + n - 1,
// with 1 <= n and pos + n <= MAX_T.
//   x: n x D input rows.  ropeCos, ropeSin: MAX_T x ROPE_PAIRS.
//   kCache, vCache: MAX_T x KV; read rows 0 .. pos + n - 1, write rows pos .. pos + n - 1.
//   Outputs, one row per new token, all to be fully written:
//   norm1, q, attnOut, residual1, norm2, ffnOut, output: n x D;  k, v: n x KV.
//   q and k hold their values after RoPE; attnOut is the attention output before WO.
void decoder_step(int n, int pos, const float* w, const float* x,
                  const float* ropeCos, const float* ropeSin,
                  float* kCache, float* vCache,
                  float* norm1, float* q, float* k, float* v, float* attnOut,
                  float* residual1, float* norm2, float* ffnOut, float* output);
