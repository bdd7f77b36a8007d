#include "report.h"

namespace wb {

void Redact(CaseReport& r) {
  // Even a crash's details name buffer sizes, so a hidden case keeps only what happened.
  switch (r.status) {
    case CaseStatus::kCrash: r.headline = "your code crashed on this hidden case"; break;
    case CaseStatus::kTimeout: r.headline = "your code ran past the time limit on this hidden case"; break;
    case CaseStatus::kExitedEarly: r.headline = "your code ended the process early on this hidden case"; break;
    default: r.headline.clear(); break;
  }
  r.parameters.clear();
  r.childOutput.clear();
  r.notes.clear();
  for (auto& c : r.checkpoints) {
    c.worst.reset();
    c.samples.clear();
    c.misconception.reset();
    c.observation.clear();
    c.shape.clear();
    c.atol = 0;  // the tolerance's absolute term is a fraction of the expected RMS
    c.rms = 0;   // and the RMS is a fact about the expected values
  }
}

std::string_view ToString(CaseStatus s) {
  switch (s) {
    case CaseStatus::kPass: return "pass";
    case CaseStatus::kFail: return "fail";
    case CaseStatus::kNotImplemented: return "not_implemented";
    case CaseStatus::kCrash: return "crash";
    case CaseStatus::kTimeout: return "timeout";
    case CaseStatus::kExitedEarly: return "exited_early";
  }
  return "?";
}

std::string_view ToString(RunStatus s) {
  switch (s) {
    case RunStatus::kPass: return "pass";
    case RunStatus::kFail: return "fail";
    case RunStatus::kCompileError: return "compile_error";
  }
  return "?";
}

std::string_view ToString(CheckStatus s) { return s == CheckStatus::kPass ? "pass" : "fail"; }

std::string_view ToString(LocalStatus s) {
  switch (s) {
    case LocalStatus::kPass: return "pass";
    case LocalStatus::kFail: return "fail";
    case LocalStatus::kNotChecked: return "not_checked";
  }
  return "?";
}

}  // namespace wb
