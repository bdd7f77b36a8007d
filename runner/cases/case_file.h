// Case files: which inputs a stage is checked on.
//
// Format (JSON):
//   {"stage": 1,
//    "cases": [{"name": "visible-T4", "T": 4, "seed": 1,
//               "x_scale": 1.0, "w_scale": 1.0,      optional, default 1
//               "hidden": false,                     optional: report pass/fail and error size only
//               "slow": false,                       optional: part of the full pass only (below)
//               "points": 1.0,                       optional: points per checkpoint (graders), 0 to 1000
//               "description": "..."}]}              optional: what the case is for
// A stage's visible suite is run in two passes by a plain `check N` (runner/engine/check.h):
// the quick pass (every case not marked slow) on every check, then the full pass (the slow
// cases) once every quick case passes, so the edit loop stays fast and "done" still means
// every case. A case file given with --cases runs every case, in file order.
// A stage whose row of data/stages.json has "case_length": "steps" gives
// "steps": [n0, n1, ...] (tokens per call) instead of "T".
//
// Contract: LoadCaseFile accepts exactly this, for a stage of the table; anything else is
// a BadData error naming the file and the field ("cases[2].T"), including unknown fields,
// so a typo is not silently ignored. Names are unique within a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/expected.h"
#include "../stages/stage_table.h"

namespace wb {

// The most points one checkpoint of a case may be worth.
constexpr double kMaxCasePoints = 1000;

struct CaseSpec {
  std::string name;
  int T = 0;                // case_length "T": tokens of the one call
  std::vector<int> steps;   // case_length "steps": tokens per call
  uint64_t seed = 0;
  double xScale = 1.0;
  double wScale = 1.0;
  bool hidden = false;
  bool slow = false;        // part of the full pass only
  double points = 1.0;      // per checkpoint

  int Tokens() const;       // T, or the sum of steps
};

struct CaseFile {
  std::string path;
  int stage = 0;
  std::vector<CaseSpec> cases;
};

// The largest sequence a case may ask for (MAX_T of the decoding stages' contracts).
constexpr int kMaxCaseTokens = 4096;

Expected<CaseFile> ParseCaseFile(const std::string& text, const std::string& pathForMessages,
                                 const StageTable& stages);
Expected<CaseFile> LoadCaseFile(const std::string& path, const StageTable& stages);

}  // namespace wb
