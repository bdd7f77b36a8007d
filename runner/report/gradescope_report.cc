// Gradescope's autograder results.json: one test per case and checkpoint, scored with the
// case file's points per checkpoint. A case that crashed or hung scores the checkpoints it
// got right before it stopped. Hidden cases' outputs carry only pass/fail and error size.
// Format: https://gradescope-autograders.readthedocs.io/en/latest/specs/ (results.json).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "renderers.h"

namespace wb {

std::string RenderGradescope(const RunReport& r) {
  using nlohmann::json;
  json tests = json::array();
  double score = 0;
  std::string summary;
  if (r.status == RunStatus::kCompileError) {
    summary = fmt::format("{} does not compile; no checkpoint could be checked.", r.source);
    tests.push_back({{"name", fmt::format("stage {}: compile {}", r.stage, r.source)},
                     {"score", 0.0},
                     {"max_score", 0.0},
                     {"status", "failed"},
                     {"output", r.compilerOutput},
                     {"visibility", "visible"}});
  }
  for (const CaseReport& c : r.cases) {
    for (const auto& cp : c.checkpoints) {
      const bool passed = cp.status == CheckStatus::kPass;
      std::string output;
      if (!passed) {
        output = c.hidden ? fmt::format("max error about {:.0e}", cp.maxAbsError)
                          : fmt::format("{} of {} elements off; max error {:.3e}", cp.failing, cp.total, cp.maxAbsError);
        if (!c.hidden && cp.worst) {
          output += fmt::format("\nworst: {}: expected {:.6g}, got {}", cp.worst->where, cp.worst->expected,
                                cp.worst->gotNote.empty() ? fmt::format("{:.6g}", cp.worst->got) : cp.worst->gotNote);
        }
        if (cp.misconception) output += "\n" + cp.misconception->sentence + "\nRead: " + cp.misconception->lesson;
        if (!c.hidden && !cp.observation.empty()) output += "\n" + cp.observation;
        if (!c.headline.empty()) output = c.headline + "\n" + output;
      }
      score += cp.points;
      tests.push_back({{"name", fmt::format("{}: {}", c.name, cp.name)},
                       {"score", cp.points},
                       {"max_score", cp.maxPoints},
                       {"status", passed ? "passed" : "failed"},
                       {"output", output},
                       {"visibility", "visible"}});
    }
  }
  if (summary.empty()) {
    size_t passedCases = 0;
    for (const auto& c : r.cases) passedCases += c.status == CaseStatus::kPass ? 1 : 0;
    summary = fmt::format("Stage {}: {} of {} cases pass every checkpoint.", r.stage, passedCases, r.cases.size());
  }
  json root = {{"score", score}, {"output", summary}, {"visibility", "visible"},
               {"stdout_visibility", "hidden"}, {"tests", tests}};
  // The leaderboard, when the instructor asked for it (check --leaderboard).
  for (const LeaderboardEntry& e : r.leaderboard) {
    json entry = {{"name", e.name}, {"value", e.value}};
    if (e.ascending) entry["order"] = "asc";
    root["leaderboard"].push_back(entry);
  }
  return root.dump(2) + "\n";
}

}  // namespace wb
