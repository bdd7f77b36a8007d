#include "case_outcome.h"

namespace wb {

void RecordComparison(const Comparison& chain, double points, CheckpointReport& cp) {
  cp.status = chain.pass() ? CheckStatus::kPass : CheckStatus::kFail;
  cp.total = chain.total;
  cp.failing = chain.failing;
  cp.unwritten = chain.unwritten;
  cp.fromUnwritten = chain.fromUnwritten;
  cp.nanCount = chain.nanCount;
  cp.infCount = chain.infCount;
  cp.maxAbsError = chain.maxAbsError;
  cp.atol = chain.atol;
  cp.rtol = chain.rtol;
  cp.maxPoints = points;
  cp.points = chain.pass() ? points : 0;
}

void ApplyOutputFlood(const std::string& flood, CaseReport& report) {
  if (flood.empty()) return;
  if (report.status == CaseStatus::kPass || report.status == CaseStatus::kNotImplemented) {
    report.status = CaseStatus::kFail;
  }
  if (report.headline.empty()) {
    report.headline = flood;
  } else {
    report.notes.push_back(flood);
  }
}

}  // namespace wb
