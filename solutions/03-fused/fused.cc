// Stage 3, solved: the decoder block as four kernels that respect memory.
//
// The contract (QKV, Accumulate, the four signatures) is contracts/stage03_fused.h; sizes
// and packed offsets are stage 1's. Portable C++: GCC/Clang vector extensions and OpenMP,
// no intrinsics, compiled as student code is (data/stages.json: -O3 -march=native
// -ffp-contract=fast -fschedule-insns -fsched-pressure -fopenmp).
//
// The matmul is kept as the four versions that lead to it, side by side (llm.c's
// dev/cuda style), each a complete kernel with the contract's signature:
//   1 MatmulNaive       one dot product per output element: W is read T times from memory;
//   2 MatmulTiled       a tile of kTileRows x kTileColumns outputs shares its loads: each
//                       x value feeds kTileColumns products, each W value kTileRows;
//   3 MatmulVectorised  the same tile with 16-float vectors along `in` (both x's rows and
//                       W's rows are contiguous there, so nothing needs packing);
//   4 MatmulThreaded    version 3 on each thread's own band of output columns;
//   5 MatmulPacked      from kPackedMinRows rows on: W packed into panels of neighbouring
//                       columns and x into blocks of rows, both k-major, and an outer-product
//                       micro-kernel whose vectors run along the output row, so no sum is ever
//                       reduced across lanes.
// matmul is version MATMUL_VERSION (default 5); the bench builds and validates each one.
//
// Every output element is one accumulator's dot product, summed in the same order whatever
// the tile it falls in and whichever thread computes it: the results are bit-identical for
// any thread count, and two runs always agree. (Versions 4 and 5 sum in different orders, but
// which one runs depends on T alone.)
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <omp.h>

#include "stage03_fused.h"

#ifndef MATMUL_VERSION
#define MATMUL_VERSION 5
#endif

