// Stage 1 contract: one decoder block, float, plain loops.
//
// Shared, unchanged, by stages/01-block/block.cc (your file) and
// solutions/01-block/block.cc; the runner's harness is compiled against it too. Read it,
// use its names, never edit it: graders compile your file against this exact header.
//
// Shapes. D = 512 model width; HQ = 8 query heads and HKV = 2 key/value heads, each of
// DH = 64 values; KV = HKV * DH = 128; F = 1408 FFN hidden width.
//
// Packed weights. One float buffer `w`, tensors stored back to back in this order, each
// matrix row-major with shape (out, in), so row o of a matrix starts at OFF_X + o * in:
//   rms1 (D) | WQ (D x D) | WK (KV x D) | WV (KV x D) | WO (D x D) |
//   rms2 (D) | Wgate (F x D) | Wup (F x D) | Wdown (D x F)
// WQ|WK|WV and Wgate|Wup are adjacent on purpose (stage 3 fuses them).
//
// RoPE tables. ropeCos and ropeSin are T x 32: entry [t * 32 + f] is cos / sin of the
// angle t * 10000^(-f / 32), the angle of pair (f, f + 32) of every q and k head at
// position t.
#pragma once

constexpr int D = 512;         // model width
constexpr int HQ = 8;          // query heads
constexpr int HKV = 2;         // key/value heads
constexpr int DH = 64;         // values per head
constexpr int KV = HKV * DH;   // width of k and v rows: 128
constexpr int F = 1408;        // FFN hidden width
constexpr float RMS_EPS = 1e-5f;  // added to mean(x^2) inside the square root
constexpr int ROPE_PAIRS = DH / 2;  // 32 rotated pairs per head: (f, f + 32)

// Offsets into w, in floats.
constexpr int OFF_RMS1 = 0;
constexpr int OFF_WQ = OFF_RMS1 + D;
constexpr int OFF_WK = OFF_WQ + D * D;
constexpr int OFF_WV = OFF_WK + KV * D;
constexpr int OFF_WO = OFF_WV + KV * D;
constexpr int OFF_RMS2 = OFF_WO + D * D;
constexpr int OFF_WGATE = OFF_RMS2 + D;
constexpr int OFF_WUP = OFF_WGATE + F * D;
constexpr int OFF_WDOWN = OFF_WUP + F * D;
constexpr int PACKED_FLOATS = OFF_WDOWN + D * F;  // length of w: 2,819,072 floats

static_assert(HQ % HKV == 0, "query heads must split evenly over key/value heads");
static_assert(PACKED_FLOATS == 2819072, "the packed layout above is part of the contract");

// Runs one pre-norm decoder block over T tokens at positions 0 .. T-1.
//   x: T x D input rows.  Outputs, all row-major and all to be fully written:
//   norm1, q, attnOut, residual1, norm2, ffnOut, output: T x D;  k, v: T x KV.
//   q and k hold their values after RoPE; attnOut is the attention output before WO.
void decoder_block(int T, const float* w, const float* x,
                   const float* ropeCos, const float* ropeSin,
                   float* norm1, float* q, float* k, float* v, float* attnOut,
                   float* residual1, float* norm2, float* ffnOut, float* output);
