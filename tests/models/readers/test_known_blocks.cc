// MakeKnownRow (reference/fixtures/known_blocks.h): for every tensor type, the row's bytes
// dequantise to exactly its values, and the values exercise the whole format, so that a
// packing mistake on either side cannot hide behind codes or scales that happen not to use
// the bits concerned.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "model/files/tensor_types.h"
#include "reference/fixtures/known_blocks.h"

using ref::fixtures::KnownRow;
using ref::fixtures::MakeKnownRow;
using wb::TensorType;

namespace {

// How the values of a quantized type are grouped, from the formats (ggml's src/ggml-common.h):
// a group is the run of values that shares one scale (and min), levels the number of codes.
struct Grouping {
  int groupSize;
  int levels;
};
Grouping GroupingOf(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0: return {32, 256};
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kIQ4_NL: return {32, 16};
    case TensorType::kQ5_0:
    case TensorType::kQ5_1: return {32, 32};
    case TensorType::kQ2_K: return {16, 4};
    case TensorType::kQ3_K: return {16, 8};
    case TensorType::kQ4_K:
    case TensorType::kIQ4_XS: return {32, 16};
    case TensorType::kQ5_K: return {32, 32};
    case TensorType::kQ6_K: return {16, 64};
    default: return {1, 0};  // F32, F16, BF16: no codes
  }
}

constexpr double kMagnitudes[] = {0.05, 1.0};
constexpr uint32_t kSeeds[] = {1, 2, 3, 7, 1000, 4000000000u};

// Calls check(type, elements, row) for the known row of every type, magnitude and seed, with
// `blocks` blocks (quantized types) or 32 * blocks values (plain ones).
template <typename Check>
void ForEveryKnownRow(size_t blocks, Check check) {
  for (TensorType type : wb::kAllTensorTypes) {
    const size_t elements = blocks * wb::BlockElements(type) * (wb::IsQuantized(type) ? 1 : 32);
    for (double magnitude : kMagnitudes) {
      for (uint32_t seed : kSeeds) {
        INFO(wb::TensorTypeName(type), " seed ", seed, " magnitude ", magnitude);
        check(type, elements, magnitude, MakeKnownRow(type, elements, seed, magnitude));
      }
    }
  }
}

}  // namespace

TEST_CASE("every type's known row dequantises to exactly its values") {
  ForEveryKnownRow(3, [](TensorType type, size_t elements, double, const KnownRow& row) {
    REQUIRE(row.values.size() == elements);
    REQUIRE(row.bytes.size() == *wb::RowBytes(type, elements));
    std::vector<float> out(elements);
    REQUIRE(wb::DequantizeRow(type, row.bytes, out).ok());
    size_t wrong = 0;
    for (size_t i = 0; i < elements; ++i) {
      if (static_cast<double>(out[i]) != row.values[i]) {
        if (wrong == 0) MESSAGE("first difference at element ", i, ": ", out[i], " vs ", row.values[i]);
        ++wrong;
      }
    }
    CHECK(wrong == 0);
  });
}

TEST_CASE("known values are within ±2·magnitude, not all zero, and reach the magnitude") {
  ForEveryKnownRow(2, [](TensorType, size_t, double magnitude, const KnownRow& row) {
    double largest = 0;
    for (double v : row.values) largest = std::max(largest, std::fabs(v));
    CHECK(largest <= 2 * magnitude);
    CHECK(largest >= magnitude / 4);
  });
}

TEST_CASE("every group that shares a scale uses every code, or distinct codes with both extremes") {
  ForEveryKnownRow(2, [](TensorType type, size_t elements, double, const KnownRow& row) {
    const Grouping grouping = GroupingOf(type);
    if (grouping.levels == 0) return;
    for (size_t first = 0; first < elements; first += static_cast<size_t>(grouping.groupSize)) {
      INFO("group at ", first);
      const auto begin = row.values.begin() + static_cast<std::ptrdiff_t>(first);
      // Within a group the value is an injective function of the code (a nonzero scale times
      // the code, plus a constant; or a table of distinct values), so distinct values count
      // distinct codes.
      const std::set<double> distinct(begin, begin + grouping.groupSize);
      CHECK(distinct.size() == static_cast<size_t>(std::min(grouping.groupSize, grouping.levels)));
      if (grouping.groupSize < grouping.levels) {
        // Q8_0 (q*d, q in -128..127) and Q6_K (d*sc*(q - 32), q - 32 in -32..31): the group's
        // extremes are the two end codes exactly when max/min is -(L/2-1)/(L/2) or its inverse
        // (a negative scale swaps the ends).
        const double ratio = *distinct.rbegin() / *distinct.begin();
        const double half = grouping.levels / 2;
        CHECK((ratio == -(half - 1) / half || ratio == -half / (half - 1)));
      }
    }
  });
}

TEST_CASE("plain types hold values exact in that type, mostly distinct") {
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kBF16}) {
    const KnownRow row = MakeKnownRow(type, 200, 5, 1.0);
    INFO(wb::TensorTypeName(type));
    const std::set<double> distinct(row.values.begin(), row.values.end());
    CHECK(distinct.size() > 150);
    for (double v : row.values) {
      const auto f = static_cast<float>(v);
      CHECK(static_cast<double>(f) == v);
      if (type == TensorType::kF16) CHECK(static_cast<double>(wb::HalfToFloat(wb::FloatToHalf(f))) == v);
      if (type == TensorType::kBF16) CHECK(static_cast<double>(wb::Bf16ToFloat(wb::FloatToBf16(f))) == v);
    }
  }
}

TEST_CASE("a known row is a function of its arguments") {
  for (TensorType type : wb::kAllTensorTypes) {
    INFO(wb::TensorTypeName(type));
    const size_t elements = wb::BlockElements(type) * (wb::IsQuantized(type) ? 1 : 32);
    const KnownRow a = MakeKnownRow(type, elements, 11, 0.05);
    const KnownRow b = MakeKnownRow(type, elements, 11, 0.05);
    const KnownRow c = MakeKnownRow(type, elements, 12, 0.05);
    CHECK(a.bytes == b.bytes);
    CHECK(a.values == b.values);
    CHECK(a.bytes != c.bytes);
  }
}
