// The paged KV cache: where a row lives, and storing and reading rows in the three types.
//
// Paging (vLLM's PagedAttention, Kwon et al., 2023): the cache is one arena of fixed-size
// pages reserved up front, and a page table maps a position's page number to a physical page.
// The arena never grows while decoding, so a decode step allocates nothing, and a serving
// program could hand pages to whichever sequence needs them. The price is one indirection per
// row, paid here and nowhere else: everything else in the decoder asks RowAddress.
//
// Inside a page the rows go layer, then keys/values, then slot (contracts/stage05_decoder.h):
// one layer's keys for pageSize positions are consecutive, which is the order attention reads
// them in.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "decoder_parts.h"

namespace decoder_parts {

std::byte* RowAddress(const KvCache& cache, int layer, KvPart part, int position) {
  const CacheGeometry& g = cache.geometry;
  const size_t page = static_cast<size_t>(cache.pageTable[position / g.pageSize]);  // physical page
  const size_t slot = static_cast<size_t>(position % g.pageSize);
  const size_t row = ((page * g.layers + layer) * 2 + static_cast<size_t>(part)) * g.pageSize + slot;
  return cache.arena + row * CacheRowBytes(g);
}

namespace {

// int8: per group of g values one float scale s = amax / 127 and codes round(x / s), so the
// largest value of the group is ±127 and every other one is within s / 2 of code · s: the
// absmax scheme of llama.cpp's Q8_0 (quantize_row_q8_0_ref), with a float scale instead of a
// half. The group is the largest power of two dividing hd, at most 32, so a group never spans
// two heads and a head's values are read back from its own scales only.
// The row: G = KVW / g scales first (so they stay 4-byte aligned), then KVW codes, then zero
// bytes up to a multiple of 4, so the next row's scales are aligned too.
void StoreInt8(const float* row, int width, int group, std::byte* dst) {
  const int groups = width / group;
  std::byte* codes = dst + static_cast<size_t>(groups) * sizeof(float);
  for (int j = 0; j < groups; ++j) {
    const float* x = row + static_cast<size_t>(j) * group;
    float amax = 0.0f;
    for (int c = 0; c < group; ++c) amax = std::max(amax, std::fabs(x[c]));
    const float scale = amax / 127.0f;  // a float division, as the contract says
    std::memcpy(dst + static_cast<size_t>(j) * sizeof(float), &scale, sizeof(float));
    for (int c = 0; c < group; ++c) {
      // x / s, not x · (1 / s): the two round differently, and the contract names the division.
      // std::round takes halfway cases away from zero. An all-zero group (s = 0) is all zero
      // codes, never 0 / 0.
      const int8_t code = scale == 0.0f ? 0 : static_cast<int8_t>(std::round(x[c] / scale));
      codes[static_cast<size_t>(j) * group + c] = static_cast<std::byte>(code);
    }
  }
  const int padded = (width + 3) / 4 * 4;
  for (int b = width; b < padded; ++b) codes[b] = std::byte{0};
}

// `count` halves at src as floats: HalfToFloat (half.h) in operations that vectorise, since
// attention widens two cache rows per position it reads. A half's exponent and fraction bits,
// moved up 13 bits, are a float 2^112 times too small with the half's fraction; one multiply by
// 2^112 rescales it exactly, for normal and subnormal halves alike (both results are normal
// floats). Only the all-ones exponent (infinity, NaN) is picked out and kept all-ones; the sign
// goes back last. (Equal to HalfToFloat on all 65536 halves.)
void HalvesToFloats(const std::byte* src, int count, float* out) {
#pragma omp simd
  for (int c = 0; c < count; ++c) {
    uint16_t half;
    std::memcpy(&half, src + static_cast<size_t>(c) * sizeof(uint16_t), sizeof(uint16_t));
    const uint32_t magnitude = static_cast<uint32_t>(half & 0x7FFFu) << 13;
    const uint32_t finite = std::bit_cast<uint32_t>(std::bit_cast<float>(magnitude) * 0x1p112f);
    const uint32_t bits = (half & 0x7C00u) == 0x7C00u ? (magnitude | 0x7F800000u) : finite;
    out[c] = std::bit_cast<float>(bits | (static_cast<uint32_t>(half & 0x8000u) << 16));
  }
}

}  // namespace

void StoreRow(const KvCache& cache, int layer, KvPart part, int position, const float* row) {
  const CacheGeometry& g = cache.geometry;
  const int width = g.kvWidth();
  std::byte* dst = RowAddress(cache, layer, part, position);
  switch (g.type) {
    case CacheType::kF32:
      std::memcpy(dst, row, static_cast<size_t>(width) * sizeof(float));
      break;
    case CacheType::kF16:
      // Half the bytes, 11 significant bits: a relative error of at most 2^-11 per value.
      for (int c = 0; c < width; ++c) {
        const uint16_t half = FloatToHalf(row[c]);
        std::memcpy(dst + static_cast<size_t>(c) * sizeof(uint16_t), &half, sizeof(uint16_t));
      }
      break;
    case CacheType::kInt8:
      StoreInt8(row, width, Int8GroupSize(g.headDim), dst);
      break;
  }
}

void LoadHead(const KvCache& cache, int layer, KvPart part, int position, int head, float* out) {
  const CacheGeometry& g = cache.geometry;
  const int hd = g.headDim;
  const size_t first = static_cast<size_t>(head) * hd;  // the head's first value in the row
  const std::byte* src = RowAddress(cache, layer, part, position);
  // The arena is bytes: memcpy reads a float or a half out of it without assuming alignment or
  // breaking C++'s aliasing rules, and compiles to a plain load.
  switch (g.type) {
    case CacheType::kF32:
      std::memcpy(out, src + first * sizeof(float), static_cast<size_t>(hd) * sizeof(float));
      break;
    case CacheType::kF16:
      HalvesToFloats(src + first * sizeof(uint16_t), hd, out);
      break;
    case CacheType::kInt8: {
      const int group = Int8GroupSize(hd);
      const int groups = g.kvWidth() / group;
      const std::byte* codes = src + static_cast<size_t>(groups) * sizeof(float);
      for (int j = 0; j < hd / group; ++j) {
        const size_t groupIndex = first / group + j;  // groups never straddle heads: hd % g == 0
        float scale;
        std::memcpy(&scale, src + groupIndex * sizeof(float), sizeof(float));
        for (int c = 0; c < group; ++c) {
          const int8_t code = static_cast<int8_t>(codes[groupIndex * group + c]);
          out[j * group + c] = static_cast<float>(code) * scale;
        }
      }
      break;
    }
  }
}

}  // namespace decoder_parts
