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
  const double rms = Rms(expected);
  const double atol = tolerance.absoluteOfRms * rms;
  const int heads = g.headDim > 0 ? g.width / g.headDim : 0;
  std::set<int> unwrittenRows, unwrittenHeads, derivedRows, nonFiniteRows, badRows, badHeads;
  std::vector<double> ratios;
  size_t unwritten = 0, derived = 0, wrong = 0, zeros = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const int row = g.firstRow + static_cast<int>(i / g.width);
    const int head = g.headDim > 0 ? static_cast<int>(i % g.width) / g.headDim : 0;
    const ElementState state = StateOf(got[i]);
    if (state == ElementState::kUnwritten) {
      ++unwritten;
      unwrittenRows.insert(row);
      unwrittenHeads.insert(head);
      continue;
    }
    if (state == ElementState::kFromUnwritten) {
      ++derived;
      derivedRows.insert(row);
      continue;
    }
    const double e = expected[i];
    const double v = got[i];
    if (!std::isfinite(v)) {
      nonFiniteRows.insert(row);
      continue;
    }
    if (std::fabs(v - e) <= atol + tolerance.relative * std::fabs(e)) continue;
    ++wrong;
    badRows.insert(row);
    badHeads.insert(head);
    if (v == 0) ++zeros;
    if (std::fabs(e) > 0.1 * rms) ratios.push_back(v / e);
  }
  auto list = [](const std::set<int>& s) { return Ranges(std::vector<int>(s.begin(), s.end())); };
  // "token 3" or "tokens 1-2, 5"
  auto named = [&list](const std::string& noun, const std::set<int>& s) {
    return fmt::format("{}{} {}", noun, s.size() == 1 ? "" : "s", list(s));
  };
  auto count = [](size_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); };
  std::vector<std::string> seen;
  if (unwritten > 0) {
    std::string where;
    if (heads > 0 && static_cast<int>(unwrittenHeads.size()) < heads) {
      where = fmt::format(" ({} of {})", named("head", unwrittenHeads),
                          static_cast<int>(unwrittenRows.size()) < g.rows ? named(g.rowName, unwrittenRows)
                                                                          : "every " + g.rowName);
    } else if (static_cast<int>(unwrittenRows.size()) < g.rows) {
      where = fmt::format(" ({})", named(g.rowName, unwrittenRows));
    }
    seen.push_back(fmt::format("{} never written{}", count(unwritten, "element"), where));
  }
  if (derived > 0) {
    seen.push_back(fmt::format("{} NaN computed from elements never written ({}): a buffer read before it was "
                               "set, such as an accumulator never zeroed",
                               count(derived, "element"), named(g.rowName, derivedRows)));
  }
  if (!nonFiniteRows.empty()) {
    const int first = *nonFiniteRows.begin();
    const bool allLater = static_cast<int>(nonFiniteRows.size()) == g.firstRow + g.rows - first;
    seen.push_back(allLater ? fmt::format("NaN or inf from {} {} on", g.rowName, first)
                            : fmt::format("NaN or inf at {}", named(g.rowName, nonFiniteRows)));
  }
  if (wrong > 0) {
    if (zeros == wrong) seen.push_back("every wrong element is 0");
    if (static_cast<int>(badRows.size()) < g.rows) {
      seen.push_back(fmt::format("only {} {} off; the other {}s match", named(g.rowName, badRows),
                                 badRows.size() == 1 ? "is" : "are", g.rowName));
    }
    if (heads > 0 && static_cast<int>(badHeads.size()) < heads) {
      seen.push_back(fmt::format("only {} {} off", named("head", badHeads), badHeads.size() == 1 ? "is" : "are"));
    }
    if (ratios.size() >= 4 && zeros < wrong) {
      std::vector<double> sorted = ratios;
      std::sort(sorted.begin(), sorted.end());
      const double median = sorted[sorted.size() / 2];
      const bool common = std::all_of(ratios.begin(), ratios.end(), [median](double r) {
        return std::fabs(r - median) <= 1e-2 * std::fabs(median);
      });
      if (common && std::fabs(median + 1) < 1e-2) {
        seen.push_back("the signs are flipped");
      } else if (common) {
        seen.push_back(fmt::format("every wrong element is {:.4g} times the expected value", median));
      }
    }
  }
  std::string out;
  for (const auto& s : seen) out += (out.empty() ? "" : "; ") + s;
  return out;
}

}  // namespace wb
