// Stage 4, solved: the decoder block on llama.cpp's Q8_0 and Q4_0 weights.
//
// The contract (the two block layouts, QuantMatrix, the three signatures) is
// contracts/stage04_quant.h; sizes are stage 1's, qkv and hidden stage 3's. Compiled as student
// code is (-O3 -march=native -ffp-contract=fast -fschedule-insns -fsched-pressure -fopenmp).
// Portable C++ (GCC vector extensions and OpenMP), with one exception: the integer products
// of the vectorised kernel also come in an AVX2 and an AVX-512 VNNI version written with
// intrinsics, each compiled for its instruction set and chosen at run time, which give the
// portable version's results bit for bit ("the code products, one version per instruction
// set", below).
//
// A Q8_0 weight is 34 bytes per 32 values (1.0625 bytes a value), a Q4_0 weight 18 (0.5625):
// a quarter and an eighth of a float's 4 bytes. At T = 1 a matmul reads each weight once and
// is limited by memory bandwidth, so fewer bytes per weight is directly more tokens per
// second; the work per byte only has to keep up with the memory.
//
// matmul_q is kept as the three versions that lead to it, side by side (llm.c's dev/cuda
// style), each a complete kernel with the contract's signature:
//   1 MatmulQScalar      plain loops: per block the exact integer dot product, then the two
//                        scales; what a first correct version looks like;
//   2 MatmulQVectorised  two Q8_0 blocks or four Q4_0 blocks per 64-byte vector: the
//                        activation's codes arranged once per call, a Q8_0 weight's codes read
//                        as int16 lanes and split into even and odd codes, a Q4_0 quad's
//                        72 bytes read as two vectors, its codes gathered by a byte
//                        permutation and its nibbles picked out with shifts and masks (codes
//                        kept 0..15, the 8
//                        taken off afterwards as 8 x sum(x) per block); each block's products
//                        land in exact int32 lanes, converted to float and multiplied by the
//                        block pair's two scales into one float accumulator per row (ggml's
//                        AVX2 dot products scale partial sums the same way), summed across
//                        lanes once a row; four weight rows per pass share each activation
//                        load, while later rows' bytes are requested from memory;
//   3 MatmulQThreaded    version 2 on each thread's own contiguous band of weight rows, with
//                        the code products of the fastest instruction set this CPU has.
// matmul_q is version MATMULQ_VERSION (default 3).
//
// Every output element is one accumulator's sum over its row's blocks in order, reduced in
// one fixed order at the end; a row's group of four, and so its arithmetic, does not depend
// on the thread count: the results are bit-identical for any count, and two runs agree.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include <omp.h>

#if defined(__x86_64__)
#include <immintrin.h>  // the AVX2 and AVX-512 VNNI versions' intrinsics (below)
#endif

#include "stage04_quant.h"

#ifndef MATMULQ_VERSION
#define MATMULQ_VERSION 3
#endif

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

// ==== What this stage teaches ==================================================================

// out = value when overwriting, out += value when accumulating.
void Deliver(float& out, float value, Accumulate mode) { out = mode == Accumulate::kAdd ? out + value : value; }

// --- vectors ----------------------------------------------------------------------------------
// 64 bytes is one AVX-512 register: two Q8_0 blocks' 64 codes as int16 pairs, or four Q4_0
// blocks' 64 bytes of nibbles, or 16 int32 or float lanes. Each vector holds the work of
// several blocks, so every instruction of the inner loop serves two or four blocks. (GCC
// lowers a 64-byte vector to two 32-byte halves, or four 16-byte quarters, on a machine without
// AVX-512: the code stays correct and portable, only slower.)
typedef int8_t Bytes16 __attribute__((vector_size(16)));
typedef int8_t Bytes32 __attribute__((vector_size(32)));
typedef int16_t Words __attribute__((vector_size(64)));    // 32 int16
typedef uint16_t UWords __attribute__((vector_size(64)));  // 32 uint16
typedef int32_t Ints __attribute__((vector_size(64)));     // 16 int32
typedef uint32_t UInts __attribute__((vector_size(64)));   // 16 uint32
typedef float Floats __attribute__((vector_size(64)));     // 16 float
typedef uint16_t UHalves __attribute__((vector_size(32)));  // 16 uint16
typedef uint8_t UBytes __attribute__((vector_size(64)));    // 64 bytes

