// How a stage's leaderboard times a submission (check --leaderboard), the same way for every
// stage: by the runner's clock, from outside the child, on runs whose results are checked
// like a case's.
//
// Contract: TimeFromOutside runs `timed` (the submission's child on the leaderboard's case)
// `runs` times and `startup` (the solution's child on the same case cut to its smallest, so
// that no submission can lengthen it) as often, and returns the fastest timed run less the
// fastest start-up: the seconds the submission's own work took, at least a microsecond. Any
// timed run that does not pass returns nullopt: a wrong answer has no speed, and ranks at 0.
// The fastest of several runs is kept because a busy machine only ever slows a run down.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/expected.h"
#include "runner/report/report.h"

namespace wb {

template <typename TimedRun, typename StartupRun>
Expected<std::optional<double>> TimeFromOutside(int runs, const TimedRun& timed, const StartupRun& startup) {
  double fastest = INFINITY;
  for (int run = 0; run < runs; ++run) {
    Expected<CaseReport> ran = timed();
    if (!ran.ok()) return ran.error();
    if (ran->status != CaseStatus::kPass) return std::optional<double>{};
    fastest = std::min(fastest, ran->wallSeconds);
  }
  double fastestStartup = INFINITY;
  for (int run = 0; run < runs; ++run) {
    Expected<CaseReport> ran = startup();
    if (!ran.ok()) return ran.error();
    fastestStartup = std::min(fastestStartup, ran->wallSeconds);
  }
  return std::optional<double>{std::max(fastest - fastestStartup, 1e-6)};
}

}  // namespace wb
