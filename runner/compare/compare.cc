#include "compare.h"

#include <cmath>
#include <cstring>

#include "../isolation/shared_layout.h"

namespace wb {

ElementState StateOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (bits == shm::kPoisonWord) return ElementState::kUnwritten;
  if ((bits & 0x7FFFFFFFu) == shm::kPoisonQuietedWord) return ElementState::kFromUnwritten;
  return ElementState::kWritten;
}

double Rms(std::span<const double> values) {
  double sum = 0;
  size_t n = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    sum += v * v;
    ++n;
  }
  return n == 0 ? 0.0 : std::sqrt(sum / static_cast<double>(n));
}

namespace {

bool SameNonFinite(double got, double expected) {
  if (std::isnan(expected)) return !std::isfinite(got) || got == 0;
  if (std::isinf(expected)) return std::isinf(got) && std::signbit(got) == std::signbit(expected);
  return false;
}

}  // namespace

Comparison Compare(std::span<const float> got, std::span<const double> expected, const Tolerance& tolerance,
                   size_t sampleSize, std::span<const double> slack) {
  Comparison c;
  c.total = expected.size();
  c.rms = Rms(expected);
  c.atol = tolerance.absoluteOfRms * c.rms;
  c.rtol = tolerance.relative;
  double worstExcess = -1;
  bool worstIsBroken = false;  // the worst so far is unwritten or non-finite
  for (size_t i = 0; i < expected.size(); ++i) {
    const double e = expected[i];
    const ElementState state = StateOf(got[i]);
    const double g = got[i];
    bool fails = false;
    bool broken = false;
    if (state == ElementState::kUnwritten) {
      ++c.unwritten;
      fails = broken = true;
    } else if (state == ElementState::kFromUnwritten) {
      ++c.fromUnwritten;
      fails = broken = true;
    } else if (!std::isfinite(g) || !std::isfinite(e)) {
      if (std::isnan(g)) ++c.nanCount;
      if (std::isinf(g)) ++c.infCount;
      fails = !SameNonFinite(g, e);
      broken = fails;
    } else {
      const double error = std::fabs(g - e);
      if (error > c.maxAbsError) c.maxAbsError = error;
      const double allowed = c.atol + c.rtol * std::fabs(e) + (slack.empty() ? 0.0 : slack[i]);
      fails = error > allowed;
      if (fails && !worstIsBroken) {
        const double excess = error / (allowed > 0 ? allowed : 1e-300);
        if (excess > worstExcess) {
          worstExcess = excess;
          c.hasWorst = true;
          c.worstIndex = i;
          c.worstExpected = e;
        }
      }
    }
    if (!fails) continue;
    ++c.failing;
    if (c.failingSample.size() < sampleSize) c.failingSample.push_back(i);
    if (broken && !worstIsBroken) {
      worstIsBroken = true;
      c.hasWorst = true;
      c.worstIndex = i;
      c.worstExpected = e;
    }
  }
  return c;
}

bool Matches(std::span<const float> got, std::span<const double> expected, const Tolerance& tolerance) {
  const double atol = tolerance.absoluteOfRms * Rms(expected);
  for (size_t i = 0; i < expected.size(); ++i) {
    if (StateOf(got[i]) != ElementState::kWritten) return false;
    const double g = got[i];
    const double e = expected[i];
    if (!std::isfinite(g) || !std::isfinite(e)) {
      if (!SameNonFinite(g, e)) return false;
      continue;
    }
    if (std::fabs(g - e) > atol + tolerance.relative * std::fabs(e)) return false;
  }
  return true;
}

}  // namespace wb
