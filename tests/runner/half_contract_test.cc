// The contract's own half conversions (contracts/stage04_quant.h, inline for student code)
// agree bit for bit with the model library's (model/files/half_float.cc), which the runner's
// reference quantizer uses: every half widened, and narrowed from every float near a half's
// boundaries, the subnormal and overflow edges, and a sweep of random floats.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "common/splitmix64.h"
#include "model/files/tensor_types.h"
#include "stage04_quant.h"

namespace {

bool SameBits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

}  // namespace

TEST_CASE("HalfToFloat widens every half as the model library does") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float contract = ::HalfToFloat(static_cast<uint16_t>(h));
    const float library = wb::HalfToFloat(static_cast<uint16_t>(h));
    CAPTURE(h);
    if (std::isnan(library)) {
      CHECK(std::isnan(contract));
    } else {
      CHECK(SameBits(contract, library));
    }
  }
}

TEST_CASE("FloatToHalf rounds as the model library does, at every half's edges and at random") {
  size_t checked = 0;
  auto agree = [&checked](float f) {
    CAPTURE(f);
    const uint16_t contract = ::FloatToHalf(f);
    const uint16_t library = wb::FloatToHalf(f);
    if (std::isnan(f)) {
      CHECK((contract & 0x7C00u) == 0x7C00u);
      CHECK((contract & 0x3FFu) != 0);
    } else {
      CHECK(contract == library);
    }
    ++checked;
  };
  for (uint32_t h = 0; h < 0x7C00u; ++h) {
    // The half itself, the midpoints to its neighbours (ties), and a float either side.
    for (uint32_t sign : {0u, 0x8000u}) {
      const float value = wb::HalfToFloat(static_cast<uint16_t>(h | sign));
      const float next = wb::HalfToFloat(static_cast<uint16_t>((h + 1) | sign));
      const float middle = (value + next) / 2;
      for (float f : {value, middle, std::nextafter(middle, 0.0f), std::nextafter(middle, 2 * middle)}) agree(f);
    }
  }
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e30f, 1e-30f, 0x1p-25f, 0x1p-24f, 1e-45f, INFINITY, -INFINITY,
                  NAN}) {
    agree(f);
    agree(-f);
  }
  wb::SplitMix64 rng(20261202);
  for (int i = 0; i < 200000; ++i) agree(std::bit_cast<float>(static_cast<uint32_t>(rng.Next())));
  CHECK(checked > 400000);
}
