// Stage 4 contract: the decoder block on quantized weights, with llama.cpp's block formats.
//
// Shared, unchanged, by stages/04-quant/quant.cc (your file) and solutions/04-quant/quant.cc;
// the runner's harness is compiled against it too. Read it, use its names, never edit it:
// graders compile your file against this exact header.
//
// Everything from stage 1 holds: the sizes, the RoPE tables (T x ROPE_PAIRS), what norm1,
// q, k, v, attnOut, residual1, norm2 and output hold (stage01_block.h); qkv and hidden are
// stage 3's (stage03_fused.h). What changes is that the weight matrices arrive quantized, in
// blocks of QK = 32 values with one scale each, and that every matrix product multiplies them
// by activations quantized the same way, with integer dot products.
//
// The two block layouts are ggml's, byte for byte (ggml's src/ggml-common.h: block_q8_0 and
// block_q4_0), and the rules below are those of its reference code (src/ggml-quants.c:
// quantize_row_q8_0_ref, quantize_row_q4_0_ref, dequantize_row_q4_0; src/ggml-cpu/quants.c:
// ggml_vec_dot_q4_0_q8_0, ggml_vec_dot_q8_0_q8_0), so a GGUF file's Q8_0 and Q4_0 tensors are
// these blocks as they are stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "accumulate.h"
#include "half.h"
#include "stage01_block.h"

constexpr int QK = 32;              // values per block
constexpr int QKV = D + 2 * KV;     // width of a qkv row: q | k | v, 768 values (as stage 3)

// A block of Q8_0: value j is qs[j] * half(d), with qs[j] in -127 .. 127.   34 bytes.
struct BlockQ8_0 {
  uint16_t d;       // the scale, IEEE binary16 bits
  int8_t qs[QK];
};
// A block of Q4_0: 4-bit codes q in 0 .. 15, two to a byte, value = (q - 8) * half(d).
// Value j < 16 is the LOW nibble of qs[j]; value j >= 16 is the HIGH nibble of qs[j - 16]:
//   value j < 16:   ((qs[j] & 15) - 8) * half(d)
//   value j >= 16:  ((qs[j - 16] >> 4) - 8) * half(d)                        18 bytes.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[QK / 2];
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18, "ggml's block sizes");

enum class WeightType { kQ8_0, kQ4_0 };

// A rows x cols matrix, row-major: row r is cols / QK blocks of `type`, starting at byte
// r * (cols / QK) * (block bytes) of `blocks`; cols is a multiple of QK. Row o of W is what
// output column o is dotted with, as in stage 3 (y = x . W^T).
struct QuantMatrix {
  WeightType type;
  const void* blocks;
  int rows;
  int cols;
  // The same matrix in your own layout, or null (the optional pack_q step, below). `blocks`
  // stays valid either way.
  const void* packed = nullptr;
  // Where W starts in the matrix that was packed: W is its rows [packedFirstRow,
  // packedFirstRow + rows), and `blocks` points at the first of them. 0 in stage 4; stage 5's
  // provided kernels share a matrix's rows out among threads as such slices, starting at
  // multiples of 16 rows where the matrices' shapes allow.
  int packedFirstRow = 0;
};

// The block's weights. wqkv is WQ|WK|WV as one QKV x D matrix (stage 3's adjacency);
// wgate and wup are F x D, wdown D x F, wo D x D. The norm weights stay float (D each).
struct QuantWeights {
  const float* rms1;
  QuantMatrix wqkv, wo;
  const float* rms2;
  QuantMatrix wgate, wup, wdown;
};

// ---- Provided: IEEE binary16 <-> float, HalfToFloat and FloatToHalf (half.h). ----------

// ---- What you write (stages/04-quant/quant.cc) ---------------------------------------------

// Quantizes n floats (n a multiple of QK) into n / QK blocks of Q8_0, block b from
// x[b * QK .. b * QK + 31], by llama.cpp's reference rule, bit for bit:
//   amax = the largest |x[j]| of the block;  d = amax / 127 (a float division);
//   out[b].d = FloatToHalf(d);
//   id = 1 / d computed from the FLOAT d (not the half), or 0 when d == 0;
//   out[b].qs[j] = x[j] * id rounded to the nearest integer, halfway cases away from zero
//   (what std::round and roundf do).
// Inputs are finite, and each block's amax is 0 or between 2^-100 and 2^20, so id is finite
// and half(d) is too.
void quantize_q8_0(int n, const float* x, BlockQ8_0* out);

