// The stage-5 KV cache's row codec (contracts/stage05_decoder.h), in trusted code: what a
// row of keys or values becomes once stored and read back.
//
// Contract: a row is kvWidth floats, stored as
//   kF32   kvWidth floats (native byte order), read back exactly;
//   kF16   kvWidth halves, each FloatToHalf(x) of contracts/half.h (round to nearest, ties
//          to even), read back by HalfToFloat;
//   kInt8  G = ceil(kvWidth / group) float scales, then kvWidth int8 codes, then zero bytes
//          up to a multiple of 4. Group j covers values [j·group, (j + 1)·group) (the last
//          one shorter when group does not divide kvWidth): s_j = amax_j / 127 (a float
//          division), code = std::round(x / s_j) (a float division, halfway cases away from
//          zero, clamped to [-127, 127]), and 0 for every value of a group whose s_j is 0;
//          a code reads back as code · s_j (a float product).
// The contract's group is Int8Group(headDim), so no group straddles two heads; `group` is
// a parameter so that a mistaken group (32 when headDim is 16, say) can be emulated.
// RoundTripRows applies Encode then Decode to every row of a double buffer (each value
// first rounded to float): the values attention reads from such a cache.
#pragma once

#include <cstddef>
#include <span>

namespace ref {

enum class CacheRowType { kF32, kF16, kInt8 };

// The largest power of two dividing headDim, at most 32 (the contract's Int8GroupSize).
int Int8Group(int headDim);

// Bytes of one stored row of kvWidth values (group is read for kInt8 only).
size_t CacheRowBytes(CacheRowType type, int kvWidth, int group);

// out (CacheRowBytes(type, row.size(), group) bytes) = the stored form of row.
void EncodeCacheRow(CacheRowType type, int group, std::span<const float> row, std::span<std::byte> out);

// row (kvWidth floats) = the values the stored row `in` reads back as.
void DecodeCacheRow(CacheRowType type, int group, std::span<const std::byte> in, std::span<float> row);

// out = every row of `rows` (rows.size() / kvWidth rows of kvWidth) rounded to float,
// encoded and decoded, widened back to double. out may be rows itself.
void RoundTripRows(CacheRowType type, int group, int kvWidth, std::span<const double> rows, std::span<double> out);

}  // namespace ref
