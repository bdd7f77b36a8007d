#include "model/config/qk_permutation.h"

#include <algorithm>
#include <cassert>

namespace wb::model {

uint64_t GgufRowOfHfRow(uint64_t hfRow, uint64_t rows, uint64_t heads) {
  const uint64_t hd = rows / heads;
  const uint64_t head = hfRow / hd;
  const uint64_t within = hfRow % hd;
  const uint64_t half = within / (hd / 2);  // j: 0 for the first half, 1 for the second
  const uint64_t pair = within % (hd / 2);  // i
  return head * hd + 2 * pair + half;
}

uint64_t HfRowOfGgufRow(uint64_t ggufRow, uint64_t rows, uint64_t heads) {
  const uint64_t hd = rows / heads;
  const uint64_t head = ggufRow / hd;
  const uint64_t within = ggufRow % hd;
  return head * hd + (within % 2) * (hd / 2) + within / 2;
}

namespace {

std::vector<float> MoveRows(std::span<const float> from, uint64_t rows, uint64_t cols, uint64_t heads,
                            uint64_t (*destination)(uint64_t, uint64_t, uint64_t)) {
  assert(heads > 0 && rows % (2 * heads) == 0 && from.size() == rows * cols);
  std::vector<float> to(from.size());
  for (uint64_t r = 0; r < rows; ++r) {
    const uint64_t d = destination(r, rows, heads);
    std::copy_n(from.begin() + static_cast<std::ptrdiff_t>(r * cols), cols,
                to.begin() + static_cast<std::ptrdiff_t>(d * cols));
  }
  return to;
}

}  // namespace

std::vector<float> PermuteRowsToGguf(std::span<const float> hf, uint64_t rows, uint64_t cols, uint64_t heads) {
  return MoveRows(hf, rows, cols, heads, GgufRowOfHfRow);
}

std::vector<float> PermuteRowsToHf(std::span<const float> gguf, uint64_t rows, uint64_t cols, uint64_t heads) {
  return MoveRows(gguf, rows, cols, heads, HfRowOfGgufRow);
}

}  // namespace wb::model