// y (T x W.rows) = the rows of xq . W^T, or y += that with Accumulate::kAdd. xq holds T rows
// of W.cols / QK blocks, row t at xq + t * (W.cols / QK). Element (t, o) is, for W of either
// type, the sum over the row's blocks b of
//   HalfToFloat(W's block (o, b).d) * HalfToFloat(xq's block (t, b).d) * isum(o, t, b),
// where isum is the integer dot product of the 32 pairs of codes (the weight's value j as a
// signed integer, q - 8 for Q4_0, times xq's qs[j]), summed exactly in 32-bit integers (a
// 16-bit sum overflows: 32 x 127 x 127 = 516,128). Only float rounding may differ from this
// sum: the order of the float additions is yours, and so is scaling isum whole or as a few
// exact integer partial sums, each times the two scales (ggml's AVX2 code does the latter);
// the runner allows about 1e-4 of the result's RMS for it. With
// kOverwrite every element of y is written and none is read; with kAdd every element is
// read once and written once. At most `threads` threads, and the same bits for any count.
void matmul_q(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y,
              Accumulate mode, int threads);

// ---- Optional: the weights in a layout of your own -------------------------------------------
// A file may define both of these, or neither (lesson 4, "The last step: a layout of your own").
// When it defines them, the runner packs each weight matrix once, before the calls that use it
// and outside any timing: it asks pack_q_bytes(W) how many bytes the packed copy needs (at
// most twice W's own bytes plus 1 MiB, or the case fails with that message), hands pack_q that
// many zeroed bytes, aligned to 64, and from then on may pass W with W.packed pointing at them.
// W.packed is whatever pack_q wrote; W.blocks is still the matrix in ggml's layout, and
// matmul_q must give the results above from either (the runner checks both), reading the
// packed bytes where their layout allows and W.blocks elsewhere (a slice that starts inside
// one of your groups of rows, say: W.packedFirstRow, above). pack_q reads
// only W and writes only `packed`; the runner never reads the packed bytes. Leave both
// undefined and W.packed is always null. (Weak declarations: a file that does not define them
// links as before.)
[[gnu::weak]] size_t pack_q_bytes(const QuantMatrix& W);
[[gnu::weak]] void pack_q(const QuantMatrix& W, void* packed);

// The block on quantized weights, as stage 3's fused_block with every matmul a matmul_q:
//   norm1 = RMSNorm(x) . rms1;                    norm1q = quantize_q8_0(norm1)
//   qkv = norm1q . wqkv^T, then RoPE on its q and k parts (pairs (f, f + 32), as stage 1)
//   attnOut = causal GQA attention over qkv (stage 3's causal_attention);
//                                                  attnOutq = quantize_q8_0(attnOut)
//   residual1 = x + attnOutq . wo^T               (a copy of x, then matmul_q with kAdd)
//   norm2 = RMSNorm(residual1) . rms2;            norm2q = quantize_q8_0(norm2)
//   hidden = SiLU(norm2q . wgate^T) * (norm2q . wup^T);   hiddenq = quantize_q8_0(hidden)
//   output = residual1 + hiddenq . wdown^T        (a copy of residual1, then kAdd)
// Each *q buffer is the quantization of its float twin, row by row, exactly as quantize_q8_0
// does it. Shapes, all row-major and all to be fully written: norm1, attnOut, residual1,
// norm2, output: T x D floats; qkv: T x QKV; hidden: T x F; norm1q, attnOutq, norm2q:
// T x D / QK blocks; hiddenq: T x F / QK blocks. There is no ffnOut buffer: the runner derives
// it as output - residual1, as in stage 3.
void quant_block(int T, int threads, const QuantWeights& w, const float* x,
                 const float* ropeCos, const float* ropeSin,
                 float* norm1, BlockQ8_0* norm1q, float* qkv, float* attnOut,
                 BlockQ8_0* attnOutq, float* residual1, float* norm2, BlockQ8_0* norm2q,
                 float* hidden, BlockQ8_0* hiddenq, float* output);