namespace {

// --- vectors ---------------------------------------------------------------------------------
// 16 floats: one AVX-512 register, two AVX2 ones; the compiler splits it as the target needs.
constexpr int kLanes = 16;
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
typedef float Half __attribute__((vector_size(kLanes / 2 * sizeof(float))));
typedef float Quarter __attribute__((vector_size(kLanes / 4 * sizeof(float))));

// Unaligned load and store: memcpy is how portable code says "these bytes as a vector".
Vec Load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void Store(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }

// The sum of the 16 lanes, by halves: a fixed order, so every element sums the same way.
float HorizontalSum(Vec v) {
  const Half h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Quarter q = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
  return (q[0] + q[2]) + (q[1] + q[3]);
}

// The lane sums of four vectors at once, each added in HorizontalSum's order (lane i with
// i + 8, then i + 4, i + 2, i + 1), so a sum's bits do not depend on which path made it: a
// transposing tree spends 10 shuffles on four sums instead of 24.
Quarter HorizontalSums(Vec a, Vec b, Vec c, Vec d) {
  const Vec ab = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                 __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  const Vec cd = __builtin_shufflevector(c, d, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                 __builtin_shufflevector(c, d, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  const Vec abcd = __builtin_shufflevector(ab, cd, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
                   __builtin_shufflevector(ab, cd, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  const Half pairs = __builtin_shufflevector(abcd, abcd, 0, 1, 4, 5, 8, 9, 12, 13) +
                     __builtin_shufflevector(abcd, abcd, 2, 3, 6, 7, 10, 11, 14, 15);
  return __builtin_shufflevector(pairs, pairs, 0, 2, 4, 6) + __builtin_shufflevector(pairs, pairs, 1, 3, 5, 7);
}

// e^x in every lane, to within a few units in the last place (std::exp, one lane at a time,
// is most of SwiGLU's and attention's time otherwise). x = n ln2 + r with n an integer and
// |r| <= ln2 / 2 (ln2 split in two parts, so n ln2 is subtracted exactly: Cody and Waite);
// e^r from its Taylor series to r^7 (error below 6e-9 on that interval); 2^n built as a
// float's exponent bits. Lanes are clamped to [-87.3, 88.3], where e^x and 2^n are normal floats.
typedef int32_t IntVec __attribute__((vector_size(kLanes * sizeof(int32_t))));
Vec Exp(Vec x) {
  const Vec lowest = Vec{} - 87.3f;
  const Vec highest = Vec{} + 88.3f;
  x = x < lowest ? lowest : x;
  x = x > highest ? highest : x;
  const Vec shifter = Vec{} + 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const Vec n = (x * 1.44269504f + shifter) - shifter;
  const Vec r = (x - n * 0.693145752f) - n * 1.42860677e-6f;
  Vec p = Vec{} + 1.0f / 5040;
  for (const float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f}) p = p * r + c;
  const IntVec bits = (__builtin_convertvector(n, IntVec) + 127) << 23;
  Vec scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

float Dot(const float* a, const float* b, int count) {
  float sum = 0.0f;
  for (int i = 0; i < count; ++i) sum += a[i] * b[i];
  return sum;
}

// out = value when overwriting, out += value when accumulating.
void Deliver(float& out, float value, Accumulate mode) { out = mode == Accumulate::kAdd ? out + value : value; }

// --- matmul, version 1: naive -----------------------------------------------------------------
// Each of the T x out dot products reads a row of x and a row of W: every weight is read T
// times, and for T > 1 the weights no longer fit in cache, so each read goes to memory.
[[maybe_unused]] void MatmulNaive(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode) {
  for (int t = 0; t < T; ++t) {
    for (int o = 0; o < out; ++o) {
      Deliver(y[static_cast<size_t>(t) * out + o], Dot(x + static_cast<size_t>(t) * in, W + static_cast<size_t>(o) * in, in), mode);
    }
  }
}

// --- the tile loop shared by versions 2-4 and matmul_swiglu -----------------------------------
// Visits output columns [c0, c1) of every row in blocks of kRowBlock rows x kColumnBlock
// columns, and within a block every tile of up to `tileRows` x `tileColumns` outputs, rows
// outer. A row block of x (256 rows of `in` floats: 512 KiB for in = 512) stays in L2 while
// every column block meets it; a column block of W (64 rows, 128 KiB) stays in L2 while the
// block's row tiles pass over it; a row tile of x (8 KiB) stays in L1 while it meets each of
// the block's column tiles. The last tile of a row or column range is smaller when the range
// does not divide: `tile(r, rows, c, columns)`.
constexpr int kRowBlock = 256;
constexpr int kColumnBlock = 64;

template <typename TileFn>
void ForEachTile(int T, int c0, int c1, int tileRows, int tileColumns, const TileFn& tile) {
  for (int rowBlock = 0; rowBlock < T; rowBlock += kRowBlock) {
    const int rowEnd = std::min(rowBlock + kRowBlock, T);
    for (int block = c0; block < c1; block += kColumnBlock) {
      const int blockEnd = std::min(block + kColumnBlock, c1);
      for (int r = rowBlock; r < rowEnd; r += tileRows) {
        const int rows = std::min(tileRows, rowEnd - r);
        for (int c = block; c < blockEnd; c += tileColumns) tile(r, rows, c, std::min(tileColumns, blockEnd - c));
      }
    }
  }
}

// A run-time tile size turned into the compile-time one a kernel template needs.
template <int Max, typename Fn>
void WithTileSize(int size, const Fn& fn) {
  if constexpr (Max >= 1) {
    if (size == Max) return fn(std::integral_constant<int, Max>{});
    WithTileSize<Max - 1>(size, fn);
  }
}

// --- matmul, version 2: register tiles, scalar ------------------------------------------------
constexpr int kTileRows = 4;
constexpr int kTileColumns = 4;

// y[r][c] (+)= x row r . W row c for an R x C tile. The R x C sums live in registers; per
// step along `in`, R + C loads feed R * C multiply-adds instead of 2 loads feeding one.
template <int R, int C>
void ScalarTile(int in, const float* x, const float* W, float* y, int yStride, Accumulate mode) {
  float sum[R][C] = {};
  for (int k = 0; k < in; ++k) {
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) sum[r][c] += x[static_cast<size_t>(r) * in + k] * W[static_cast<size_t>(c) * in + k];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) Deliver(y[static_cast<size_t>(r) * yStride + c], sum[r][c], mode);
  }
}

[[maybe_unused]] void MatmulTiled(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode) {
  ForEachTile(T, 0, out, kTileRows, kTileColumns, [&](int r, int rows, int c, int columns) {
    WithTileSize<kTileRows>(rows, [&](auto R) {
      WithTileSize<kTileColumns>(columns, [&](auto C) {
        ScalarTile<R, C>(in, x + static_cast<size_t>(r) * in, W + static_cast<size_t>(c) * in,
                         y + static_cast<size_t>(r) * out + c, out, mode);
      });
    });
  });
}

// --- matmul, version 3: register tiles of vectors ---------------------------------------------
// Each of the R x C sums is a vector of 16 partial sums along `in`, reduced once at the end;
// the last in % 16 products are added to the reduced sum one by one (the tail).
template <int R, int C>
void VectorTile(int in, const float* x, const float* W, float* y, int yStride, Accumulate mode) {
  Vec sum[R][C] = {};
  int k = 0;
  for (; k + kLanes <= in; k += kLanes) {
    Vec a[R];
    Vec b[C];
    for (int r = 0; r < R; ++r) a[r] = Load(x + static_cast<size_t>(r) * in + k);
    for (int c = 0; c < C; ++c) b[c] = Load(W + static_cast<size_t>(c) * in + k);
    for (int c = 0; c < C; ++c) {
      for (int r = 0; r < R; ++r) sum[r][c] += a[r] * b[c];
    }
  }
  for (int r = 0; r < R; ++r) {
    float total[C];
    if constexpr (C == 4) {
      const Quarter four = HorizontalSums(sum[r][0], sum[r][1], sum[r][2], sum[r][3]);
      for (int c = 0; c < C; ++c) total[c] = four[c];
    } else {
      for (int c = 0; c < C; ++c) total[c] = HorizontalSum(sum[r][c]);
    }
    for (int c = 0; c < C; ++c) {
      for (int kk = k; kk < in; ++kk) total[c] += x[static_cast<size_t>(r) * in + kk] * W[static_cast<size_t>(c) * in + kk];
      Deliver(y[static_cast<size_t>(r) * yStride + c], total[c], mode);
    }
  }
}

// Columns [c0, c1) of y, on the calling thread.
void MatmulColumns(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode, int c0, int c1) {
  ForEachTile(T, c0, c1, kTileRows, kTileColumns, [&](int r, int rows, int c, int columns) {
    WithTileSize<kTileRows>(rows, [&](auto R) {
      WithTileSize<kTileColumns>(columns, [&](auto C) {
        VectorTile<R, C>(in, x + static_cast<size_t>(r) * in, W + static_cast<size_t>(c) * in,
                         y + static_cast<size_t>(r) * out + c, out, mode);
      });
    });
  });
}

[[maybe_unused]] void MatmulVectorised(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode) {
  MatmulColumns(T, out, in, x, W, y, mode, 0, out);
}

// --- matmul, version 4: threads over bands of output columns ----------------------------------
// Thread i of n owns columns [i * band, (i + 1) * band): whole column tiles, disjoint, so no
// element is written by two threads, and each thread reads only its own rows of W, which is
// what makes T = 1 (one token, all weights) scale too.
struct Band {
  int begin;
  int end;
};
Band ColumnBand(int out, int tileColumns, int thread, int threads) {
  const int tiles = (out + tileColumns - 1) / tileColumns;
  const int perThread = (tiles + threads - 1) / threads;
  const int begin = std::min(out, thread * perThread * tileColumns);
  return {begin, std::min(out, begin + perThread * tileColumns)};
}

[[maybe_unused]] void MatmulThreaded(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode,
                                     int threads) {
#pragma omp parallel num_threads(threads)
  {
    const Band band = ColumnBand(out, kTileColumns, omp_get_thread_num(), omp_get_num_threads());
    MatmulColumns(T, out, in, x, W, y, mode, band.begin, band.end);
  }
}

// --- matmul, version 5: packed panels, an outer-product micro-kernel --------------------------
// Versions 2-4 give each output its own vector of partial sums along `in` and pay a horizontal
// sum per output. Turned the other way, one vector holds 16 neighbouring outputs of one row:
//   y[r][c .. c+15] += x[r][k] * (W[c][k], W[c+1][k], ..., W[c+15][k])   for k = 0, 1, ...
// one broadcast x value times one vector of W, an outer product of a column of x and a row of
// W^T added into a kPanelRows x kPanelColumns block of y that lives in registers (the
// micro-kernel of BLIS: Van Zee and van de Geijn, "BLIS: A Framework for Rapidly Instantiating
// BLAS Functionality", ACM TOMS 41(3), 2015). Per step k it loads kPanelRows + kPanelVectors
// values for kPanelRows * kPanelVectors multiply-adds, and each output is one lane's sum, in
// order, written once at the end.
//
// W's k-th values of neighbouring columns are `in` floats apart, so W is packed first: a
// panel of kPanelColumns columns becomes `in` runs of kPanelColumns contiguous floats (columns
// past `out` are zeros). Packing reads each weight once and costs as much as one row of
// outputs; it is amortised over the T rows that use the panel, which is why small T stays
// with version 4. x is packed as well, once per call (PackRows, below): read where it lies, a
// micro-kernel's rows would be kPanelRows streams `in` floats apart; packed, they are one.
//
// The register budget decides the panel: with 32 AVX-512 registers, 12 rows x 2 vectors is 24
// accumulators, 2 loaded vectors and 1 broadcast; where vectors are AVX2's (16 registers, a
// 16-float vector is two of them) 6 rows x 1 vector is 12 + 2 + 1.
#ifdef __AVX512F__
constexpr int kPanelRows = 12;
constexpr int kPanelVectors = 2;
#else
constexpr int kPanelRows = 6;
constexpr int kPanelVectors = 1;
#endif
constexpr int kPanelColumns = kPanelVectors * kLanes;
// From this many rows on, packing pays for itself: at the qkv shape on one Zen 5 core version
// 4 was ahead at T = 16 (a 12-row panel is a third empty there) and version 5 from T = 24 on.
constexpr int kPackedMinRows = 24;

// A 16 x 16 block of floats transposed in registers: rows[i][l] becomes rows[l][i]. Four
// rounds, each swapping the off-diagonal sub-blocks of size 8, 4, 2, 1 between row i and row
// i + size: 64 two-vector shuffles for 256 values, where moving them one by one costs 256
// stores.
template <int Size, size_t... Lane>
Vec LowerOfPair(Vec a, Vec b, std::index_sequence<Lane...>) {
  return __builtin_shufflevector(a, b, ((Lane & Size) == 0 ? Lane : kLanes + Lane - Size)...);
}
template <int Size, size_t... Lane>
Vec UpperOfPair(Vec a, Vec b, std::index_sequence<Lane...>) {
  return __builtin_shufflevector(a, b, ((Lane & Size) == 0 ? Lane + Size : kLanes + Lane)...);
}
template <int Size>
void SwapSubBlocks(Vec (&rows)[kLanes]) {
  for (int i = 0; i < kLanes; ++i) {
    if ((i & Size) != 0) continue;
    const Vec a = rows[i];
    const Vec b = rows[i + Size];
    rows[i] = LowerOfPair<Size>(a, b, std::make_index_sequence<kLanes>{});
    rows[i + Size] = UpperOfPair<Size>(a, b, std::make_index_sequence<kLanes>{});
  }
}
void Transpose(Vec (&rows)[kLanes]) {
  SwapSubBlocks<8>(rows);
  SwapSubBlocks<4>(rows);
  SwapSubBlocks<2>(rows);
  SwapSubBlocks<1>(rows);
}

// Rows [0, columns) of W (each `in` floats) as `width` columns of a panel `stride` floats
// wide, starting at column `first`: panel[k * stride + first + j] = W[j][k], and zeros for
// columns <= j < width. Full panels go 16 x 16 blocks at a time through Transpose.
void PackColumns(int in, const float* W, int columns, int width, float* panel, int stride, int first) {
  int k = 0;
  if (columns == width && width % kLanes == 0) {
    for (; k + kLanes <= in; k += kLanes) {
      for (int j = 0; j < width; j += kLanes) {
        Vec block[kLanes];
        for (int i = 0; i < kLanes; ++i) block[i] = Load(W + static_cast<size_t>(j + i) * in + k);
        Transpose(block);
        for (int i = 0; i < kLanes; ++i) Store(panel + (k + i) * stride + first + j, block[i]);
      }
    }
  }
  for (; k < in; ++k) {
    for (int j = 0; j < width; ++j) panel[k * stride + first + j] = j < columns ? W[static_cast<size_t>(j) * in + k] : 0.0f;
  }
}

// x's rows are packed too, Rows at a time: a block of Rows rows becomes `in` runs of Rows
// values, k-major (block[k * Rows + r] = x[r][k], zeros for rows past T), so the values the
// micro-kernel broadcasts at step k are Rows neighbours in one stream, not Rows streams `in`
// floats apart. x is packed once per call, 16 x 16 at a time through Transpose, and every panel
// reads it.
template <int Rows>
void PackRows(int T, int in, const float* x, int block, float* packed) {
  static_assert(Rows <= kLanes, "a block of rows is at most a vector's lanes");
  const int first = block * Rows;
  const int rows = std::min(Rows, T - first);
  float* out = packed + static_cast<size_t>(block) * Rows * in;
  int k = 0;
  for (; k + kLanes <= in; k += kLanes) {
    Vec columns[kLanes];
    for (int i = 0; i < kLanes; ++i) columns[i] = i < rows ? Load(x + static_cast<size_t>(first + i) * in + k) : Vec{};
    Transpose(columns);
    for (int i = 0; i < kLanes; ++i) std::memcpy(out + static_cast<size_t>(k + i) * Rows, &columns[i], Rows * sizeof(float));
  }
  for (; k < in; ++k) {
    for (int i = 0; i < Rows; ++i) out[static_cast<size_t>(k) * Rows + i] = i < rows ? x[static_cast<size_t>(first + i) * in + k] : 0.0f;
  }
}
int RowBlocks(int T, int rows) { return (T + rows - 1) / rows; }

// The Rows x (Vectors * 16) sums of a packed block of Rows rows of x with a packed panel of
// Vectors * 16 columns, over k = 0 .. in - 1, in registers.
template <int Rows, int Vectors>
struct PanelSums {
  Vec sum[Rows][Vectors];
};
template <int Rows, int Vectors>
PanelSums<Rows, Vectors> SumPanel(int in, const float* rows, const float* panel) {
  PanelSums<Rows, Vectors> s = {};
  for (int k = 0; k < in; ++k) {
    Vec w[Vectors];
    for (int v = 0; v < Vectors; ++v) w[v] = Load(panel + (k * Vectors + v) * kLanes);
    for (int r = 0; r < Rows; ++r) {
      const float xk = rows[k * Rows + r];
      for (int v = 0; v < Vectors; ++v) s.sum[r][v] += xk * w[v];
    }
  }
  return s;
}

// Scratch as whole vectors, so that it starts on a cache line (a float vector from malloc
// starts 16 bytes into one, and every 64-byte load from it would straddle two lines). Kept
// between calls, so a call allocates only when a shape needs more than any call before it.
struct VectorScratch {
  std::vector<Vec> vectors;
  float* Floats(size_t count) {
    if (vectors.size() * kLanes < count) vectors.resize((count + kLanes - 1) / kLanes);
    return reinterpret_cast<float*>(vectors.data());
  }
};
// Each thread's packed panel of W (OpenMP's threads live on between calls), and the calling
// thread's packed rows of x, which its team reads.
float* ThreadPanel(int in) {
  static thread_local VectorScratch panel;
  return panel.Floats(static_cast<size_t>(in) * std::max(kPanelColumns, 2 * kLanes));
}
float* PackedRowsScratch(int T, int in, int rows) {
  static thread_local VectorScratch packed;
  return packed.Floats(static_cast<size_t>(RowBlocks(T, rows)) * rows * in);
}

// Columns [c0, c1) of y (c0 a multiple of kPanelColumns), on the calling thread, from x's rows
// packed (PackRows<kPanelRows>): each panel of W is packed once and then meets every block of
// rows, staying in L1/L2 while the rows stream past.
void MatmulPackedColumns(int T, int out, int in, const float* packedRows, const float* W, float* y, Accumulate mode,
                         int c0, int c1) {
  float* panel = ThreadPanel(in);
  for (int c = c0; c < c1; c += kPanelColumns) {
    const int columns = std::min(kPanelColumns, c1 - c);
    PackColumns(in, W + static_cast<size_t>(c) * in, columns, kPanelColumns, panel, kPanelColumns, 0);
    for (int r = 0; r < T; r += kPanelRows) {
      const int rows = std::min(kPanelRows, T - r);
      const auto s = SumPanel<kPanelRows, kPanelVectors>(in, packedRows + static_cast<size_t>(r) * in, panel);
      for (int i = 0; i < rows; ++i) {
        float* yRow = y + static_cast<size_t>(r + i) * out + c;
        if (columns == kPanelColumns) {
          for (int v = 0; v < kPanelVectors; ++v) {
            float* dst = yRow + v * kLanes;
            Store(dst, mode == Accumulate::kAdd ? Load(dst) + s.sum[i][v] : s.sum[i][v]);
          }
        } else {
          for (int j = 0; j < columns; ++j) Deliver(yRow[j], s.sum[i][j / kLanes][j % kLanes], mode);
        }
      }
    }
  }
}

// x's rows packed in the calling thread's scratch, then each thread's band of columns: with a
// team, each thread packs some of the blocks, and all wait for the whole before any reads it.
[[maybe_unused]] void MatmulPacked(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode,
                                   int threads) {
  if (T < kPackedMinRows) return MatmulThreaded(T, out, in, x, W, y, mode, threads);
  float* packedRows = PackedRowsScratch(T, in, kPanelRows);
  const int blocks = RowBlocks(T, kPanelRows);
  if (threads <= 1) {
    for (int b = 0; b < blocks; ++b) PackRows<kPanelRows>(T, in, x, b, packedRows);
    return MatmulPackedColumns(T, out, in, packedRows, W, y, mode, 0, out);
  }
#pragma omp parallel num_threads(threads)
  {
#pragma omp for
    for (int b = 0; b < blocks; ++b) PackRows<kPanelRows>(T, in, x, b, packedRows);
    const Band band = ColumnBand(out, kPanelColumns, omp_get_thread_num(), omp_get_num_threads());
    MatmulPackedColumns(T, out, in, packedRows, W, y, mode, band.begin, band.end);
  }
}

// --- SwiGLU: two matmuls and their epilogue in one pass ---------------------------------------
// hidden[r][c] = SiLU(x row r . Wgate row c) * (x row r . Wup row c) for an R x C tile: the
// gate and up sums of a tile are 2 * R * C vectors, combined as soon as they are reduced.
template <int R, int C>
void SwiGluTile(int in, const float* x, const float* Wgate, const float* Wup, float* hidden, int stride) {
  Vec gate[R][C] = {};
  Vec up[R][C] = {};
  int k = 0;
  for (; k + kLanes <= in; k += kLanes) {
    Vec a[R];
    for (int r = 0; r < R; ++r) a[r] = Load(x + static_cast<size_t>(r) * in + k);
    for (int c = 0; c < C; ++c) {
      const Vec g = Load(Wgate + static_cast<size_t>(c) * in + k);
      const Vec u = Load(Wup + static_cast<size_t>(c) * in + k);
      for (int r = 0; r < R; ++r) {
        gate[r][c] += a[r] * g;
        up[r][c] += a[r] * u;
      }
    }
  }
  // The epilogue: the tile's R x C gate and up sums (lane r * C + c of g and u), then
  // SiLU(g) * u = g / (1 + e^-g) * u for all of them at once.
  static_assert(R * C <= kLanes, "a SwiGLU tile's sums fit one vector");
  Vec g = {};
  Vec u = {};
  for (int r = 0; r < R; ++r) {
    if constexpr (C == 2) {
      const Quarter four = HorizontalSums(gate[r][0], gate[r][1], up[r][0], up[r][1]);
      g[r * C] = four[0];
      g[r * C + 1] = four[1];
      u[r * C] = four[2];
      u[r * C + 1] = four[3];
    } else {
      for (int c = 0; c < C; ++c) {
        g[r * C + c] = HorizontalSum(gate[r][c]);
        u[r * C + c] = HorizontalSum(up[r][c]);
      }
    }
    for (int c = 0; c < C; ++c) {
      for (int kk = k; kk < in; ++kk) {
        const float xv = x[static_cast<size_t>(r) * in + kk];
        g[r * C + c] += xv * Wgate[static_cast<size_t>(c) * in + kk];
        u[r * C + c] += xv * Wup[static_cast<size_t>(c) * in + kk];
      }
    }
  }
  const Vec product = g / (1.0f + Exp(-g)) * u;
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) hidden[static_cast<size_t>(r) * stride + c] = product[r * C + c];
  }
}

constexpr int kSwiGluTileColumns = 2;  // 4 x 2 tiles: 16 sums, as many registers as matmul's

// Columns [c0, c1) of hidden in SwiGluTiles, on the calling thread (T < kPackedMinRows).
void SwiGluTiledColumns(int T, int out, int in, const float* x, const float* Wgate, const float* Wup, float* hidden,
                        int c0, int c1) {
  ForEachTile(T, c0, c1, kTileRows, kSwiGluTileColumns, [&](int r, int rows, int c, int columns) {
    WithTileSize<kTileRows>(rows, [&](auto R) {
      WithTileSize<kSwiGluTileColumns>(columns, [&](auto C) {
        SwiGluTile<R, C>(in, x + static_cast<size_t>(r) * in, Wgate + static_cast<size_t>(c) * in,
                         Wup + static_cast<size_t>(c) * in, hidden + static_cast<size_t>(r) * out + c, out);
      });
    });
  });
}

// SwiGLU on version 5's micro-kernel, for T >= kPackedMinRows: a panel holds 16 columns of
// Wgate and then the same 16 columns of Wup, so each row's two sum vectors are the gate and
// up values of the same 16 outputs, lane for lane, and the epilogue is vector arithmetic.
constexpr int kSwiGluPanelColumns = kLanes;                            // outputs per panel
constexpr int kSwiGluPanelRows = kPanelRows * kPanelVectors / 2;       // the same registers
void SwiGluPackedColumns(int T, int out, int in, const float* packedRows, const float* Wgate, const float* Wup,
                         float* hidden, int c0, int c1) {
  float* panel = ThreadPanel(in);
  for (int c = c0; c < c1; c += kSwiGluPanelColumns) {
    const int columns = std::min(kSwiGluPanelColumns, c1 - c);
    PackColumns(in, Wgate + static_cast<size_t>(c) * in, columns, kLanes, panel, 2 * kLanes, 0);
    PackColumns(in, Wup + static_cast<size_t>(c) * in, columns, kLanes, panel, 2 * kLanes, kLanes);
    for (int r = 0; r < T; r += kSwiGluPanelRows) {
      const int rows = std::min(kSwiGluPanelRows, T - r);
      const auto s = SumPanel<kSwiGluPanelRows, 2>(in, packedRows + static_cast<size_t>(r) * in, panel);
      for (int i = 0; i < rows; ++i) {
        const Vec gate = s.sum[i][0];
        const Vec product = gate / (1.0f + Exp(-gate)) * s.sum[i][1];
        float* row = hidden + static_cast<size_t>(r + i) * out + c;
        if (columns == kSwiGluPanelColumns) {
          Store(row, product);
        } else {
          for (int j = 0; j < columns; ++j) row[j] = product[j];
        }
      }
    }
  }
}

// --- attention: key tiles with an online softmax ----------------------------------------------
// Keys are visited kKeyTile at a time. Each tile's scores are computed first, then the
// running maximum m, normaliser l and accumulator are brought to the tile's new maximum once
// (Milakov & Gimelshein, 2018: multiply by exp(m_old - m_new)), then the tile's values are
// added with weights exp(s - m). One rescale per tile, not per key, and no T-long array.
// The HQ / HKV = 4 query heads that share a KV head go together: each key and value row is
// loaded once for all four, so a load feeds four multiply-adds instead of one.
//
// A score is a dot product along the head, and a key row holds the head contiguously, so a
// product of a query and a key row as vectors leaves 16 partial sums to reduce across lanes:
// shuffles for every key. Turned the other way (as version 5 of matmul turns the matmul), a
// tile of keys transposed, dimension-major, makes a vector of 16 keys' d-th values, and
//   scores[key .. key+15] += q[d] * (k[key][d], k[key+1][d], ..., k[key+15][d])   for each d
// gives 16 scores in one vector with no reduction. Every token reads the same keys, so the
// keys are transposed once per call (TransposeKeys), a 16 x 16 block at a time (Transpose),
// and every (token, KV head) pair reads them. The normaliser is kept as a vector too, one
// partial sum per lane, and reduced once at the end.
constexpr int kTileKeys = kLanes;                // keys in a transposed block
constexpr int kKeyTile = 2 * kTileKeys;          // keys in a softmax tile: two blocks
constexpr int kHeadVectors = DH / kLanes;        // a 64-value head is 4 vectors
constexpr int kGroup = HQ / HKV;                 // query heads per KV head
static_assert(DH % kLanes == 0, "a head is whole vectors");

// The largest of a vector's lanes: halves, then quarters, then four scalars.
float MaxOfLanes(Vec v) {
  const Half low = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  const Half high = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const Half half = low > high ? low : high;
  const Quarter first = __builtin_shufflevector(half, half, 0, 1, 2, 3);
  const Quarter second = __builtin_shufflevector(half, half, 4, 5, 6, 7);
  const Quarter quarter = first > second ? first : second;
  return std::max(std::max(quarter[0], quarter[1]), std::max(quarter[2], quarter[3]));
}

// The blocks of 16 keys TransposeKeys writes for T keys: whole softmax tiles, so that a tile's
// last block is there to read even past T (its scores are masked).
int TransposedKeyBlocks(int T) { return (T + kKeyTile - 1) / kKeyTile * (kKeyTile / kTileKeys); }
size_t TransposedKeysFloats(int T) { return static_cast<size_t>(TransposedKeyBlocks(T)) * DH * kTileKeys; }

// KV head kvHead's keys 0 .. T - 1, transposed a block of 16 keys at a time:
// keysT[(block * DH + d) * 16 + j] is dimension d of key block * 16 + j (zeros past T).
void TransposeKeys(int T, const float* qkv, int kvHead, float* keysT) {
  const float* keys = qkv + D + kvHead * DH;  // key row j at keys + j * QKV
  for (int block = 0; block < TransposedKeyBlocks(T); ++block) {
    const int count = std::clamp(T - block * kTileKeys, 0, kTileKeys);
    for (int d = 0; d < DH; d += kLanes) {
      Vec rows[kLanes];
      for (int j = 0; j < kLanes; ++j) {
        rows[j] = j < count ? Load(keys + static_cast<size_t>(block * kTileKeys + j) * QKV + d) : Vec{};
      }
      Transpose(rows);
      for (int i = 0; i < kLanes; ++i) Store(keysT + (static_cast<size_t>(block) * DH + d + i) * kTileKeys, rows[i]);
    }
  }
}

// Query heads kvHead * 4 .. kvHead * 4 + 3 of token `t` over keys 0 .. t (transposed in
// keysT); out: their 4 x DH values of attnOut's row t.
void AttendGroupTiled(int t, int kvHead, const float* qkv, const float* keysT, float* out) {
  constexpr int kBlocks = kKeyTile / kTileKeys;
  const float scale = 1.0f / std::sqrt(static_cast<float>(DH));
  const float* queries = qkv + static_cast<size_t>(t) * QKV + kvHead * kGroup * DH;
  const float* values = qkv + D + KV + kvHead * DH;  // value row j at values + j * QKV
  float runningMax[kGroup];
  Vec normaliser[kGroup] = {};
  Vec accumulator[kGroup][kHeadVectors] = {};
  float weights[kGroup][kKeyTile];
  for (float& m : runningMax) m = -INFINITY;
  for (int first = 0; first <= t; first += kKeyTile) {
    const int count = std::min(kKeyTile, t + 1 - first);
    // The tile's scores, 16 keys to a vector, for the four heads together.
    const float* tileKeys = keysT + static_cast<size_t>(first / kTileKeys) * DH * kTileKeys;
    Vec scores[kGroup][kBlocks] = {};
    for (int d = 0; d < DH; ++d) {
      Vec k[kBlocks];
      for (int b = 0; b < kBlocks; ++b) k[b] = Load(tileKeys + (static_cast<size_t>(b) * DH + d) * kTileKeys);
      for (int h = 0; h < kGroup; ++h) {
        const float q = queries[h * DH + d];
        for (int b = 0; b < kBlocks; ++b) scores[h][b] += q * k[b];
      }
    }
    for (int h = 0; h < kGroup; ++h) {
      Vec most = Vec{} - INFINITY;
      for (int b = 0; b < kBlocks; ++b) {
        scores[h][b] *= scale;
        if (count < kKeyTile) {  // the last tile: keys past t weigh e^-inf = 0
          for (int j = 0; j < kTileKeys; ++j) {
            if (b * kTileKeys + j >= count) scores[h][b][j] = -INFINITY;
          }
        }
        most = most > scores[h][b] ? most : scores[h][b];
      }
      const float newMax = std::max(runningMax[h], MaxOfLanes(most));
      const float rescale = std::exp(runningMax[h] - newMax);  // exp(-inf) = 0 on the first tile
      normaliser[h] *= rescale;
      for (Vec& a : accumulator[h]) a *= rescale;
      runningMax[h] = newMax;
      for (int b = 0; b < kBlocks; ++b) {
        const Vec weight = Exp(scores[h][b] - newMax);
        Store(weights[h] + b * kTileKeys, weight);
        normaliser[h] += weight;
      }
    }
    for (int j = 0; j < count; ++j) {
      const float* value = values + static_cast<size_t>(first + j) * QKV;
      for (int i = 0; i < kHeadVectors; ++i) {
        const Vec v = Load(value + i * kLanes);
        for (int h = 0; h < kGroup; ++h) accumulator[h][i] += weights[h][j] * v;
      }
    }
  }
  for (int h = 0; h < kGroup; ++h) {
    const float total = HorizontalSum(normaliser[h]);
    for (int i = 0; i < kHeadVectors; ++i) Store(out + h * DH + i * kLanes, accumulator[h][i] / total);
  }
}

// --- the block's small steps ------------------------------------------------------------------
// RMSNorm of one row: out = in / sqrt(mean(in^2) + RMS_EPS) * weight.  in, weight, out (D)
void RmsNorm(const float* in, const float* weight, float* out) {
  float sumSquares = 0.0f;
#pragma omp simd reduction(+ : sumSquares)
  for (int c = 0; c < D; ++c) sumSquares += in[c] * in[c];
  const float inverseRms = 1.0f / std::sqrt(sumSquares / D + RMS_EPS);
#pragma omp simd
  for (int c = 0; c < D; ++c) out[c] = in[c] * inverseRms * weight[c];
}

// RoPE on `heads` heads of one row, in place: pair (f, f + ROPE_PAIRS) of each head turns by
// the angle whose cosine and sine are cosRow[f] and sinRow[f].
void ApplyRope(float* row, int heads, const float* cosRow, const float* sinRow) {
  for (int h = 0; h < heads; ++h) {
    float* head = row + h * DH;
#pragma omp simd
    for (int f = 0; f < ROPE_PAIRS; ++f) {
      const float a = head[f];
      const float b = head[f + ROPE_PAIRS];
      head[f] = a * cosRow[f] - b * sinRow[f];
      head[f + ROPE_PAIRS] = a * sinRow[f] + b * cosRow[f];
    }
  }
}

}  // namespace

