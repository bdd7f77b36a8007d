// What a bench's timed calls compute on: inputs made afresh for every call, from a seed the
// runner writes into the region only once the child has stopped before its timed calls
// (shm::Header::timedSeed, Region::StartTimedCalls). Both sides compile this header: the
// bench child fills call c's inputs before the call, and the runner makes any element of them
// again to check what that call wrote (runner/stages/bench_engine.h).
//
// Why: with the same inputs on every call, code could keep what its first call computed and
// hand a copy back on each timed call, and its figure would be a memcpy's; and with inputs
// known before the timed calls, it could compute them all in the untimed call. Here no two
// calls share inputs, and none is known before the clock starts.
//
// Contract: TimedInputs(seed, stream, call) names one input of one call (`stream` tells a
// call's inputs apart); Word(i) is its element i's 64 random bits, Value(i) that element as a
// float in [-1, 1) on a grid of 2^-23 (exact, so both sides see the same float). Counter-based
// (SplitMix64's mixing function: Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014), so any element can be made alone, in any order.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wb {

class TimedInputs {
 public:
  TimedInputs(uint64_t seed, uint32_t stream, uint32_t call)
      : key_(Mix(seed ^ Mix((uint64_t{stream} << 32) | call))) {}

  uint64_t Word(uint64_t index) const { return Mix(key_ + index * kGolden); }
  float Value(uint64_t index) const {
    return static_cast<float>(static_cast<int32_t>(Word(index) >> 40) - (1 << 23)) * 0x1p-23f;
  }
  // Elements first .. first + count - 1, into out.
  void Fill(float* out, size_t count, size_t first = 0) const {
    for (size_t i = 0; i < count; ++i) out[i] = Value(first + i);
  }

 private:
  static constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
  static uint64_t Mix(uint64_t z) {
    z += kGolden;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t key_;
};

}  // namespace wb
