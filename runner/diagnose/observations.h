// What the runner can see in a failing buffer when no misconception matches: which
// tokens or heads are off, a common factor, flipped signs, where NaN starts. Facts
// only, no guess at the cause.
#pragma once

#include <span>
#include <string>

#include "../compare/compare.h"

namespace wb {

struct BufferGeometry {
  int rows = 0;
  int width = 0;
  int headDim = 0;  // 0 when the buffer is not split into heads
  std::string rowName = "token";
  int firstRow = 0;  // the number of the buffer's first row (stage 2: the call's first position)
};

std::string Observe(std::span<const float> got, std::span<const double> expected, const Tolerance& tolerance,
                    const BufferGeometry& geometry);

// "0-3, 5, 7-9"
std::string Ranges(const std::vector<int>& sortedValues);

}  // namespace wb