void matmul(int T, int out, int in, const float* x, const float* W, float* y, Accumulate mode, int threads) {
#if MATMUL_VERSION == 1
  (void)threads;
  MatmulNaive(T, out, in, x, W, y, mode);
#elif MATMUL_VERSION == 2
  (void)threads;
  MatmulTiled(T, out, in, x, W, y, mode);
#elif MATMUL_VERSION == 3
  (void)threads;
  MatmulVectorised(T, out, in, x, W, y, mode);
#elif MATMUL_VERSION == 4
  MatmulThreaded(T, out, in, x, W, y, mode, threads);
#else
  MatmulPacked(T, out, in, x, W, y, mode, threads);
#endif
}

void matmul_swiglu(int T, int out, int in, const float* x, const float* Wgate, const float* Wup, float* hidden,
                   int threads) {
  if (T < kPackedMinRows) {
    if (threads <= 1) return SwiGluTiledColumns(T, out, in, x, Wgate, Wup, hidden, 0, out);
#pragma omp parallel num_threads(threads)
    {
      const Band band = ColumnBand(out, kSwiGluTileColumns, omp_get_thread_num(), omp_get_num_threads());
      SwiGluTiledColumns(T, out, in, x, Wgate, Wup, hidden, band.begin, band.end);
    }
    return;
  }
  // As MatmulPacked: x's rows packed once, then each thread's band of columns.
  float* packedRows = PackedRowsScratch(T, in, kSwiGluPanelRows);
  const int blocks = RowBlocks(T, kSwiGluPanelRows);
  if (threads <= 1) {
    for (int b = 0; b < blocks; ++b) PackRows<kSwiGluPanelRows>(T, in, x, b, packedRows);
    return SwiGluPackedColumns(T, out, in, packedRows, Wgate, Wup, hidden, 0, out);
  }
#pragma omp parallel num_threads(threads)
  {
#pragma omp for
    for (int b = 0; b < blocks; ++b) PackRows<kSwiGluPanelRows>(T, in, x, b, packedRows);
    const Band band = ColumnBand(out, kSwiGluPanelColumns, omp_get_thread_num(), omp_get_num_threads());
    SwiGluPackedColumns(T, out, in, packedRows, Wgate, Wup, hidden, band.begin, band.end);
  }
}

