#include "report.h"

#include <algorithm>
#include <cmath>

namespace wb {

double OrderOfMagnitude(double value) {
  if (!(value > 0) || !std::isfinite(value)) return value;
  return std::clamp(std::pow(10.0, std::floor(std::log10(value))), kSmallestHiddenError, kLargestHiddenError);
}

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
  // The error's size only as a power of ten, and each count only as none, some or all: a
  // student's code controls its outputs, so any precise figure would be a channel out of the
  // hidden case (one byte of it per checkpoint, say, in the digits of an error).
  for (auto& c : r.checkpoints) {
    c.maxAbsError = OrderOfMagnitude(c.maxAbsError);
    const bool allUnwritten = c.total > 0 && c.unwritten == c.total;
    c.total = 1;
    c.unwritten = allUnwritten ? 1 : 0;
    c.failing = c.failing > 0 ? 1 : 0;
    c.fromUnwritten = c.fromUnwritten > 0 ? 1 : 0;
    c.nanCount = c.nanCount > 0 ? 1 : 0;
    c.infCount = c.infCount > 0 ? 1 : 0;
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
