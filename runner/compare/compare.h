// Element-wise comparison of a student's float buffer with the float64 reference.
//
// Contract: element i passes when |got - expected| <= atol + rtol * |expected|, where
// atol = absoluteOfRms * rms(expected): the absolute term follows the buffer's own scale,
// so a case with tiny inputs is checked as strictly as one with unit inputs. An element
// that is NaN, infinite or never written fails unless the expected value is the same
// non-finite value. Poison bit patterns (shared_layout.h) are counted apart from NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace wb {

struct Tolerance {
  double absoluteOfRms = 0;  // atol as a fraction of the expected buffer's RMS
  double relative = 0;       // rtol
};

enum class ElementState { kWritten, kUnwritten, kFromUnwritten };
ElementState StateOf(float value);

struct Comparison {
  size_t total = 0;
  size_t failing = 0;        // outside tolerance, non-finite or unwritten
  size_t nanCount = 0;       // NaN that is not a poison pattern
  size_t infCount = 0;
  size_t unwritten = 0;      // still the poison word
  size_t fromUnwritten = 0;  // the quieted poison: arithmetic on an unwritten element
  double atol = 0;
  double rtol = 0;
  double rms = 0;            // of the expected buffer
  double maxAbsError = 0;    // over elements whose got and expected are both finite
  bool hasWorst = false;
  size_t worstIndex = 0;     // the first unwritten/non-finite element, else the largest excess
  double worstExpected = 0;
  std::vector<size_t> failingSample;  // the first few failing indices, in order

  bool pass() const { return failing == 0; }
  bool allUnwritten() const { return total > 0 && unwritten == total; }
};

// `slack`, when not empty (one per element), is added to each element's allowance: what the
// element may move by for a reason the tolerance does not cover (stage 5: a quantized code
// at a rounding boundary, which float and double may round either way).
Comparison Compare(std::span<const float> got, std::span<const double> expected, const Tolerance& tolerance,
                   size_t sampleSize = 5, std::span<const double> slack = {});

// True when every element agrees within the tolerance. Non-finite values agree with the
// same non-finite value; where `expected` is NaN (undefined under a mistaken model, e.g. a
// query that sees no key) any non-finite or zero value agrees.
bool Matches(std::span<const float> got, std::span<const double> expected, const Tolerance& tolerance);

double Rms(std::span<const double> values);

}  // namespace wb
