// Stage 3 contract: the decoder block as a few fast kernels.
//
// Shared, unchanged, by stages/03-fused/fused.cc (your file) and solutions/03-fused/fused.cc;
// the runner's harness is compiled against it too. Read it, use its names, never edit it:
// graders compile your file against this exact header.
//
// Everything from stage 1 holds: the sizes, the packed weights `w` at OFF_RMS1 .. OFF_WDOWN,
// the RoPE tables (T x ROPE_PAIRS), what norm1, q, k, v, attnOut, residual1, norm2 and output
// hold (stage01_block.h). What changes is how they are computed and where some of them live:
//
//   qkv (T x QKV)   row t is q's row t (D values, after RoPE), then k's (KV, after RoPE), then
//                   v's (KV): one matmul over WQ|WK|WV, which are adjacent in w, writes all
//                   three. The runner reads q, k and v as these column slices.
//   hidden (T x F)  SiLU(norm2 . Wgate^T) * (norm2 . Wup^T), the FFN's row before Wdown.
//   There is no ffnOut buffer: output = residual1 + hidden . Wdown^T is accumulated into a
//   copy of residual1, and the runner derives ffnOut as output - residual1.
//
// Every kernel takes `threads`: how many threads it may use (1, 2, 3, ...). The result must
// not depend on it beyond rounding, and two calls with the same inputs must give the same
// result: no two threads may write the same element.
#pragma once

#include "accumulate.h"
#include "stage01_block.h"

constexpr int QKV = D + 2 * KV;  // width of a qkv row: q | k | v, 768 values

// Accumulate {kOverwrite, kAdd}: whether a matmul writes y or adds its product to what y
// already holds (accumulate.h, shared with stage 4).

// y (T x out) = x (T x in) . W^T, or y += that with kAdd. W is row-major (out, in), so
// output column o of row t is the dot product of x's row t with W's row o. With kOverwrite
// every element of y is written and none is read; with kAdd every element is read once and
// written once.
void matmul(int T, int out, int in, const float* x, const float* W, float* y,
            Accumulate mode, int threads);

// hidden (T x out) = SiLU(x . Wgate^T) * (x . Wup^T), element by element, with
// SiLU(g) = g / (1 + exp(-g)). Wgate and Wup are each (out, in) row-major. The gate and up
// products are never stored: each pair is combined as soon as it is computed (a fused
// epilogue).
void matmul_swiglu(int T, int out, int in, const float* x, const float* Wgate,
                   const float* Wup, float* hidden, int threads);

// attnOut (T x D): causal GQA attention over the rows of qkv (q | k | v per row, q and k
// after RoPE), query head h reads KV head h / 4, one pass with an online softmax over key tiles.
// Token t's query head h (DH values at qkv + t * QKV + h * DH) attends to the keys and values
// of tokens 0 .. t with scores scaled by 1 / sqrt(DH); head h of attnOut's row t is the
// result. qkv is only read.
void causal_attention(int T, const float* qkv, float* attnOut, int threads);

// The block: ONE matmul over the adjacent rows WQ|WK|WV (out = QKV) into qkv; RoPE in
// place on its q and k parts; residual1 = copy of x, then WO accumulates into it; one
// matmul_swiglu over Wgate|Wup; output = copy of residual1, then Wdown accumulates into it.
//   x: T x D input rows. Outputs, all row-major and all to be fully written:
//   norm1, attnOut, residual1, norm2, output: T x D; qkv: T x QKV; hidden: T x F.
void fused_block(int T, int threads, const float* w, const float* x,
                 const float* ropeCos, const float* ropeSin,
                 float* norm1, float* qkv, float* attnOut, float* residual1,
                 float* norm2, float* hidden, float* output);
