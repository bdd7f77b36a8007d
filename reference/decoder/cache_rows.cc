#include "reference/decoder/cache_rows.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "contracts/half.h"

namespace ref {

namespace {

size_t Groups(int kvWidth, int group) { return (static_cast<size_t>(kvWidth) + group - 1) / group; }

}  // namespace

int Int8Group(int headDim) {
  int group = 1;
  while (group < 32 && headDim % (group * 2) == 0) group *= 2;
  return group;
}

size_t CacheRowBytes(CacheRowType type, int kvWidth, int group) {
  const size_t width = static_cast<size_t>(kvWidth);
  switch (type) {
    case CacheRowType::kF32: return width * 4;
    case CacheRowType::kF16: return width * 2;
    case CacheRowType::kInt8: return Groups(kvWidth, group) * 4 + (width + 3) / 4 * 4;
  }
  return 0;
}

void EncodeCacheRow(CacheRowType type, int group, std::span<const float> row, std::span<std::byte> out) {
  const int width = static_cast<int>(row.size());
  assert(out.size() == CacheRowBytes(type, width, group));
  switch (type) {
    case CacheRowType::kF32:
      std::memcpy(out.data(), row.data(), row.size_bytes());
      return;
    case CacheRowType::kF16:
      for (int i = 0; i < width; ++i) {
        const uint16_t h = FloatToHalf(row[i]);
        std::memcpy(out.data() + 2 * static_cast<size_t>(i), &h, 2);
      }
      return;
    case CacheRowType::kInt8: {
      assert(group >= 1);
      std::fill(out.begin(), out.end(), std::byte{0});
      const size_t groups = Groups(width, group);
      std::byte* codes = out.data() + groups * 4;
      for (size_t j = 0; j < groups; ++j) {
        const int begin = static_cast<int>(j) * group;
        const int end = std::min(width, begin + group);
        float amax = 0.0f;
        for (int i = begin; i < end; ++i) amax = std::max(amax, std::fabs(row[i]));
        const float scale = amax / 127.0f;
        std::memcpy(out.data() + j * 4, &scale, 4);
        for (int i = begin; i < end; ++i) {
          float code = 0.0f;
          if (scale != 0.0f) code = std::clamp(std::round(row[i] / scale), -127.0f, 127.0f);
          codes[i] = static_cast<std::byte>(static_cast<int8_t>(code));
        }
      }
      return;
    }
  }
}

void DecodeCacheRow(CacheRowType type, int group, std::span<const std::byte> in, std::span<float> row) {
  const int width = static_cast<int>(row.size());
  assert(in.size() == CacheRowBytes(type, width, group));
  switch (type) {
    case CacheRowType::kF32:
      std::memcpy(row.data(), in.data(), row.size_bytes());
      return;
    case CacheRowType::kF16:
      for (int i = 0; i < width; ++i) {
        uint16_t h;
        std::memcpy(&h, in.data() + 2 * static_cast<size_t>(i), 2);
        row[i] = HalfToFloat(h);
      }
      return;
    case CacheRowType::kInt8: {
      const size_t groups = Groups(width, group);
      const std::byte* codes = in.data() + groups * 4;
      for (int i = 0; i < width; ++i) {
        float scale;
        std::memcpy(&scale, in.data() + static_cast<size_t>(i / group) * 4, 4);
        row[i] = static_cast<float>(static_cast<int8_t>(codes[i])) * scale;
      }
      return;
    }
  }
}

void RoundTripRows(CacheRowType type, int group, int kvWidth, std::span<const double> rows, std::span<double> out) {
  assert(rows.size() % kvWidth == 0 && out.size() == rows.size());
  std::vector<float> row(kvWidth);
  std::vector<std::byte> bytes(CacheRowBytes(type, kvWidth, group));
  for (size_t r = 0; r < rows.size() / kvWidth; ++r) {
    for (int i = 0; i < kvWidth; ++i) row[i] = static_cast<float>(rows[r * kvWidth + i]);
    EncodeCacheRow(type, group, row, bytes);
    DecodeCacheRow(type, group, bytes, row);
    for (int i = 0; i < kvWidth; ++i) out[r * kvWidth + i] = row[i];
  }
}

}  // namespace ref
