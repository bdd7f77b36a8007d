// Gradescope's autograder results.json: one test per case, worth the case file's points per
// checkpoint times its checkpoints, scored as the checkpoints scored (a case that crashed,
// hung, exited early or printed past the limit scores 0; a guard scores only once the case's
// first checkpoint passes), its output the reason and the first failure. Hidden cases'
// outputs carry only pass/fail, "never written" and the error's power of ten.
// Format: https://gradescope-autograders.readthedocs.io/en/latest/specs/ (results.json).
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "renderers.h"

namespace wb {

namespace {

// What a checkpoint's error was, in the words a hidden case may carry: never written, or the
// error's power of ten.
std::string ErrorWords(const CheckpointReport& cp, bool hidden) {
  if (cp.total > 0 && cp.unwritten == cp.total) return "never written";
  if (hidden) {
    return fmt::format("max error about {:.0e}{}", cp.maxAbsError, cp.unwritten > 0 ? "; some elements never written" : "");
  }
  std::string text = fmt::format("{} of {} elements off; max error {:.3e}", cp.failing, cp.total, cp.maxAbsError);
  if (cp.unwritten > 0) text += fmt::format(" ({} never written)", cp.unwritten);
  return text;
}

// The output of a case's test: why it scored what it did, then its first failure in full.
std::string CaseOutput(const CaseReport& c) {
  std::vector<std::string> lines;
  if (!c.headline.empty()) lines.push_back(c.headline);
  if (!c.zeroedBecause.empty()) lines.push_back(fmt::format("{}.", c.zeroedBecause));
  for (const auto& cp : c.checkpoints) {
    if (cp.status != CheckStatus::kPass) {
      std::string line = fmt::format("First failure: {}: {}", cp.name, ErrorWords(cp, c.hidden));
      if (!c.hidden && cp.worst) {
        line += fmt::format("\nworst: {}: expected {:.6g}, got {}", cp.worst->where, cp.worst->expected,
                            cp.worst->gotNote.empty() ? fmt::format("{:.6g}", cp.worst->got) : cp.worst->gotNote);
      }
      if (cp.misconception) line += "\n" + cp.misconception->sentence + "\nRead: " + cp.misconception->lesson;
      if (!c.hidden && !cp.observation.empty()) line += "\n" + cp.observation;
      lines.push_back(line);
      break;
    }
  }
  for (const auto& cp : c.checkpoints) {
    if (!cp.gatedBy.empty()) {
      lines.push_back(fmt::format("{} passes, but it passes when nothing was done, so it scores only once {} passes.",
                                  cp.name, cp.gatedBy));
      break;
    }
  }
  size_t passed = 0;
  for (const auto& cp : c.checkpoints) passed += cp.status == CheckStatus::kPass ? 1 : 0;
  lines.push_back(fmt::format("{} of {} checkpoints pass.", passed, c.checkpoints.size()));
  // A hidden case's notes are the runner's own words (how to see its kind of failure).
  if (c.hidden) lines.insert(lines.end(), c.notes.begin(), c.notes.end());
  std::string text;
  for (const std::string& line : lines) text += (text.empty() ? "" : "\n") + line;
  return text;
}

}  // namespace

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
  // One test per case: its points (the sum of its checkpoints'), and why it scored them.
  for (const CaseReport& c : r.cases) {
    double points = 0;
    double maxPoints = 0;
    for (const auto& cp : c.checkpoints) {
      points += cp.points;
      maxPoints += cp.maxPoints;
    }
    score += points;
    const bool passed = c.status == CaseStatus::kPass && points == maxPoints;
    tests.push_back({{"name", c.name},
                     {"score", points},
                     {"max_score", maxPoints},
                     {"status", passed ? "passed" : "failed"},
                     {"output", CaseOutput(c)},
                     {"visibility", "visible"}});
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
  // Replace, not throw: compiler messages and a crash's output quote the student's bytes, which
  // need not be UTF-8.
  return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace wb
