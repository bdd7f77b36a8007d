// Case files: which inputs a stage is checked on.
//
// Format (JSON):
//   {"stage": 1,
//    "cases": [{"name": "visible-T4", "T": 4, "seed": 1,
//               "x_scale": 1.0, "w_scale": 1.0,      optional, default 1
//               "hidden": false,                     optional: report pass/fail and error size only
//               "points": 1.0}]}                     optional: points per checkpoint (graders)
// Stage 2 cases give "steps": [n0, n1, ...] (tokens per call) instead of "T".
//
// Contract: LoadCaseFile accepts exactly this; anything else is a BadData error naming
// the file and the field ("cases[2].T"), including unknown fields, so a typo is not
// silently ignored. Names are unique within a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../common/expected.h"

namespace wb {

struct CaseSpec {
  std::string name;
  int T = 0;                // stage 1: tokens
  std::vector<int> steps;   // stage 2: tokens per call
  uint64_t seed = 0;
  double xScale = 1.0;
  double wScale = 1.0;
  bool hidden = false;
  double points = 1.0;      // per checkpoint

  int Tokens() const;       // T, or the sum of steps
};

struct CaseFile {
  std::string path;
  int stage = 0;
  std::vector<CaseSpec> cases;
};

// The largest sequence a case may ask for (the stage-2 cache holds 4096 positions).
constexpr int kMaxCaseTokens = 4096;

Expected<CaseFile> ParseCaseFile(const std::string& text, const std::string& pathForMessages);
Expected<CaseFile> LoadCaseFile(const std::string& path);

}  // namespace wb
