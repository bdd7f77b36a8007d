#include "case_verdict.h"

#include <algorithm>

#include <fmt/format.h>

namespace wb {

void Conclude(const CaseFindings& f, CaseReport& report) {
  for (const auto& cp : report.checkpoints) {
    if (!report.firstFailure && cp.status == CheckStatus::kFail) report.firstFailure = cp.name;
  }
  if (f.stop) {
    report.status = f.stop->status;
    report.headline = f.stop->headline;
    report.notes.insert(report.notes.end(), f.stop->notes.begin(), f.stop->notes.end());
  } else if (!f.canaryNotes.empty()) {
    report.status = CaseStatus::kFail;
    report.headline = f.canaryNotes.front();
    report.notes.insert(report.notes.end(), f.canaryNotes.begin() + 1, f.canaryNotes.end());
  } else if (f.allUnwritten) {
    report.status = CaseStatus::kNotImplemented;
  } else {
    report.status = report.firstFailure ? CaseStatus::kFail : CaseStatus::kPass;
  }
  if (f.leftoverProcesses > 0) {
    report.notes.push_back(fmt::format("your code left {} process{} running after it ended (a fork, a daemon); the "
                                       "runner killed {} before checking anything",
                                       f.leftoverProcesses, f.leftoverProcesses == 1 ? "" : "es",
                                       f.leftoverProcesses == 1 ? "it" : "them"));
  }
  if (!f.outputFlood.empty()) {
    if (report.status == CaseStatus::kPass || report.status == CaseStatus::kNotImplemented) {
      report.status = CaseStatus::kFail;
    }
    if (report.headline.empty()) {
      report.headline = f.outputFlood;
    } else {
      report.notes.push_back(f.outputFlood);
    }
  }
  // A run that did not end as a program should (a crash, the time limit, an early exit, more
  // output than the limit) is worth nothing, whatever it wrote before it stopped: the grade
  // says what the report says.
  if (f.stop || !f.outputFlood.empty()) {
    const char* why = !f.stop                                     ? "it printed past the output limit"
                      : f.stop->status == CaseStatus::kTimeout    ? "it ran past the time limit"
                      : f.stop->status == CaseStatus::kExitedEarly ? "your code ended the process early"
                                                                   : "it crashed";
    ZeroCase(report, fmt::format("this case scores 0 because {}", why));
  }
}

void ZeroCase(CaseReport& report, const std::string& why) {
  bool hadPoints = false;
  for (auto& cp : report.checkpoints) {
    hadPoints = hadPoints || cp.points > 0;
    cp.points = 0;
  }
  report.zeroedBecause = why;
  if (hadPoints) report.notes.push_back(why + ", though some of its buffers were right");
}

void GateGuards(const StageInfo& stage, CaseReport& report) {
  if (report.checkpoints.empty()) return;
  const CheckpointReport& first = report.checkpoints.front();
  if (first.status == CheckStatus::kPass) return;
  for (auto& cp : report.checkpoints) {
    const auto base = stage.BaseName(cp.name);
    const bool guard = base && (stage.guards.count(*base) > 0 ||
                                std::find(stage.caseCheckpoints.begin(), stage.caseCheckpoints.end(), *base) !=
                                    stage.caseCheckpoints.end());
    if (!guard || cp.points == 0) continue;
    cp.points = 0;
    cp.gatedBy = first.name;
  }
}

std::optional<CaseStatus> StatusOfEnding(ChildOutcome::Ending ending) {
  switch (ending) {
    case ChildOutcome::Ending::kReturned: return std::nullopt;
    case ChildOutcome::Ending::kTimeLimit: return CaseStatus::kTimeout;
    case ChildOutcome::Ending::kExitedEarly: return CaseStatus::kExitedEarly;
    case ChildOutcome::Ending::kSignal: return CaseStatus::kCrash;
  }
  return CaseStatus::kCrash;
}

std::string ChildOutputText(const ChildOutcome& outcome) {
  const std::string out = outcome.stdoutText.Text();
  const std::string err = outcome.stderrText.Text();
  return out + (!out.empty() && !err.empty() && out.back() != '\n' ? "\n" : "") + err;
}

void RecordRace(size_t differing, size_t total, std::string_view unit, const std::string& firstWhere,
                CheckpointReport& checkpoint, CaseReport& report) {
  const std::string race = fmt::format(
      "Two runs of this case on the same inputs disagree at {} of {} {}, the first at {}: the result depends on "
      "something besides the inputs. Usually two threads write the same elements (or one reads what another is "
      "writing); it can also be state kept from one call to the next.",
      differing, total, unit, firstWhere);
  if (checkpoint.status == CheckStatus::kPass) {
    checkpoint.status = CheckStatus::kFail;
    checkpoint.failing = differing;
    checkpoint.points = 0;
    checkpoint.observation = race;
  } else {
    checkpoint.observation = checkpoint.observation.empty() ? race : checkpoint.observation + " " + race;
  }
  report.notes.push_back(race);
}

}  // namespace wb
