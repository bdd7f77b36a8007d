// The workbook's one pseudo-random generator: SplitMix64.
//
// Contract: same seed, same sequence, on every machine and compiler. Everything the
// workbook generates (packed weights, case inputs, fixtures) draws from it, so goldens
// and packed buffers can be rebuilt and compared byte for byte.
//
// SplitMix64 is the generator of Steele, Lea and Flood, "Fast splittable pseudorandom
// number generators" (OOPSLA 2014): a 64-bit counter advanced by the golden-ratio
// increment 0x9E3779B97F4A7C15, then mixed by two xor-shift-multiply rounds. The
// constants below are the published ones.
#pragma once

#include <cstdint>

namespace wb {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // A value in [-1, 1) on a grid of 2^-23: the top 24 bits of Next(), scaled. Every
  // value is exactly representable as a float (24 significant bits at most), so the
  // float a student receives and the double the reference reads are the same number.
  double NextSigned() {
    const int64_t top24 = static_cast<int64_t>(Next() >> 40);  // 0 .. 2^24 - 1
    return static_cast<double>(top24 - (int64_t{1} << 23)) / static_cast<double>(int64_t{1} << 23);
  }

 private:
  uint64_t state_;
};

}  // namespace wb