void causal_attention(int T, const float* qkv, float* attnOut, int threads) {
  // The keys transposed once for every token (TransposeKeys), in the calling thread's scratch,
  // which the team reads.
  static thread_local std::vector<float> transposed;
  const size_t perHead = TransposedKeysFloats(T);
  if (transposed.size() < perHead * HKV) transposed.resize(perHead * HKV);
  float* keysT = transposed.data();
#pragma omp parallel num_threads(threads)
  {
#pragma omp for
    for (int kvHead = 0; kvHead < HKV; ++kvHead) TransposeKeys(T, qkv, kvHead, keysT + kvHead * perHead);
    // One work item per (token, KV head): independent, so any thread may take any of them.
    // Later tokens have more keys; dynamic scheduling hands out small chunks so both threads
    // finish together.
#pragma omp for schedule(dynamic, 4)
    for (int item = 0; item < T * HKV; ++item) {
      const int t = item / HKV;
      const int kvHead = item % HKV;
      AttendGroupTiled(t, kvHead, qkv, keysT + kvHead * perHead,
                       attnOut + static_cast<size_t>(t) * D + kvHead * kGroup * DH);
    }
  }
}

void fused_block(int T, int threads, const float* w, const float* x,
                 const float* ropeCos, const float* ropeSin,
                 float* norm1, float* qkv, float* attnOut, float* residual1,
                 float* norm2, float* hidden, float* output) {
  if (T < 1) return;  // no tokens, nothing to write
  const size_t rows = static_cast<size_t>(T);

  // 1. norm1 (T x D).
  for (int t = 0; t < T; ++t) RmsNorm(x + t * D, w + OFF_RMS1, norm1 + t * D);

  // 2. qkv (T x QKV) = norm1 . [WQ|WK|WV]^T: the three projections as one matmul, since the
  //    three matrices are adjacent rows of w.
  matmul(T, QKV, D, norm1, w + OFF_WQ, qkv, Accumulate::kOverwrite, threads);

  // 3. RoPE on the q and k parts of each qkv row, never the v part.
  for (int t = 0; t < T; ++t) {
    float* row = qkv + t * QKV;
    ApplyRope(row, HQ, ropeCos + t * ROPE_PAIRS, ropeSin + t * ROPE_PAIRS);
    ApplyRope(row + D, HKV, ropeCos + t * ROPE_PAIRS, ropeSin + t * ROPE_PAIRS);
  }

  // 4. attnOut (T x D).
  causal_attention(T, qkv, attnOut, threads);

  // 5. residual1 = x + attnOut . WO^T: the stream copied, the projection accumulated into it.
  std::copy(x, x + rows * D, residual1);
  matmul(T, D, D, attnOut, w + OFF_WO, residual1, Accumulate::kAdd, threads);

  // 6. norm2 (T x D).
  for (int t = 0; t < T; ++t) RmsNorm(residual1 + t * D, w + OFF_RMS2, norm2 + t * D);

  // 7. hidden (T x F) = SiLU(norm2 . Wgate^T) * (norm2 . Wup^T), gate and up never stored.
  matmul_swiglu(T, F, D, norm2, w + OFF_WGATE, w + OFF_WUP, hidden, threads);

  // 8. output = residual1 + hidden . Wdown^T, accumulated the same way.
  std::copy(residual1, residual1 + rows * D, output);
  matmul(T, D, F, hidden, w + OFF_WDOWN, output, Accumulate::kAdd, threads);
}
