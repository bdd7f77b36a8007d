// The paged KV cache: where a row lives, and storing and reading rows in the three types.
//
// The layout is the contract's (contracts/stage05_decoder.h, "The KV cache"): one arena of
// pages reserved before the first call, a page table from a position's page number to a
// physical page, and inside the arena rows of keys or values, one position of one layer each,
// stored as f32, f16 or int8. Every other part of the decoder reaches the cache through the
// three functions below.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "decoder_parts.h"

namespace decoder_parts {

std::byte* RowAddress(const KvCache& cache, int layer, KvPart part, int position) {
  // TODO 6a: the address of the first byte of the row that holds `part` (keys 0, values 1)
  // of `layer` at `position`: the contract's row index for physical page
  // cache.pageTable[position / pageSize] and slot position % pageSize, times
  // CacheRowBytes(cache.geometry), from cache.arena. Consecutive positions need not sit on
  // neighbouring pages: the page table is the only way from a position to its page.
  return nullptr;
}

void StoreRow(const KvCache& cache, int layer, KvPart part, int position, const float* row) {
  // TODO 6b: writes the row at RowAddress(cache, layer, part, position): its
  // CacheRowBytes(cache.geometry) bytes and no others, from `row` (kvWidth floats), by the
  // contract's rules for cache.geometry.type:
  //   kF32   the kvWidth floats;
  //   kF16   FloatToHalf of each value (contracts/half.h);
  //   kInt8  the kvWidth / g float scales (g = Int8GroupSize(headDim)), then the kvWidth int8
  //          codes, then zero bytes up to a multiple of 4, with the scale and the codes of each
  //          group exactly as the contract defines them (both divisions in float, std::round,
  //          zero codes for a zero scale).
  // The runner compares every stored row byte for byte with those rules applied to your own
  // k and v, after every call, and checks that no other row changed.
}

void LoadHead(const KvCache& cache, int layer, KvPart part, int position, int head, float* out) {
  // TODO 7a: out (headDim floats) = values [head * headDim, (head + 1) * headDim) of the row
  // at RowAddress(cache, layer, part, position), as the cache holds them: the floats of an
  // f32 row, HalfToFloat of an f16 row's halves, code times its group's scale for int8.
}

}  // namespace decoder_parts