// Unaligned load: memcpy is how portable code says "these bytes as a vector".
template <typename V>
V Load(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Two 16-byte or two 32-byte pieces as one vector twice the size: the codes of blocks that sit
// 18 or 34 bytes apart in memory, side by side in one register.
Bytes32 Join16(const void* low, const void* high) {
  return __builtin_shufflevector(Load<Bytes16>(low), Load<Bytes16>(high), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
}
Words Join(Bytes32 low, Bytes32 high) {
  return reinterpret_cast<Words>(__builtin_shufflevector(low, high, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
      15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
      44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63));
}

// The scales of 16 blocks, half to float, exactly as the contract's HalfToFloat does one. A
// half's exponent and fraction bits, moved up 13 bits into a float's, make a float 2^112 times
// too small whose fraction is the half's: one multiply by 2^112 rescales it exactly, for
// normal halves and subnormal ones alike (both results are normal floats). Only the all-ones
// exponent (infinity, NaN) is picked out and kept all-ones. The sign bit goes back last.
// (Checked against HalfToFloat on all 65536 halves.)
Floats HalvesToFloats(UHalves halves) {
  const UInts h = __builtin_convertvector(halves, UInts);
  const UInts magnitude = (h & 0x7FFFu) << 13;
  const Floats scaled = reinterpret_cast<Floats>(magnitude) * 0x1p112f;
  const UInts finite = reinterpret_cast<UInts>(scaled);
  const UInts bits = (h & 0x7C00u) == 0x7C00u ? (magnitude | 0x7F800000u) : finite;
  return reinterpret_cast<Floats>(bits | ((h & 0x8000u) << 16));
}

// --- blocks' code products, in registers ------------------------------------------------------
// The contract lets a block's integer dot product reach the float sum as a few EXACT integer
// partial sums, each scaled by the block's two scales (ggml's AVX2 ggml_vec_dot_q8_0_q8_0 does
// this: mul_sum_i8_pairs_float, then one fused multiply-add with the broadcast scale). So a
// block needs no horizontal sum at all: its 32 products go into a few int32 lanes, 4 or 8
// products a lane, which are converted to float and multiply-added, with the block's scale,
// into a float accumulator. Each row sums its lanes once, at the very end.
//
// x86's pmaddwd would multiply int16 pairs and add neighbours into int32 in one instruction,
// but GCC 12 does not produce it from portable code (nor its cousins pmaddubsw and VNNI's
// vpdpbusd, outside a loop that ends in a scalar sum). The same result is three cheap steps:
//   1. the codes as int16, in vectors whose lanes are codes 2i and 2i + 1 (Q8_0) or an
//      arrangement of the nibbles (Q4_0), built with shifts and masks once the blocks' bytes
//      are side by side in one vector (Join, or one byte permutation);
//   2. products in int16 and the vectors added: lane i = w[a] * x[a] + w[b] * x[b] + ...,
//      exact as long as it stays within int16 (each case below says why it does);
//   3. int16 lanes added into int32: for Q8_0, each int32 lane's two halves sign-extended and
//      added; for Q4_0, four rows' vectors added across rows first (BlockSumsOfRows).
// The activation codes are widened and arranged once per call (Prepare), so every weight row
// and every token tile reuses them.

// Q8_0, two blocks at once (a and b): their 32 codes each, read as int16 lanes, hold code 2i in
// lane i's low byte and code 2i + 1 in its high byte (lanes 0 .. 15 block a's, 16 .. 31 block
// b's). Shifting left then arithmetically right by 8 sign-extends the low byte; the arithmetic
// right shift alone, the high one. xEven / xOdd hold the activation's codes 2i and 2i + 1 of
// the same two blocks. A product is at most 128 * 127 = 16256 in size (activation codes are
// within +-127: quantize_q8_0 never makes -128), so an even and an odd one fit int16 (32512),
// but four may not: each int32 lane's two halves are sign-extended before they are added. Int32
// lane i holds products 4i .. 4i + 3, lanes 0 .. 7 block a's and 8 .. 15 block b's.
Ints PartialSumsQ8Pair(const unsigned char* a, const unsigned char* b, Words xEven, Words xOdd) {
  const Words w = Join(Load<Bytes32>(a), Load<Bytes32>(b));
  const Ints sums = reinterpret_cast<Ints>(((w << 8) >> 8) * xEven + (w >> 8) * xOdd);
  return ((sums << 16) >> 16) + (sums >> 16);
}

// Q4_0, four blocks at once (a, b, c, d): their 16 packed bytes each, side by side in one
// vector and read as int16 lanes: lane 8k + i holds block k's bytes 2i and 2i + 1. Those are
// four codes per lane, one per nibble: bits 0-3 are value 2i, bits 4-7 value 2i + 16, bits
// 8-11 value 2i + 1, bits 12-15 value 2i + 17 (byte j's low nibble is value j, its high nibble
// value j + 16). Shifts and masks pick each nibble out into its own vector; Prepare arranges
// x's codes in the same four orders (x[0 .. 3]).
//
// The codes stay unsigned, 0 .. 15, as ggml's AVX2 Q4_0 code keeps them for its unsigned
// multiply: sum((q - 8) * x) = sum(q * x) - 8 * sum(x), and the 8 * sum(x) part, one number per
// activation block, is taken off per row four blocks at a time (see GroupDotQ4). A product q * x is
// at most 15 * 128 = 1920 in size, so the four of a lane (7680) fit int16. The result's int16
// lanes 8k .. 8k + 7 are block k's, four products each; BlockSumsOfRows adds them up.
Words NibbleSums(UWords v, const Words* x) {
  const Words q0 = reinterpret_cast<Words>(v & 15);
  const Words q1 = reinterpret_cast<Words>((v >> 4) & 15);
  const Words q2 = reinterpret_cast<Words>((v >> 8) & 15);
  const Words q3 = reinterpret_cast<Words>(v >> 12);
  return (q0 * x[0] + q1 * x[1]) + (q2 * x[2] + q3 * x[3]);
}

// The quad's four blocks wherever they are: the last, partial quad of a row, whose missing
// blocks repeat the row's last.
Words QuadSums(const unsigned char* a, const unsigned char* b, const unsigned char* c, const unsigned char* d,
               const Words* x) {
  return NibbleSums(reinterpret_cast<UWords>(Join(Join16(a, b), Join16(c, d))), x);
}

// Four consecutive Q4_0 blocks are 72 bytes: scales at bytes 0, 18, 36 and 54, codes at 2 .. 17,
// 20 .. 35, 38 .. 53 and 56 .. 71. Two overlapping 64-byte loads, bytes 0 .. 63 and 8 .. 71,
// hold all of them, and one two-vector byte permutation (vpermt2b with AVX-512 VBMI) puts the
// four blocks' codes side by side as Join does: block k's 16 bytes at 16k .. 16k + 15. Entry i
// of a permutation picks byte i of the first vector (i < 64) or byte i - 64 of the second.
//
// A second permutation makes the same vector with each lane's two bytes swapped. Then every
// nibble is one operation away: v & 15 and v >> 12 are values 2i and 2i + 17, the swapped
// lane's & 15 and >> 12 are values 2i + 1 and 2i + 16 (NibbleSums needs two operations for
// each of its middle nibbles: six shifts and masks become four and one permutation).
const UBytes kQuadCodeBytes = {
    2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,  13,  14,  15,  16,  17,    // block 0: lo 2 .. 17
    20,  21,  22,  23,  24,  25,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,    // block 1: lo 20 .. 35
    38,  39,  40,  41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51,  52,  53,    // block 2: lo 38 .. 53
    112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127};  // block 3: hi 48 .. 63

const UBytes kQuadCodeBytesSwapped = {
    3,   2,   5,   4,   7,   6,   9,   8,   11,  10,  13,  12,  15,  14,  17,  16,
    21,  20,  23,  22,  25,  24,  27,  26,  29,  28,  31,  30,  33,  32,  35,  34,
    39,  38,  41,  40,  43,  42,  45,  44,  47,  46,  49,  48,  51,  50,  53,  52,
    113, 112, 115, 114, 117, 116, 119, 118, 121, 120, 123, 122, 125, 124, 127, 126};

// The whole quad at p: QuadSums of its four blocks, from two loads.
Words QuadSumsAt(const unsigned char* p, const Words* x) {
  const UBytes lo = Load<UBytes>(p);
  const UBytes hi = Load<UBytes>(p + 8);
  const UWords v = reinterpret_cast<UWords>(__builtin_shuffle(lo, hi, kQuadCodeBytes));
  const UWords w = reinterpret_cast<UWords>(__builtin_shuffle(lo, hi, kQuadCodeBytesSwapped));
  const Words q0 = reinterpret_cast<Words>(v & 15);
  const Words q3 = reinterpret_cast<Words>(v >> 12);
  const Words q2 = reinterpret_cast<Words>(w & 15);
  const Words q1 = reinterpret_cast<Words>(w >> 12);
  return (q0 * x[0] + q1 * x[1]) + (q2 * x[2] + q3 * x[3]);
}

// One quad's block sums in a group's four rows, from the rows' QuadSums: int32 lane 4r + k is
// row r's block k, the sum of its eight int16 lanes. Done row by row, each row's lanes would
// be added into int32 (a shift, an add, a shift), converted, and multiplied by its four scales
// picked out of the quad's 16 (a permutation): six operations a row. Across rows it is fewer:
// PairUp adds neighbouring lanes of two vectors at once, a permutation taking the even lanes of
// both, another the odd ones, and one add, so that rows 0 and 1 become one vector of pair sums,
// rows 2 and 3 another, and those two one vector of sums of four lanes (at most 4 * 7680 =
// 30720: still int16), lane 8r + 2k + h. Last, each int32 lane's two halves are sign-extended
// and added. Nine operations and four for the four rows, whose lanes are then in the order of
// the quad's scales (QuadScaleHalves): one conversion and one multiply-add take all four rows
// into one accumulator. (Side by side on one thread, with the weights in L2, Q4_0 went from
// 25.6 to 29 GB/s.)
const UWords kEvenWords = {0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
                           32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62};
const UWords kOddWords = kEvenWords + 1;
Words PairUp(Words a, Words b) { return __builtin_shuffle(a, b, kEvenWords) + __builtin_shuffle(a, b, kOddWords); }
Ints BlockSumsOfRows(const Words* rowSums) {
  const Ints halves = reinterpret_cast<Ints>(PairUp(PairUp(rowSums[0], rowSums[1]), PairUp(rowSums[2], rowSums[3])));
  return ((halves << 16) >> 16) + (halves >> 16);
}

// The scales of one quad of blocks in four rows, as 16 halves: lane 4r + k is row r's block k.
// In the first load of a quad (bytes 0 .. 63, read as 32 uint16) the scales are words 0, 9, 18
// and 27; two word permutations take them from two rows each, a third joins the halves.
const UWords kQuadScaleWords = {0, 9, 18, 27, 32, 41, 50, 59, 0, 0, 0, 0, 0, 0, 0, 0,
                                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
UHalves QuadScaleHalves(const unsigned char* const* row, size_t at) {
  const UWords rows01 = __builtin_shuffle(Load<UWords>(row[0] + at), Load<UWords>(row[1] + at), kQuadScaleWords);
  const UWords rows23 = __builtin_shuffle(Load<UWords>(row[2] + at), Load<UWords>(row[3] + at), kQuadScaleWords);
  return __builtin_shufflevector(rows01, rows23, 0, 1, 2, 3, 4, 5, 6, 7, 32, 33, 34, 35, 36, 37, 38, 39);
}

// --- quantize_q8_0 ----------------------------------------------------------------------------
// A code is x * id rounded half away from zero, as roundf rounds, in operations that vectorise:
// roundf is a library call per value (a decode step quantizes every input row of every
// product), and GCC vectorises neither it nor std::trunc under the default -ftrapping-math.
// The conversion to int truncates toward zero; the part it drops, v - whole, is exact (for
// |v| >= 1 the two lie within a factor of two of each other, Sterbenz's lemma; below 1 it is v
// itself), so comparing it with one half decides the step away from zero exactly. Equal to
// (int)roundf(v) for every |v| < 2^30, checked on all of them; a code's v is within about 127.
int8_t RoundToCode(float v) {
  const int32_t whole = static_cast<int32_t>(v);
  const float rest = v - static_cast<float>(whole);
  return static_cast<int8_t>(whole + (rest >= 0.5f) - (rest <= -0.5f));
}

// ggml's quantize_row_q8_0_ref, block by block. The maximum is exact in any order, so it
// vectorises freely; the rounding is RoundToCode (roundf's rule), on the product x * id
// exactly as the reference forms it: id from the float d, never from half(d).
void QuantizeBlock(const float* x, BlockQ8_0& out) {
  float amax = 0.0f;
#pragma omp simd reduction(max : amax)
  for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  out.d = FloatToHalf(d);
#pragma omp simd
  for (int j = 0; j < QK; ++j) out.qs[j] = RoundToCode(x[j] * id);
}

// --- matmul_q, version 1: scalar ----------------------------------------------------------------
// Per output element, per block: the exact integer dot product of the 32 code pairs, then the
// two scales (ggml's ggml_vec_dot_q8_0_q8_0 and ggml_vec_dot_q4_0_q8_0, scalar paths).
int DotQ8(const BlockQ8_0& w, const BlockQ8_0& x) {
  int sum = 0;
  for (int j = 0; j < QK; ++j) sum += w.qs[j] * x.qs[j];
  return sum;
}

int DotQ4(const BlockQ4_0& w, const BlockQ8_0& x) {
  int sum = 0;
  for (int j = 0; j < QK / 2; ++j) {
    sum += ((w.qs[j] & 15) - 8) * x.qs[j];             // value j: the low nibble
    sum += ((w.qs[j] >> 4) - 8) * x.qs[j + QK / 2];    // value j + 16: the high nibble
  }
  return sum;
}

[[maybe_unused]] void MatmulQScalar(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode) {
  const int blocks = W.cols / QK;
  for (int t = 0; t < T; ++t) {
    const BlockQ8_0* x = xq + static_cast<size_t>(t) * blocks;
    for (int o = 0; o < W.rows; ++o) {
      float sum = 0.0f;
      if (W.type == WeightType::kQ8_0) {
        const BlockQ8_0* w = static_cast<const BlockQ8_0*>(W.blocks) + static_cast<size_t>(o) * blocks;
        for (int b = 0; b < blocks; ++b) sum += HalfToFloat(w[b].d) * HalfToFloat(x[b].d) * static_cast<float>(DotQ8(w[b], x[b]));
      } else {
        const BlockQ4_0* w = static_cast<const BlockQ4_0*>(W.blocks) + static_cast<size_t>(o) * blocks;
        for (int b = 0; b < blocks; ++b) sum += HalfToFloat(w[b].d) * HalfToFloat(x[b].d) * static_cast<float>(DotQ4(w[b], x[b]));
      }
      Deliver(y[static_cast<size_t>(t) * W.rows + o], sum, mode);
    }
  }
}

// --- matmul_q, version 2: vectors ---------------------------------------------------------------
// Per weight row, one float vector accumulator (16 lanes); per two Q8_0 blocks or four Q4_0
// blocks, PartialSumsQ8Pair / Q4Quad (16 exact int32 partial sums), converted to float and
// multiply-added with a vector holding each block's scale half(dW) * half(dX) in its lanes. At
// the end each row's 16 lanes are summed in one fixed order. kGroupRows weight rows go
// together, so each activation vector is loaded once for the group.
//
// The scales: a weight row's halves sit 34 (or 18) bytes apart, one per block; they are
// converted to floats once per group of rows (GroupRows), 16 at a time, and converted by
// HalvesToFloats. Q8_0 reads a row's 16 into the lanes of one vector (never through a small
// array in memory: 16 two-byte stores read back as one 32-byte load stall the load until the
// stores drain); per token, 16 at a time, they are multiplied by the activation scales, and
// each pair of blocks picks its two out of those 16 with one permutation. Q4_0 takes the 16
// scales of one quad of blocks in the group's four rows from the quads' first vectors with
// word permutations (QuadScaleHalves); per token and quad they are multiplied by the
// activation's four, repeated for the four rows (GroupDotQ4).
//
// Memory and arithmetic overlap: while a group of rows is multiplied, the bytes of a later
// group, at least kPrefetchBytes ahead, are requested (__builtin_prefetch, GCC's and Clang's
// portable hint, a prefetch instruction on x86 and Arm), a share per batch (Q8_0) or per quad
// (Q4_0), and a call asks for its band's first bytes that far ahead before it starts. Without
// it the two take turns: reading a group's scales waits on memory with little to compute, then
// the products compute with nothing to read, and T = 1 ran at 0.73 (Q8_0) and 0.67 (Q4_0) of the
// speed it reaches with the requests (measured side by side); the hardware's own prefetcher
// only runs a little ahead of the loads it sees.
//
// For T > 1 the tokens go in chunks: each group of rows meets every token of a chunk while its
// blocks are in L1 / L2, so a weight byte comes from memory once per chunk of tokens.
constexpr int kGroupRows = 4;    // weight rows per pass
constexpr int kScaleBatch = 16;  // blocks whose scales are prepared together: one 64-byte vector
constexpr int kTokenChunk = 16;  // tokens that meet a row group while it is in L1 / L2
// The bytes requested ahead of the group being multiplied, in whole groups. A group that is
// read in less time than memory takes to answer must be asked for earlier than one group
// ahead: with 2048 columns a Q4_0 group is 4.6 KB, and one group ahead left every group's
// first loads waiting on memory (TinyLlama's seven products, one thread, side by side: 12 %
// slower than two groups ahead). Much more than this crowds L1: Q8_0 groups, 8.7 KB and up,
// two ahead were slower.
constexpr size_t kPrefetchBytes = 8 * 1024;

template <WeightType kType>
constexpr size_t BlockBytes() {
  return kType == WeightType::kQ8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ4_0);
}

// --- the code products, one version per instruction set ----------------------------------------
// What the vectorised kernel needs from the integer dot products, as a policy (a struct of
// static functions) that the kernel is written against once:
//   ArrangeQ8 / ArrangeQ4  put activation block b's codes where the products want them, in its
//                          pair's two (Q8_0) or its quad's four (Q4_0) vectors of Activations;
//   Q8Pair                 two Q8_0 blocks' exact int32 partial sums: lane i holds products
//                          4i .. 4i + 3, lanes 0 .. 7 the first block's, 8 .. 15 the second's;
//   Q4Quad, Q4PartialQuad  one quad of Q4_0 blocks in a group's four rows: lane 4r + k is row
//                          r's block k, its whole sum of code products (codes 0 .. 15).
//   UnpackQuad, Q4QuadUnpacked  the same from a row's quad unpacked once into kUnpacked
//                          vectors (its nibbles as the products want them), for a row group
//                          that meets many tokens (prefill): the unpacking is paid once per
//                          group, not once per token.
// Every version returns the same integers in the same lanes, and everything after them is the
// same code: so the versions agree bit for bit, and the portable one is the oracle the others
// are tested against (tests/stages/matmul_q_versions_test.cc).
//
// PortableCodes is GCC vector extensions only (PartialSumsQ8Pair, QuadSumsAt and
// BlockSumsOfRows above). x86 has instructions that multiply bytes and add neighbouring
// products in one step, which GCC 12 does not produce from portable code: AVX2's vpmaddubsw
// (unsigned bytes times signed bytes, pairs added into int16) with vpmaddwd (int16 pairs into
// int32), and AVX-512 VNNI's vpdpbusd, which does both and adds into an int32 accumulator.
// Avx2Codes and Avx512VnniCodes use them through intrinsics, in functions compiled for those
// instruction sets (target attributes), so the file still builds and runs on any x86-64; which
// version runs is chosen once, from the CPU's features (ChooseBandKernel, below).
struct PortableCodes {
  static Floats ScalesToFloats(UHalves halves) { return HalvesToFloats(halves); }
  // Q8_0: block b is lanes 0 .. 15 (b even) or 16 .. 31 (b odd) of its pair's xEven, xOdd.
  static void ArrangeQ8(const BlockQ8_0& block, int half, Words* pair) {
    for (int i = 0; i < 16; ++i) {
      pair[0][16 * half + i] = block.qs[2 * i];
      pair[1][16 * half + i] = block.qs[2 * i + 1];
    }
  }
  // Q4_0: block b is lanes 8k .. 8k + 7 (k = b % 4) of its quad's four vectors: values 2i,
  // 2i + 16, 2i + 1, 2i + 17 (NibbleSums's nibble order).
  static void ArrangeQ4(const BlockQ8_0& block, int k, Words* quad) {
    for (int i = 0; i < 8; ++i) {
      const int lane = 8 * k + i;
      quad[0][lane] = block.qs[2 * i];
      quad[1][lane] = block.qs[2 * i + 16];
      quad[2][lane] = block.qs[2 * i + 1];
      quad[3][lane] = block.qs[2 * i + 17];
    }
  }
  static Ints Q8Pair(const unsigned char* a, const unsigned char* b, const Words* pair) {
    return PartialSumsQ8Pair(a, b, pair[0], pair[1]);
  }
  static Ints Q4Quad(const unsigned char* const* row, size_t at, const Words* quad) {
    Words rowSums[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) rowSums[r] = QuadSumsAt(row[r] + at, quad);
    return BlockSumsOfRows(rowSums);
  }
  // A quad's four nibble vectors, q0 .. q3 of QuadSumsAt, each kept as its 64 bytes.
  static constexpr int kUnpacked = 4;
  static void UnpackQuad(const unsigned char* p, UBytes* out) {
    const UBytes lo = Load<UBytes>(p);
    const UBytes hi = Load<UBytes>(p + 8);
    const UWords v = reinterpret_cast<UWords>(__builtin_shuffle(lo, hi, kQuadCodeBytes));
    const UWords w = reinterpret_cast<UWords>(__builtin_shuffle(lo, hi, kQuadCodeBytesSwapped));
    out[0] = reinterpret_cast<UBytes>(v & 15);
    out[1] = reinterpret_cast<UBytes>(w >> 12);
    out[2] = reinterpret_cast<UBytes>(w & 15);
    out[3] = reinterpret_cast<UBytes>(v >> 12);
  }
  static Ints Q4QuadUnpacked(const UBytes* rows, const Words* x) {
    Words rowSums[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) {
      const UBytes* q = rows + kUnpacked * r;
      rowSums[r] = (reinterpret_cast<Words>(q[0]) * x[0] + reinterpret_cast<Words>(q[1]) * x[1]) +
                   (reinterpret_cast<Words>(q[2]) * x[2] + reinterpret_cast<Words>(q[3]) * x[3]);
    }
    return BlockSumsOfRows(rowSums);
  }
  static Ints Q4PartialQuad(const unsigned char* const (&blocks)[kGroupRows][4], const Words* quad) {
    Words rowSums[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) rowSums[r] = QuadSums(blocks[r][0], blocks[r][1], blocks[r][2], blocks[r][3], quad);
    return BlockSumsOfRows(rowSums);
  }
  // One packed block of a group of kPackRows rows (version 4, below): lane r is row r's exact
  // code product with the activation block x, plus `start`. Byte k of lane r of code vector v is
  // row r's value 4v + k (Q8_0, offset by 128; Q4_0 low nibbles, and high nibbles 4v + k + 16).
  static Ints PackedQ8(const unsigned char* codes, const int8_t* x, int32_t start) {
    Ints sums = Ints{} + start;
    for (int v = 0; v < 8; ++v) {
      const UInts c = Load<UInts>(codes + 64 * v);
      for (int k = 0; k < 4; ++k) sums += reinterpret_cast<Ints>((c >> (8 * k)) & 255) * x[4 * v + k];
    }
    return sums;
  }
  static Ints PackedQ4(const unsigned char* codes, const int8_t* x, int32_t start) {
    Ints sums = Ints{} + start;
    for (int v = 0; v < 4; ++v) {
      const UInts c = Load<UInts>(codes + 64 * v);
      for (int k = 0; k < 4; ++k) {
        sums += reinterpret_cast<Ints>((c >> (8 * k)) & 15) * x[4 * v + k] +
                reinterpret_cast<Ints>((c >> (8 * k + 4)) & 15) * x[4 * v + k + 16];
      }
    }
    return sums;
  }
};

#if defined(__x86_64__)
typedef int8_t SBytes __attribute__((vector_size(64)));  // 64 signed bytes

// The byte layout both x86 versions multiply, the activation's codes as they are stored.
// Q8_0: a pair's first vector holds its two blocks' 64 codes (block b at bytes 32 (b % 2) ..);
// its second, one int32 per lane, -128 times the sum of the four codes of that lane, which
// the products of weight codes offset by +128 need taken off (VNNI, below; AVX2 ignores it).
// Q4_0: a quad's first vector holds its four blocks' values 0 .. 15 (block k at bytes 16k ..),
// its second their values 16 .. 31: the order of a Q4_0 block's low and high nibbles.
struct ByteCodes {
  static void ArrangeQ8(const BlockQ8_0& block, int half, Words* pair) {
    SBytes codes;
    Ints correction;
    std::memcpy(&codes, &pair[0], sizeof codes);
    std::memcpy(&correction, &pair[1], sizeof correction);
    for (int j = 0; j < QK; ++j) codes[32 * half + j] = block.qs[j];
    for (int i = 0; i < 8; ++i) {
      correction[8 * half + i] =
          -128 * (block.qs[4 * i] + block.qs[4 * i + 1] + block.qs[4 * i + 2] + block.qs[4 * i + 3]);
    }
    std::memcpy(&pair[0], &codes, sizeof codes);
    std::memcpy(&pair[1], &correction, sizeof correction);
  }
  static void ArrangeQ4(const BlockQ8_0& block, int k, Words* quad) {
    SBytes low, high;
    std::memcpy(&low, &quad[0], sizeof low);
    std::memcpy(&high, &quad[1], sizeof high);
    for (int j = 0; j < QK / 2; ++j) {
      low[16 * k + j] = block.qs[j];
      high[16 * k + j] = block.qs[j + QK / 2];
    }
    std::memcpy(&quad[0], &low, sizeof low);
    std::memcpy(&quad[1], &high, sizeof high);
  }
};

// Four rows' int32 vectors whose lanes 4k .. 4k + 3 are block k's partial sums, as one vector
// whose lane 4r + k is row r's block k: neighbouring lanes added twice, across rows (as
// BlockSumsOfRows does with int16 lanes).
const Ints kEvenInts = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
const Ints kOddInts = kEvenInts + 1;
inline Ints PairUpInts(Ints a, Ints b) {
  return __builtin_shuffle(a, b, kEvenInts) + __builtin_shuffle(a, b, kOddInts);
}
inline Ints BlockTotalsOfRows(const Ints* rows) {
  return PairUpInts(PairUpInts(rows[0], rows[1]), PairUpInts(rows[2], rows[3]));
}

// The four blocks of a quad in one vector of packed nibbles, block k's 16 bytes at 16k: from
// two loads and a byte permutation for a whole quad (as QuadSumsAt), from four for any four.
inline UBytes QuadCodes(const unsigned char* quad) {
  return __builtin_shuffle(Load<UBytes>(quad), Load<UBytes>(quad + 8), kQuadCodeBytes);
}
inline UBytes QuadCodes(const unsigned char* a, const unsigned char* b, const unsigned char* c,
                        const unsigned char* d) {
  return reinterpret_cast<UBytes>(Join(Join16(a, b), Join16(c, d)));
}

#define WB_TARGET_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vnni")))
#define WB_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))

// AVX-512 VNNI: vpdpbusd multiplies 64 unsigned bytes by 64 signed bytes and adds each four
// neighbouring products into an int32 lane of the accumulator, exactly (no saturation). Its
// first operand must be unsigned: a Q4_0 code is (0 .. 15); a Q8_0 weight code w is made so by
// adding 128 (flipping its top bit), and sum((w + 128) x) - 128 sum(x) = sum(w x) exactly, the
// second term prepared once per activation block (ByteCodes::ArrangeQ8) as the accumulator's
// starting value.
struct Avx512VnniCodes : ByteCodes {
  // vcvtph2ps: 16 halves to floats in one instruction, exactly (every half is a float). The
  // zero-masked form with every lane kept: GCC 12's unmasked one starts from an undefined
  // vector and warns about it.
  WB_TARGET_AVX512_VNNI static Floats ScalesToFloats(UHalves halves) {
    return reinterpret_cast<Floats>(_mm512_maskz_cvtph_ps(0xFFFF, reinterpret_cast<__m256i>(halves)));
  }
  WB_TARGET_AVX512_VNNI static Ints DotBytes(Ints sums, UBytes u, const Words& s) {
    return reinterpret_cast<Ints>(_mm512_dpbusd_epi32(reinterpret_cast<__m512i>(sums), reinterpret_cast<__m512i>(u),
                                                      reinterpret_cast<__m512i>(s)));
  }
  WB_TARGET_AVX512_VNNI static Ints Q8Pair(const unsigned char* a, const unsigned char* b, const Words* pair) {
    const UBytes w = reinterpret_cast<UBytes>(Join(Load<Bytes32>(a), Load<Bytes32>(b)));
    return DotBytes(reinterpret_cast<Ints>(pair[1]), w ^ 0x80, pair[0]);
  }
  // One row's quad: its low nibbles against the activations' values 0 .. 15, its high nibbles
  // against 16 .. 31. Lane 4k + i: block k's values 4i .. 4i + 3 and 4i + 16 .. 4i + 19.
  WB_TARGET_AVX512_VNNI static Ints QuadLanes(UBytes codes, const Words* quad) {
    return DotBytes(DotBytes(Ints{}, codes & 15, quad[0]), codes >> 4, quad[1]);
  }
  WB_TARGET_AVX512_VNNI static Ints Q4Quad(const unsigned char* const* row, size_t at, const Words* quad) {
    Ints lanes[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) lanes[r] = QuadLanes(QuadCodes(row[r] + at), quad);
    return BlockTotalsOfRows(lanes);
  }
  // A quad's low and high nibbles, each as 64 bytes.
  static constexpr int kUnpacked = 2;
  WB_TARGET_AVX512_VNNI static void UnpackQuad(const unsigned char* p, UBytes* out) {
    const UBytes codes = QuadCodes(p);
    out[0] = codes & 15;
    out[1] = codes >> 4;
  }
  WB_TARGET_AVX512_VNNI static Ints Q4QuadUnpacked(const UBytes* rows, const Words* quad) {
    Ints lanes[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) {
      lanes[r] = DotBytes(DotBytes(Ints{}, rows[2 * r], quad[0]), rows[2 * r + 1], quad[1]);
    }
    return BlockTotalsOfRows(lanes);
  }
  WB_TARGET_AVX512_VNNI static Ints Q4PartialQuad(const unsigned char* const (&blocks)[kGroupRows][4],
                                                  const Words* quad) {
    Ints lanes[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) {
      lanes[r] = QuadLanes(QuadCodes(blocks[r][0], blocks[r][1], blocks[r][2], blocks[r][3]), quad);
    }
    return BlockTotalsOfRows(lanes);
  }
  // Packed blocks: each code vector meets four of the activation's codes, the same four in
  // every lane (a broadcast), so one vpdpbusd adds four products to each of 16 rows at once.
  WB_TARGET_AVX512_VNNI static Ints FourCodes(const int8_t* x) {
    int32_t four;
    std::memcpy(&four, x, sizeof four);
    return reinterpret_cast<Ints>(_mm512_set1_epi32(four));
  }
  WB_TARGET_AVX512_VNNI static Ints PackedQ8(const unsigned char* codes, const int8_t* x, int32_t start) {
    Ints sums = Ints{} + start;
    for (int v = 0; v < 8; ++v) {
      sums = DotBytes(sums, Load<UBytes>(codes + 64 * v), reinterpret_cast<Words>(FourCodes(x + 4 * v)));
    }
    return sums;
  }
  WB_TARGET_AVX512_VNNI static Ints PackedQ4(const unsigned char* codes, const int8_t* x, int32_t start) {
    Ints sums = Ints{} + start;
    for (int v = 0; v < 4; ++v) {
      const UBytes c = Load<UBytes>(codes + 64 * v);
      sums = DotBytes(sums, c & 15, reinterpret_cast<Words>(FourCodes(x + 4 * v)));
      sums = DotBytes(sums, c >> 4, reinterpret_cast<Words>(FourCodes(x + 4 * v + 16)));
    }
    return sums;
  }
};

// AVX2: vpmaddubsw multiplies 32 unsigned bytes by 32 signed bytes and adds neighbouring pairs
// into int16 (saturating, so the operands are chosen to stay below it), and vpmaddwd against
// ones adds neighbouring int16 into int32: four products a lane, the lanes of VNNI's. A Q8_0
// weight code goes in as |w| and the activation's as x with w's sign (vpsignb; ggml's AVX2
// ggml_vec_dot_q8_0_q8_0 does the same): |w| (x sign(w)) = w x, a pair at most 2 x 128 x 127
// = 32512, below int16's 32767. Q4_0 codes are unsigned already, a pair at most 2 x 15 x 127.
typedef int32_t Ints8 __attribute__((vector_size(32)));  // 8 int32: one AVX2 register
struct Avx2Codes : ByteCodes {
  // vcvtph2ps (F16C): eight halves to floats in one instruction, exactly.
  WB_TARGET_AVX2 static Floats ScalesToFloats(UHalves halves) {
    const __m128i* h = reinterpret_cast<const __m128i*>(&halves);
    typedef float Floats8 __attribute__((vector_size(32)));
    const Floats8 low = reinterpret_cast<Floats8>(_mm256_cvtph_ps(h[0]));
    const Floats8 high = reinterpret_cast<Floats8>(_mm256_cvtph_ps(h[1]));
    return __builtin_shufflevector(low, high, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  }
  WB_TARGET_AVX2 static Ints8 DotBytes(__m256i u, __m256i s) {
    return reinterpret_cast<Ints8>(_mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
  WB_TARGET_AVX2 static Ints Join8(Ints8 low, Ints8 high) {
    return __builtin_shufflevector(low, high, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  }
  WB_TARGET_AVX2 static __m256i Load32(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
  }
  WB_TARGET_AVX2 static Ints8 Q8Block(const unsigned char* w, const int8_t* x) {
    const __m256i wv = Load32(w);
    const __m256i xv = Load32(x);
    return DotBytes(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv));
  }
  WB_TARGET_AVX2 static Ints Q8Pair(const unsigned char* a, const unsigned char* b, const Words* pair) {
    const int8_t* x = reinterpret_cast<const int8_t*>(&pair[0]);
    return Join8(Q8Block(a, x), Q8Block(b, x + 32));
  }
  WB_TARGET_AVX2 static Ints QuadLanes(UBytes codes, const Words* quad) { return NibbleLanes(codes & 15, codes >> 4, quad); }
  WB_TARGET_AVX2 static Ints NibbleLanes(UBytes low, UBytes high, const Words* quad) {
    const unsigned char* lo = reinterpret_cast<const unsigned char*>(&low);
    const unsigned char* hi = reinterpret_cast<const unsigned char*>(&high);
    const int8_t* x0 = reinterpret_cast<const int8_t*>(&quad[0]);
    const int8_t* x1 = reinterpret_cast<const int8_t*>(&quad[1]);
    Ints8 half[2];
    for (int h = 0; h < 2; ++h) {
      half[h] = DotBytes(Load32(lo + 32 * h), Load32(x0 + 32 * h)) + DotBytes(Load32(hi + 32 * h), Load32(x1 + 32 * h));
    }
    return Join8(half[0], half[1]);
  }
  WB_TARGET_AVX2 static Ints Q4Quad(const unsigned char* const* row, size_t at, const Words* quad) {
    Ints lanes[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) {
      const unsigned char* codes = row[r] + at + 2;  // a block's codes follow its scale
      lanes[r] = QuadLanes(QuadCodes(codes, codes + sizeof(BlockQ4_0), codes + 2 * sizeof(BlockQ4_0),
                                     codes + 3 * sizeof(BlockQ4_0)),
                           quad);
    }
    return BlockTotalsOfRows(lanes);
  }
  // A quad's low and high nibbles, each as 64 bytes.
  static constexpr int kUnpacked = 2;
  WB_TARGET_AVX2 static void UnpackQuad(const unsigned char* p, UBytes* out) {
    const unsigned char* codes = p + 2;  // a block's codes follow its scale
    const UBytes quad = QuadCodes(codes, codes + sizeof(BlockQ4_0), codes + 2 * sizeof(BlockQ4_0),
                                  codes + 3 * sizeof(BlockQ4_0));
    out[0] = quad & 15;
    out[1] = quad >> 4;
  }
  WB_TARGET_AVX2 static Ints Q4QuadUnpacked(const UBytes* rows, const Words* quad) {
    Ints lanes[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) lanes[r] = NibbleLanes(rows[2 * r], rows[2 * r + 1], quad);
    return BlockTotalsOfRows(lanes);
  }
  WB_TARGET_AVX2 static Ints Q4PartialQuad(const unsigned char* const (&blocks)[kGroupRows][4], const Words* quad) {
    Ints lanes[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) {
      lanes[r] = QuadLanes(QuadCodes(blocks[r][0], blocks[r][1], blocks[r][2], blocks[r][3]), quad);
    }
    return BlockTotalsOfRows(lanes);
  }
  // Packed blocks, eight rows per 32-byte half. A Q8_0 code stored as w + 128 (up to 255) times
  // a code of x would overflow vpmaddubsw's int16 pairs, so it is turned back into w and
  // multiplied with the sign trick (Q8Block); `start`, VNNI's correction for the offset, is
  // not needed. Q4_0's nibbles (0 .. 15) go in as they are, against `start`'s -8 sum(x).
  WB_TARGET_AVX2 static __m256i FourCodes(const int8_t* x) {
    int32_t four;
    std::memcpy(&four, x, sizeof four);
    return _mm256_set1_epi32(four);
  }
  WB_TARGET_AVX2 static Ints PackedQ8(const unsigned char* codes, const int8_t* x, int32_t) {
    Ints8 half[2] = {};
    for (int v = 0; v < 8; ++v) {
      const __m256i xv = FourCodes(x + 4 * v);
      for (int h = 0; h < 2; ++h) {
        const __m256i w = _mm256_xor_si256(Load32(codes + 64 * v + 32 * h), _mm256_set1_epi8(-128));
        half[h] += DotBytes(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w));
      }
    }
    return Join8(half[0], half[1]);
  }
  WB_TARGET_AVX2 static Ints PackedQ4(const unsigned char* codes, const int8_t* x, int32_t start) {
    Ints8 half[2] = {Ints8{} + start, Ints8{} + start};
    const __m256i low = _mm256_set1_epi8(15);
    for (int v = 0; v < 4; ++v) {
      const __m256i xLow = FourCodes(x + 4 * v);
      const __m256i xHigh = FourCodes(x + 4 * v + 16);
      for (int h = 0; h < 2; ++h) {
        const __m256i c = Load32(codes + 64 * v + 32 * h);
        half[h] += DotBytes(_mm256_and_si256(c, low), xLow) +
                   DotBytes(_mm256_and_si256(_mm256_srli_epi16(c, 4), low), xHigh);
      }
    }
    return Join8(half[0], half[1]);
  }
};
#endif  // __x86_64__

// The activations, prepared once per call by each thread that multiplies. Per token t: its codes as
// int16 vectors arranged for the weight type, one vector per block (Q8_0: xEven and xOdd of
// each pair of blocks; Q4_0: the four nibble orders of each quad); per block b the scale
// half(dX) as float and, for Q4_0, offset = 8 * sum(codes) * half(dX), the part of the block's
// dot product that the unsigned nibbles add (NibbleSums). Each token's blocks are
// padded with zero codes and zero scales to a whole number of scale batches, so a batch is
// read as one vector and the blocks past the last meet nothing but zeros.
struct Activations {
  int blocks;        // W.cols / QK
  int paddedBlocks;  // rounded up to kScaleBatch
  std::vector<Words> codes;    // T x paddedBlocks
  std::vector<float> scales;   // T x paddedBlocks
  std::vector<float> offsets;  // T x paddedBlocks (Q4_0)
  // Q4_0: per token, per quad of blocks, the quad's four scales (and offsets) repeated for
  // four rows: lane 4r + k holds block k's, as the row group's quad scales are laid out.
  std::vector<Floats> quadScales;   // T x paddedBlocks / 4
  std::vector<Floats> quadOffsets;  // T x paddedBlocks / 4
};

// The result lives in one object per thread, reused by every call and grown only when a call
// needs more than any before it (assign keeps the capacity). MatmulQBand prepares at most
// kTokenChunk tokens at a time, and room for that many is reserved on the first call of a
// width: after it, matmul_q allocates nothing, which a decode step of stage 5 must not.
template <class Codes>
const Activations& Prepare(int T, const BlockQ8_0* xq, int blocks, WeightType type) {
  static thread_local Activations a;
  a.blocks = blocks;
  a.paddedBlocks = (blocks + kScaleBatch - 1) / kScaleBatch * kScaleBatch;
  // Room for a whole chunk of tokens from the first call of this width on (MatmulQBand).
  const size_t room = static_cast<size_t>(std::max(T, kTokenChunk)) * a.paddedBlocks;
  a.codes.reserve(room);
  a.scales.reserve(room);
  if (type == WeightType::kQ4_0) {
    a.offsets.reserve(room);
    a.quadScales.reserve(room / 4);
    a.quadOffsets.reserve(room / 4);
  }
  a.codes.assign(static_cast<size_t>(T) * a.paddedBlocks, Words{});
  a.scales.assign(static_cast<size_t>(T) * a.paddedBlocks, 0.0f);
  if (type == WeightType::kQ4_0) a.offsets.assign(static_cast<size_t>(T) * a.paddedBlocks, 0.0f);
  for (int t = 0; t < T; ++t) {
    Words* codes = a.codes.data() + static_cast<size_t>(t) * a.paddedBlocks;
    for (int b = 0; b < blocks; ++b) {
      const BlockQ8_0& block = xq[static_cast<size_t>(t) * blocks + b];
      if (type == WeightType::kQ8_0) {
        Codes::ArrangeQ8(block, b % 2, codes + 2 * (b / 2));
      } else {
        Codes::ArrangeQ4(block, b % 4, codes + 4 * (b / 4));
      }
      const float scale = HalfToFloat(block.d);
      a.scales[static_cast<size_t>(t) * a.paddedBlocks + b] = scale;
      if (type == WeightType::kQ4_0) {
        int sum = 0;
        for (int j = 0; j < QK; ++j) sum += block.qs[j];
        a.offsets[static_cast<size_t>(t) * a.paddedBlocks + b] = static_cast<float>(8 * sum) * scale;
      }
    }
  }
  if (type == WeightType::kQ4_0) {
    const size_t quads = static_cast<size_t>(T) * a.paddedBlocks / 4;
    a.quadScales.resize(quads);
    a.quadOffsets.resize(quads);
    for (size_t q = 0; q < quads; ++q) {
      for (int lane = 0; lane < 16; ++lane) {
        a.quadScales[q][lane] = a.scales[4 * q + lane % 4];
        a.quadOffsets[q][lane] = a.offsets[4 * q + lane % 4];
      }
    }
  }
  return a;
}

// A group of up to kGroupRows weight rows: their first bytes (a missing row repeats the last,
// and its results are dropped), and their blocks' scales as floats, converted once and used by
// every token that meets the group: Q8_0 kGroupRows x paddedBlocks (zero past the last block),
// Q4_0 one vector per quad of blocks.
//
// Except for Q4_0's whole quads when the group meets a single token (decode): then each scale
// is used once, and GroupDotQ4 converts a quad's 16 where it loads the quad's codes. Converted
// in a pass of their own before the products, the pass's loads wait on memory with next to
// nothing to compute, the turn-taking that prefetching (below) removes from the products: on
// a matrix four times the size of the last-level cache, T = 1, side by side in nine runs (each
// the median of five), Q4_0 without the pass was ahead in every run, its range 5 to 13 % above
// the pass's on one thread and 3 to 16 % on two. Q8_0, whose scales are 34 bytes apart and
// gathered one by one, gained nothing from the same change: it keeps the pass.
struct RowGroup {
  const unsigned char* row[kGroupRows];
  std::vector<float> scales;       // Q8_0
  std::vector<Floats> quadScales;  // Q4_0: per quad of blocks, lane 4r + k = row r's block k
  bool wholeQuadScales = true;     // Q4_0: false when only the last, partial quad's is there
  std::vector<UBytes> unpacked;    // Q4_0, many tokens: per whole quad, each row's unpacked codes
  const unsigned char* next = nullptr;  // the first byte of the group to request meanwhile
  size_t nextBytes = 0;                 // 0: nothing to request (past the band's end)
};

// Fills `group` with rows [o, o + rows) of W, which `tokens` tokens will meet: the addresses,
// then the blocks' scales.
template <class Codes, WeightType kType>
void GroupRows(const QuantMatrix& W, int blocks, int paddedBlocks, int o, int rows, int tokens, RowGroup& group) {
  const unsigned char* weights = static_cast<const unsigned char*>(W.blocks);
  for (int r = 0; r < kGroupRows; ++r) {
    group.row[r] = weights + static_cast<size_t>(o + std::min(r, rows - 1)) * blocks * BlockBytes<kType>();
  }
  if constexpr (kType == WeightType::kQ4_0) {
    const int quads = (blocks + 3) / 4;
    group.quadScales.resize(static_cast<size_t>(quads));
    group.wholeQuadScales = tokens > 1;
    for (int q = 0; group.wholeQuadScales && q < blocks / 4; ++q) {
      group.quadScales[q] =
          Codes::ScalesToFloats(QuadScaleHalves(group.row, static_cast<size_t>(q) * 4 * sizeof(BlockQ4_0)));
    }
    if (blocks % 4 != 0) {  // the last, partial quad: its missing blocks repeat the row's last
      UHalves halves{};
      for (int r = 0; r < kGroupRows; ++r) {
        for (int k = 0; k < 4; ++k) {
          uint16_t d;
          std::memcpy(&d, group.row[r] + static_cast<size_t>(std::min(4 * (quads - 1) + k, blocks - 1)) * sizeof(BlockQ4_0),
                      sizeof d);
          halves[4 * r + k] = d;
        }
      }
      group.quadScales[quads - 1] = Codes::ScalesToFloats(halves);
    }
    return;
  }
  group.scales.resize(static_cast<size_t>(kGroupRows) * paddedBlocks);
  for (int r = 0; r < kGroupRows; ++r) {
    float* scales = group.scales.data() + static_cast<size_t>(r) * paddedBlocks;
    for (int b0 = 0; b0 < blocks; b0 += kScaleBatch) {
      UHalves halves{};
      const int count = std::min(kScaleBatch, blocks - b0);
      for (int k = 0; k < count; ++k) {
        uint16_t d;
        std::memcpy(&d, group.row[r] + static_cast<size_t>(b0 + k) * BlockBytes<kType>(), sizeof d);
        halves[k] = d;
      }
      const Floats f = Codes::ScalesToFloats(halves);
      std::memcpy(scales + b0, &f, sizeof f);
    }
  }
}

// Rows [o, o + rows) of token t's y row, for a group of Q4_0 rows, quad by quad: the quad's 16
// combined scales half(dW) * half(dX) of the four rows in one multiply, the offsets
// 8 * sum(x) * half(dX) * half(dW) of the four rows in one fused multiply-add, then the four
// rows' block sums (BlockSumsOfRows) multiply-added with the scales. Lane 4r + k of either
// accumulator is row r's, block k's of each quad. kConvertScales: the whole quads' weight
// scales are converted here, from the quads' first loads, not read from the group.
template <class Codes, bool kConvertScales, bool kFromUnpacked = false>
void GroupDotQ4(const RowGroup& group, const Activations& a, int t, int rows, float* y, Accumulate mode) {
  const size_t quadsPerToken = static_cast<size_t>(a.paddedBlocks) / 4;
  const Floats* xScales = a.quadScales.data() + static_cast<size_t>(t) * quadsPerToken;
  const Floats* xOffsets = a.quadOffsets.data() + static_cast<size_t>(t) * quadsPerToken;
  const Words* x = a.codes.data() + static_cast<size_t>(t) * a.paddedBlocks;
  const int quads = (a.blocks + 3) / 4;
  const int fullQuads = a.blocks / 4;
  const int last = a.blocks - 1;
  Floats sum = {};
  Floats offset = {};
  // The quad's combined scales from its weight scales, and its offsets taken into `offset`.
  auto quadScales = [&](Floats wScales, int q) {
    offset += wScales * xOffsets[q];
    return wScales * xScales[q];
  };
  // The next group's bytes, a share per quad (whole cache lines), asked for while the quads
  // compute; what is left after the last whole quad, at once.
  const size_t share = (group.nextBytes + quads - 1) / quads / 64 * 64 + 64;
  size_t ahead = 0;
  // The whole quads, each from two loads per row.
  for (int q = 0; q < fullQuads; ++q) {
    for (size_t at = ahead; at < std::min(ahead + share, group.nextBytes); at += 64) __builtin_prefetch(group.next + at);
    ahead += share;
    const size_t at = static_cast<size_t>(q) * 4 * sizeof(BlockQ4_0);
    const Floats scale =
        quadScales(kConvertScales ? Codes::ScalesToFloats(QuadScaleHalves(group.row, at)) : group.quadScales[q], q);
    const Ints sums = kFromUnpacked ? Codes::Q4QuadUnpacked(&group.unpacked[static_cast<size_t>(q) * kGroupRows *
                                                                            Codes::kUnpacked],
                                                            x + 4 * q)
                                    : Codes::Q4Quad(group.row, at, x + 4 * q);
    sum += __builtin_convertvector(sums, Floats) * scale;
  }
  for (size_t at = ahead; at < group.nextBytes; at += 64) __builtin_prefetch(group.next + at);
  // The last, partial quad: its missing blocks repeat the row's last, against zero codes.
  if (fullQuads < quads) {
    const int b = 4 * fullQuads;
    const Floats scale = quadScales(group.quadScales[fullQuads], fullQuads);
    const unsigned char* blocks[kGroupRows][4];
    for (int r = 0; r < kGroupRows; ++r) {
      const unsigned char* codes = group.row[r] + 2;  // a block's codes follow its scale
      for (int k = 0; k < 4; ++k) blocks[r][k] = codes + static_cast<size_t>(std::min(b + k, last)) * sizeof(BlockQ4_0);
    }
    sum += __builtin_convertvector(Codes::Q4PartialQuad(blocks, x + b), Floats) * scale;
  }
  for (int r = 0; r < rows; ++r) {
    float total = 0.0f;
    for (int k = 0; k < 4; ++k) total += sum[4 * r + k];
    float off = 0.0f;
    for (int k = 0; k < 4; ++k) off += offset[4 * r + k];
    Deliver(y[r], total - off, mode);
  }
}

// Lanes 0 .. 7 of the result are scales[k], lanes 8 .. 15 scales[k + 1]: one permutation of
// the batch's 16 gives a Q8_0 pair its two.
const Ints kPairLanes = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

// The same for Q8_0 rows. Per batch of 16 blocks: the 16 combined scales of each row, half(dW)
// * half(dX) (one 64-byte multiply per row); then pair by pair, the activation's code vectors
// loaded once and every row's partial sums multiply-added into its accumulator. Blocks past
// the row's last are read as its last block again; their activation codes and scales are zero.
template <class Codes>
void GroupDotQ8(const RowGroup& group, const Activations& a, int t, int rows, float* y, Accumulate mode) {
  const float* xScales = a.scales.data() + static_cast<size_t>(t) * a.paddedBlocks;
  const Words* x = a.codes.data() + static_cast<size_t>(t) * a.paddedBlocks;
  const int last = a.blocks - 1;
  Floats sum[kGroupRows] = {};
  const int batches = a.paddedBlocks / kScaleBatch;
  const size_t share = (group.nextBytes + batches - 1) / batches;
  for (int b0 = 0; b0 < a.blocks; b0 += kScaleBatch) {
    // A share of the next group's bytes asked for now, while this batch computes.
    const size_t from = static_cast<size_t>(b0 / kScaleBatch) * share;
    for (size_t at = from; at < std::min(from + share, group.nextBytes); at += 64) __builtin_prefetch(group.next + at);
    Floats scale[kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) {
      const Floats wScales = Load<Floats>(&group.scales[static_cast<size_t>(r) * a.paddedBlocks + b0]);
      scale[r] = wScales * Load<Floats>(xScales + b0);
    }
    const int count = std::min(kScaleBatch, a.blocks - b0);
    for (int k = 0; k < count; k += 2) {
      const int b = b0 + k;
      const Ints lanes = kPairLanes + k;
      for (int r = 0; r < kGroupRows; ++r) {
        const unsigned char* codes = group.row[r] + 2;  // a block's codes follow its scale
        const Ints partial = Codes::Q8Pair(codes + static_cast<size_t>(b) * sizeof(BlockQ8_0),
                                           codes + static_cast<size_t>(std::min(b + 1, last)) * sizeof(BlockQ8_0), x + b);
        sum[r] += __builtin_convertvector(partial, Floats) * __builtin_shuffle(scale[r], lanes);
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    float total = 0.0f;
    for (int i = 0; i < 16; ++i) total += sum[r][i];
    Deliver(y[r], total, mode);
  }
}

// A group of Q4_0 rows that meets many tokens: each row's whole quads unpacked once
// (Codes::UnpackQuad), so that every token's products start from the unpacked codes. At T = 1
// the unpacking is part of the one token's products and gains nothing.
template <class Codes>
void UnpackGroup(int fullQuads, RowGroup& group) {
  group.unpacked.resize(static_cast<size_t>(fullQuads) * kGroupRows * Codes::kUnpacked);
  for (int q = 0; q < fullQuads; ++q) {
    for (int r = 0; r < kGroupRows; ++r) {
      Codes::UnpackQuad(group.row[r] + static_cast<size_t>(q) * 4 * sizeof(BlockQ4_0),
                        &group.unpacked[(static_cast<size_t>(q) * kGroupRows + r) * Codes::kUnpacked]);
    }
  }
}

// Weight rows [r0, r1) of y, on the calling thread: tokens in chunks, and within a chunk each
// group of rows meets every token while its blocks are in L1 or L2.
template <class Codes, WeightType kType>
void MatmulQRows(int T, const Activations& a, const QuantMatrix& W, float* y, Accumulate mode, int r0, int r1) {
  static thread_local RowGroup group;  // reused, as Prepare's activations are
  const size_t rowBytes = static_cast<size_t>(a.blocks) * BlockBytes<kType>();
  const unsigned char* weights = static_cast<const unsigned char*>(W.blocks);
  // Byte offsets into W, compared as integers: a pointer past the band's end is never formed.
  const size_t bandBegin = static_cast<size_t>(r0) * rowBytes;
  const size_t bandEnd = static_cast<size_t>(r1) * rowBytes;
  // How far ahead the next bytes are requested: whole groups, at least kPrefetchBytes.
  const size_t groupBytes = kGroupRows * rowBytes;
  const size_t lead = (kPrefetchBytes + groupBytes - 1) / groupBytes * groupBytes;
  if constexpr (kType == WeightType::kQ4_0) {
    // Room for UnpackGroup's codes whatever the tokens: a decoder whose first call is one token
    // and a later step two must not allocate in that step.
    group.unpacked.reserve(static_cast<size_t>(a.blocks / 4) * kGroupRows * Codes::kUnpacked);
  }
  for (int chunk = 0; chunk < T; chunk += kTokenChunk) {
    const int chunkEnd = std::min(T, chunk + kTokenChunk);
    const size_t first = std::min(lead, bandEnd - bandBegin);
    for (size_t at = 0; at < first; at += 64) __builtin_prefetch(weights + bandBegin + at);
    for (int o = r0; o < r1; o += kGroupRows) {
      const int rows = std::min(kGroupRows, r1 - o);
      GroupRows<Codes, kType>(W, a.blocks, a.paddedBlocks, o, rows, chunkEnd - chunk, group);
      const size_t next = static_cast<size_t>(o) * rowBytes + lead;
      group.next = next < bandEnd ? weights + next : weights;
      group.nextBytes = next < bandEnd ? std::min(kGroupRows * rowBytes, bandEnd - next) : 0;
      if constexpr (kType == WeightType::kQ4_0) {
        if (group.wholeQuadScales) UnpackGroup<Codes>(a.blocks / 4, group);
      }
      for (int t = chunk; t < chunkEnd; ++t) {
        float* out = y + static_cast<size_t>(t) * W.rows + o;
        if constexpr (kType == WeightType::kQ4_0) {
          if (group.wholeQuadScales) {
            GroupDotQ4<Codes, false, true>(group, a, t, rows, out, mode);
          } else {
            GroupDotQ4<Codes, true>(group, a, t, rows, out, mode);
          }
        } else {
          GroupDotQ8<Codes>(group, a, t, rows, out, mode);
        }
        group.nextBytes = 0;  // requested during the chunk's first token
      }
    }
  }
}

// Rows [r0, r1) of y with the code products of `Codes`: the activations prepared for them, then
// the rows in groups.
//
// A chunk of kTokenChunk tokens at a time, as MatmulQRows takes them: the weights are read once
// per chunk either way, and the activations prepared for one chunk at a time need room for
// kTokenChunk tokens at most, which Prepare reserves at the first call of a width. So after
// that first call no call allocates, whatever its token count: a decoder whose prompt was one
// token may run a step of two (or of sixteen, or more) without allocating.
template <class Codes>
void MatmulQBand(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int r0, int r1) {
  const int blocks = W.cols / QK;
  auto rows = [&](int tokens, const BlockQ8_0* x, float* out) {
    const Activations& a = Prepare<Codes>(tokens, x, blocks, W.type);
    if (W.type == WeightType::kQ8_0) {
      MatmulQRows<Codes, WeightType::kQ8_0>(tokens, a, W, out, mode, r0, r1);
    } else {
      MatmulQRows<Codes, WeightType::kQ4_0>(tokens, a, W, out, mode, r0, r1);
    }
  };
  if (T <= kTokenChunk) {  // a decode step, or a short prompt: one chunk
    rows(T, xq, y);
    return;
  }
  for (int chunk = 0; chunk < T; chunk += kTokenChunk) {
    rows(std::min(kTokenChunk, T - chunk), xq + static_cast<size_t>(chunk) * blocks,
         y + static_cast<size_t>(chunk) * W.rows);
  }
}

[[maybe_unused]] void MatmulQVectorised(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode) {
  MatmulQBand<PortableCodes>(T, xq, W, y, mode, 0, W.rows);
}

// --- matmul_q, version 4: the weights in a layout of our own (pack_q) ---------------------------
// At T = 1 every weight byte is used once, and in ggml's layout the integer products cannot
// keep up with memory: a row's blocks give int32 lanes that each hold part of one block, so
// every quad of blocks needs its codes gathered out of 18-byte blocks (a permutation), and its
// lanes added across (six permutations for four rows), and its scales picked out of the blocks
// (three more). On this machine's AVX-512 VNNI version that is about 42 vector instructions
// per 16 blocks, and the kernel reads 21 GB/s with the weights in L2: less than memory gives.
//
// pack_q (the contract's optional step) lays the matrix out once, at load time, so that one
// vpdpbusd serves 16 rows at once: a group of kPackRows = 16 rows is stored block by block, and
// a packed block is the 16 rows' scales (32 bytes, one vcvtph2ps) followed by their codes as
// 64-byte vectors in which lane r (four bytes) holds row r's next four codes. Multiplied by
// those four codes of the activation, repeated in every lane, each vpdpbusd adds four products
// to each of the 16 rows, and the 16 lanes are the 16 rows' block sums when the block is done:
// no permutation, no adding across. Q4_0: 4 code vectors (the low nibbles are values 4v .. 4v + 3,
// the high ones 4v + 16 .. 4v + 19), 8 vpdpbusd; Q8_0: 8 code vectors, each code stored plus
// 128 so that it is the unsigned operand vpdpbusd wants (the -128 sum(x) it adds is the sum's
// starting value). About 25 vector instructions per 16 Q4_0 blocks; 37 GB/s in L2, side by side
// with the 21 above. The bytes are those of ggml's blocks, rearranged (and a last group of
// fewer rows padded with zero rows).
//
// A prompt's tokens meet a group's blocks kPackedTokenTile at a time: each block's scales are
// converted once for the tile and its codes loaded once (in L1 by then), and every token of the
// tile has an accumulator of its own. The group's bytes come from memory for the first tile and
// from L2 for the others. On one thread, 4096 x 4096 at T = 128, side by side with version 3
// (which reads ggml's layout and unpacks a row group's nibbles once per chunk of tokens): Q4_0
// 303 GOP/s against 152, Q8_0 319 against 65 (version 3's Q8_0 turns every pair of blocks of
// every row into floats on its own). A tile of 8 tokens was no faster. A token's products are
// the same operations in the same order whether it is in a tile or alone, so its results do
// not depend on T. Every call reads the packed bytes when W starts at a packed group of rows;
// version 3, from W.blocks (which the contract keeps valid), serves the others.
constexpr int kPackRows = 16;           // rows per packed group: one int32 lane each
constexpr int kPackedTokenTile = 4;     // tokens that meet each load of a packed block together
constexpr int kPackedChunk = 64;        // tokens prepared at a time (PackedActivations' room)
constexpr size_t kPackedAhead = 4096;   // bytes requested ahead of the block being multiplied
// The requests ask for the bytes in L2, not L1 (__builtin_prefetch's third argument, 2:
// prefetcht1 on x86). A request for L1 holds one of the core's few line-fill buffers (about 16
// on recent x86 cores) until its line arrives, and those are all the lines one core can have
// on their way to L1 at once; a request for L2 waits in the L2's own, longer queue, so more
// lines are in flight, and the loads find them in L2 a few cycles away. Q4_0, which spends
// more time computing per byte than Q8_0 and so needs its bytes requested earlier in time,
// read 9.5 GB/s with requests for L1 and 12.9 with requests for L2 (one thread, 14336 x 4096,
// side by side on this project's 2-CPU Intel Xeon guest; two threads 18.1 and 23.4); Q8_0
// read about 13 either way, and the distance ahead (4 to 64 KiB) changed nothing once the
// requests were for L2.

template <WeightType kType>
constexpr int PackedCodeVectors() {
  return kType == WeightType::kQ8_0 ? 8 : 4;
}
template <WeightType kType>
constexpr size_t PackedBlockBytes() {
  return 32 + 64 * static_cast<size_t>(PackedCodeVectors<kType>());
}
size_t PackedBytes(const QuantMatrix& W) {
  const size_t groups = static_cast<size_t>((W.rows + kPackRows - 1) / kPackRows);
  const size_t blocks = static_cast<size_t>(W.cols / QK);
  return groups * blocks *
         (W.type == WeightType::kQ8_0 ? PackedBlockBytes<WeightType::kQ8_0>() : PackedBlockBytes<WeightType::kQ4_0>());
}

// Group g's block b starts at byte (g * blocks + b) * PackedBlockBytes. Rows past W.rows are
// left as pack_q receives them, zero: scale 0, so their products are 0 and never delivered.
template <WeightType kType>
void PackRows(const QuantMatrix& W, unsigned char* out) {
  const int blocks = W.cols / QK;
  const unsigned char* in = static_cast<const unsigned char*>(W.blocks);
  for (int g = 0; g * kPackRows < W.rows; ++g) {
    for (int b = 0; b < blocks; ++b, out += PackedBlockBytes<kType>()) {
      for (int r = 0; r < kPackRows && g * kPackRows + r < W.rows; ++r) {
        const unsigned char* block = in + (static_cast<size_t>(g * kPackRows + r) * blocks + b) * BlockBytes<kType>();
        std::memcpy(out + 2 * r, block, 2);  // the scale's half
        const unsigned char* codes = block + 2;
        for (int v = 0; v < PackedCodeVectors<kType>(); ++v) {
          for (int k = 0; k < 4; ++k) {
            const unsigned char code = codes[4 * v + k];
            out[32 + 64 * v + 4 * r + k] = kType == WeightType::kQ8_0 ? code ^ 0x80 : code;
          }
        }
      }
    }
  }
}

// Per token and block of the activations: the scale half(dX), and the integer the products
// start from, the correction for the weights' unsigned codes: -128 sum(x) for Q8_0 codes
// stored plus 128, -8 sum(x) for Q4_0's nibbles (q - 8 is the value). Reused by every call,
// prepared kPackedChunk tokens at a time at most, and reserved for that many at the first call
// of a width: no later call allocates (as Prepare's activations).
struct PackedActivations {
  std::vector<int32_t> starts;  // T x blocks
  std::vector<float> scales;    // T x blocks
};
// This thread's, with room for kPackedChunk tokens of `blocks` blocks. Also reserved by a call
// that reads W.blocks when W is packed (MatmulQThreaded): a slice that starts inside a packed
// group then makes the room a later packed call needs, on every thread it ran on, so that the
// later call allocates nothing.
PackedActivations& PackedActivationsRoom(int blocks) {
  static thread_local PackedActivations a;
  a.starts.reserve(static_cast<size_t>(kPackedChunk) * blocks);
  a.scales.reserve(static_cast<size_t>(kPackedChunk) * blocks);
  return a;
}

template <WeightType kType>
const PackedActivations& PreparePacked(int T, const BlockQ8_0* xq, int blocks) {
  PackedActivations& a = PackedActivationsRoom(blocks);
  const size_t count = static_cast<size_t>(T) * blocks;
  a.starts.resize(count);
  a.scales.resize(count);
  for (size_t i = 0; i < count; ++i) {
    int sum = 0;
    for (int j = 0; j < QK; ++j) sum += xq[i].qs[j];
    a.starts[i] = (kType == WeightType::kQ8_0 ? -128 : -8) * sum;
    a.scales[i] = HalfToFloat(xq[i].d);
  }
  return a;
}

// Where a group's packed bytes are, and how far requests ahead of them may go.
struct PackedGroup {
  const unsigned char* packed;  // W's packed bytes, from its first group
  size_t at;                    // this group's first byte in them
  size_t lastLine;              // the last line requests ahead may ask for: W's last group's
};

// Tokens [t, t + kTokens) against one packed group of rows: sums[j], lane r, is row r's dot
// product with token t + j, each block's 16 exact integer sums converted and multiply-added
// with the 16 rows' scales times the token's. The first tokens to meet the group
// (requestAhead) ask for the bytes kPackedAhead further on as they go.
template <class Codes, WeightType kType, int kTokens>
void PackedGroupTokens(const PackedGroup& g, int blocks, const BlockQ8_0* xq, const PackedActivations& a, int t,
                       bool requestAhead, Floats (&sums)[kTokens]) {
  for (int j = 0; j < kTokens; ++j) sums[j] = Floats{};
  for (int b = 0; b < blocks; ++b) {
    const size_t at = g.at + static_cast<size_t>(b) * PackedBlockBytes<kType>();
    if (requestAhead) {
      for (size_t line = 0; line < PackedBlockBytes<kType>(); line += 64) {
        __builtin_prefetch(g.packed + std::min(at + kPackedAhead + line, g.lastLine), 0, 2);  // read, into L2
      }
    }
    const unsigned char* block = g.packed + at;
    const Floats wScales = Codes::ScalesToFloats(Load<UHalves>(block));
    for (int j = 0; j < kTokens; ++j) {
      const size_t tb = static_cast<size_t>(t + j) * blocks + b;  // token t + j's block b
      const Ints products = kType == WeightType::kQ8_0 ? Codes::PackedQ8(block + 32, xq[tb].qs, a.starts[tb])
                                                       : Codes::PackedQ4(block + 32, xq[tb].qs, a.starts[tb]);
      sums[j] += __builtin_convertvector(products, Floats) * (wScales * a.scales[tb]);
    }
  }
}

// Rows [r0, r1) of y from the packed bytes, r0 a multiple of kPackRows, for T <= kPackedChunk
// tokens: per group of rows, the tokens a tile at a time, then one at a time. W may be a slice
// of the packed matrix that starts at a group (W.packedFirstRow, a multiple of kPackRows).
template <class Codes, WeightType kType>
void MatmulQPackedRows(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int r0, int r1) {
  const int blocks = W.cols / QK;
  const PackedActivations& a = PreparePacked<kType>(T, xq, blocks);
  const size_t groupBytes = static_cast<size_t>(blocks) * PackedBlockBytes<kType>();
  PackedGroup g;
  g.packed = static_cast<const unsigned char*>(W.packed) + static_cast<size_t>(W.packedFirstRow / kPackRows) * groupBytes;
  g.lastLine = static_cast<size_t>((W.rows + kPackRows - 1) / kPackRows) * groupBytes - 64;
  for (int o = r0; o < r1; o += kPackRows) {
    g.at = static_cast<size_t>(o / kPackRows) * groupBytes;
    const int rows = std::min(kPackRows, r1 - o);
    auto deliver = [&](int t, const Floats& sum) {
      for (int r = 0; r < rows; ++r) Deliver(y[static_cast<size_t>(t) * W.rows + o + r], sum[r], mode);
    };
    int t = 0;
    for (; t + kPackedTokenTile <= T; t += kPackedTokenTile) {
      Floats sums[kPackedTokenTile];
      PackedGroupTokens<Codes, kType, kPackedTokenTile>(g, blocks, xq, a, t, t == 0, sums);
      for (int j = 0; j < kPackedTokenTile; ++j) deliver(t + j, sums[j]);
    }
    for (; t < T; ++t) {
      Floats sum[1];
      PackedGroupTokens<Codes, kType, 1>(g, blocks, xq, a, t, t == 0, sum);
      deliver(t, sum[0]);
    }
  }
}

// A chunk of at most kPackedChunk tokens at a time, so that the activations prepared for it
// fit the room reserved at the first call of a width.
template <class Codes>
void MatmulQPackedBand(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int r0, int r1) {
  const int blocks = W.cols / QK;
  for (int chunk = 0; chunk < T; chunk += kPackedChunk) {
    const int tokens = std::min(kPackedChunk, T - chunk);
    const BlockQ8_0* x = xq + static_cast<size_t>(chunk) * blocks;
    float* out = y + static_cast<size_t>(chunk) * W.rows;
    if (W.type == WeightType::kQ8_0) {
      MatmulQPackedRows<Codes, WeightType::kQ8_0>(tokens, x, W, out, mode, r0, r1);
    } else {
      MatmulQPackedRows<Codes, WeightType::kQ4_0>(tokens, x, W, out, mode, r0, r1);
    }
  }
}

// --- matmul_q, version 3: threads over bands of weight rows -------------------------------------
// Thread i of n owns rows [i * band, (i + 1) * band) of W, whole groups of kGroupRows: disjoint
// columns of y, so no element is written by two threads, and each thread streams only its
// own contiguous stretch of the weights, which is what lets T = 1 use both cores' bandwidth.
// Every row has its own accumulator, so its arithmetic is the same for any thread count.
// Each thread prepares the activations itself, in its own Prepare object: prepared once by the
// calling thread and read by the others, they had to travel from that thread's cache to each
// other core on every call, which at T = 1 is a short call (2 threads, weights in L2: 27
// against 32 GB/s, side by side). At T = 128 the repeated preparing does not show.
struct Band {
  int begin;
  int end;
};
Band RowBand(int rows, int thread, int threads, int groupRows) {
  const int groups = (rows + groupRows - 1) / groupRows;
  const int perThread = (groups + threads - 1) / threads;
  const int begin = std::min(rows, thread * perThread * groupRows);
  return {begin, std::min(rows, begin + perThread * groupRows)};
}

// The band kernels, one per version of the code products. A fast version is compiled for its
// instruction set (its target attribute) with everything it calls inlined into it (flatten), so
// that the whole loop, not only the intrinsics, is built for that instruction set.
void MatmulQBandPortable(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int r0, int r1) {
  MatmulQBand<PortableCodes>(T, xq, W, y, mode, r0, r1);
}
void MatmulQPackedBandPortable(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int r0,
                               int r1) {
  MatmulQPackedBand<PortableCodes>(T, xq, W, y, mode, r0, r1);
}
#if defined(__x86_64__)
WB_TARGET_AVX2 __attribute__((flatten)) void MatmulQBandAvx2(int T, const BlockQ8_0* xq, const QuantMatrix& W,
                                                             float* y, Accumulate mode, int r0, int r1) {
  MatmulQBand<Avx2Codes>(T, xq, W, y, mode, r0, r1);
}
WB_TARGET_AVX2 __attribute__((flatten)) void MatmulQPackedBandAvx2(int T, const BlockQ8_0* xq, const QuantMatrix& W,
                                                                   float* y, Accumulate mode, int r0, int r1) {
  MatmulQPackedBand<Avx2Codes>(T, xq, W, y, mode, r0, r1);
}
WB_TARGET_AVX512_VNNI __attribute__((flatten)) void MatmulQBandAvx512Vnni(int T, const BlockQ8_0* xq,
                                                                          const QuantMatrix& W, float* y,
                                                                          Accumulate mode, int r0, int r1) {
  MatmulQBand<Avx512VnniCodes>(T, xq, W, y, mode, r0, r1);
}
WB_TARGET_AVX512_VNNI __attribute__((flatten)) void MatmulQPackedBandAvx512Vnni(int T, const BlockQ8_0* xq,
                                                                                const QuantMatrix& W, float* y,
                                                                                Accumulate mode, int r0, int r1) {
  MatmulQPackedBand<Avx512VnniCodes>(T, xq, W, y, mode, r0, r1);
}
#endif

using BandKernel = void (*)(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int r0,
                            int r1);
struct BandVersion {
  const char* name;
  BandKernel kernel;  // from W.blocks (version 3)
  BandKernel packed;  // from W.packed (version 4)
  bool (*supported)();
};
// Every version, the portable one first; the fastest this CPU runs is the last it supports.
const BandVersion kBandVersions[] = {
    {"portable", MatmulQBandPortable, MatmulQPackedBandPortable, [] { return true; }},
#if defined(__x86_64__)
    {"avx2", MatmulQBandAvx2, MatmulQPackedBandAvx2,
     [] { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"); }},
    {"avx512vnni", MatmulQBandAvx512Vnni, MatmulQPackedBandAvx512Vnni,
     [] {
       return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
              __builtin_cpu_supports("avx512vnni");
     }},
#endif
};

// Chosen once, on the first call: the version the environment variable WB_KERNEL_VERSION names,
// when this CPU runs it (`./workbook check 4 --solutions` runs the suite through each in turn),
// and otherwise the fastest this CPU runs.
const BandVersion& ChooseBandVersion() {
  const char* asked = std::getenv("WB_KERNEL_VERSION");
  const BandVersion* chosen = &kBandVersions[0];
  for (const BandVersion& v : kBandVersions) {
    if (!v.supported()) continue;
    if (asked != nullptr && std::strcmp(asked, v.name) == 0) return v;
    chosen = &v;
  }
  return *chosen;
}

[[maybe_unused]] void MatmulQThreaded(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode,
                                      int threads) {
  static const BandVersion& version = ChooseBandVersion();
  // Packed bytes serve a slice that starts at a packed group (version 4); the others read
  // W.blocks.
  const bool packed = W.packed != nullptr && W.packedFirstRow % kPackRows == 0;
  const BandKernel band = packed ? version.packed : version.kernel;
  if (threads <= 1) {  // GCC's OpenMP runtime allocates for a one-thread region: skip it
    if (W.packed != nullptr) PackedActivationsRoom(W.cols / QK);
    band(T, xq, W, y, mode, 0, W.rows);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    if (W.packed != nullptr) PackedActivationsRoom(W.cols / QK);
    const Band rows = RowBand(W.rows, omp_get_thread_num(), omp_get_num_threads(), packed ? kPackRows : kGroupRows);
    band(T, xq, W, y, mode, rows.begin, rows.end);
  }
}

// Quantizes T rows of `width` floats into T rows of width / QK blocks.
void QuantizeRows(int T, int width, const float* x, BlockQ8_0* out) {
  quantize_q8_0(T * width, x, out);  // rows are back to back in both: one call does them all
}

}  // namespace

void quantize_q8_0(int n, const float* x, BlockQ8_0* out) {
  for (int b = 0; b < n / QK; ++b) QuantizeBlock(x + static_cast<size_t>(b) * QK, out[b]);
}

size_t pack_q_bytes(const QuantMatrix& W) { return PackedBytes(W); }

void pack_q(const QuantMatrix& W, void* packed) {
  if (W.type == WeightType::kQ8_0) {
    PackRows<WeightType::kQ8_0>(W, static_cast<unsigned char*>(packed));
  } else {
    PackRows<WeightType::kQ4_0>(W, static_cast<unsigned char*>(packed));
  }
}

void matmul_q(int T, const BlockQ8_0* xq, const QuantMatrix& W, float* y, Accumulate mode, int threads) {
#if MATMULQ_VERSION == 1
  (void)threads;
  MatmulQScalar(T, xq, W, y, mode);
#elif MATMULQ_VERSION == 2
  (void)threads;
  MatmulQVectorised(T, xq, W, y, mode);
#else
  MatmulQThreaded(T, xq, W, y, mode, threads);
#endif
}

void quant_block(int T, int threads, const QuantWeights& w, const float* x,
                 const float* ropeCos, const float* ropeSin,
                 float* norm1, BlockQ8_0* norm1q, float* qkv, float* attnOut,
                 BlockQ8_0* attnOutq, float* residual1, float* norm2, BlockQ8_0* norm2q,
                 float* hidden, BlockQ8_0* hiddenq, float* output) {
  if (T < 1) return;  // no tokens, nothing to write
  const size_t rows = static_cast<size_t>(T);

  // 1. norm1 (T x D), then its Q8_0 twin: every matmul_q multiplies quantized activations.
  RmsNormRows(T, x, w.rms1, norm1);
  QuantizeRows(T, D, norm1, norm1q);

  // 2. qkv (T x QKV) = norm1q . wqkv^T: WQ|WK|WV as one matrix, one matmul_q.
  matmul_q(T, norm1q, w.wqkv, qkv, Accumulate::kOverwrite, threads);

  // 3. RoPE in place on the q and k parts of each qkv row.
  ApplyRope(T, qkv, ropeCos, ropeSin);

  // 4. attnOut (T x D), then attnOutq.
  CausalAttention(T, qkv, attnOut, threads);
  QuantizeRows(T, D, attnOut, attnOutq);

  // 5. residual1 = x + attnOutq . wo^T: the stream copied, the projection accumulated into it.
  std::copy(x, x + rows * D, residual1);
  matmul_q(T, attnOutq, w.wo, residual1, Accumulate::kAdd, threads);

  // 6. norm2 (T x D), then norm2q.
  RmsNormRows(T, residual1, w.rms2, norm2);
  QuantizeRows(T, D, norm2, norm2q);

  // 7. hidden (T x F) = SiLU(norm2q . wgate^T) * (norm2q . wup^T): the gate products go
  //    straight into hidden, the up products into a scratch buffer, then one pass combines them.
  std::vector<float> up(rows * F);
  matmul_q(T, norm2q, w.wgate, hidden, Accumulate::kOverwrite, threads);
  matmul_q(T, norm2q, w.wup, up.data(), Accumulate::kOverwrite, threads);
  SiluTimesUp(rows * F, hidden, up.data());
  QuantizeRows(T, F, hidden, hiddenq);

  // 8. output = residual1 + hiddenq . wdown^T, accumulated the same way.
  std::copy(residual1, residual1 + rows * D, output);
  matmul_q(T, hiddenq, w.wdown, output, Accumulate::kAdd, threads);
}
