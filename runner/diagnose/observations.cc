#include "observations.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace wb {

std::string Ranges(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j > i ? fmt::format("{}-{}", v[i], v[j]) : fmt::format("{}", v[i]);
    i = j + 1;
  }
  return out;
}

std::string Observe(std::span<const float> got, std::span<const double> expected, const Tolerance& tolerance,
                    const BufferGeometry& g) {
  const double atol = tolerance.absoluteOfRms * Rms(expected);
  std::set<int> badRows;
  std::set<int> badHeads;
  std::set<int> nonFiniteRows;
  std::vector<double> ratios;
  size_t failing = 0;
  size_t zeros = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double e = expected[i];
    const double v = got[i];
    const bool finite = std::isfinite(v) && StateOf(got[i]) == ElementState::kWritten;
    const bool fails = !finite || std::fabs(v - e) > atol + tolerance.relative * std::fabs(e);
    if (!fails) continue;
    ++failing;
    const int row = static_cast<int>(i / g.width);
    badRows.insert(row);
    if (g.headDim > 0) badHeads.insert(static_cast<int>(i % g.width) / g.headDim);
    if (!finite) {
      nonFiniteRows.insert(row);
      continue;
    }
    if (v == 0) ++zeros;
    if (std::fabs(e) > 0.1 * (atol / tolerance.absoluteOfRms)) ratios.push_back(v / e);
  }
  if (failing == 0) return "";
  std::vector<std::string> seen;
  if (!nonFiniteRows.empty()) {
    const int first = *nonFiniteRows.begin();
    const bool allLater = static_cast<int>(nonFiniteRows.size()) == g.rows - first;
    seen.push_back(allLater ? fmt::format("NaN or inf from {} {} on", g.rowName, first)
                            : fmt::format("NaN or inf at {}s {}", g.rowName,
                                          Ranges(std::vector<int>(nonFiniteRows.begin(), nonFiniteRows.end()))));
  }
  if (zeros == failing) seen.push_back("every wrong element is 0");
  if (static_cast<int>(badRows.size()) < g.rows) {
    seen.push_back(fmt::format("only {}s {} are off; the other {}s match", g.rowName,
                               Ranges(std::vector<int>(badRows.begin(), badRows.end())), g.rowName));
  }
  if (g.headDim > 0 && static_cast<int>(badHeads.size()) < g.width / g.headDim) {
    seen.push_back(fmt::format("only heads {} are off",
                               Ranges(std::vector<int>(badHeads.begin(), badHeads.end()))));
  }
  if (ratios.size() >= 4 && zeros < failing) {
    std::vector<double> sorted = ratios;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    const bool common = std::all_of(ratios.begin(), ratios.end(),
                                    [median](double r) { return std::fabs(r - median) <= 1e-2 * std::fabs(median); });
    if (common && std::fabs(median + 1) < 1e-2) {
      seen.push_back("the signs are flipped");
    } else if (common) {
      seen.push_back(fmt::format("every wrong element is {:.4g} times the expected value", median));
    }
  }
  std::string out;
  for (const auto& s : seen) out += (out.empty() ? "" : "; ") + s;
  return out;
}

}  // namespace wb
