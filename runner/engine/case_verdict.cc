#include "case_verdict.h"

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
  if (f.outputFlood.empty()) return;
  if (report.status == CaseStatus::kPass || report.status == CaseStatus::kNotImplemented) {
    report.status = CaseStatus::kFail;
  }
  if (report.headline.empty()) {
    report.headline = f.outputFlood;
  } else {
    report.notes.push_back(f.outputFlood);
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
