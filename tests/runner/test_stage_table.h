// A stage table shaped like the workbook's, for the case-file parser's tests and its fuzz
// target: stage 1 takes "T", stage 2 "steps", stage 3 "T" and kernel cases, 4 and 5 are coming.
#pragma once

#include "runner/stages/stage_table.h"

namespace wbtest {

inline const wb::StageTable& Stages() {
  static const wb::StageTable table = wb::ParseStageTable(R"({"version": 1, "stages": [
      {"number": 1, "dir": "01-a", "title": "a", "lesson": "a.md", "available": true, "file": "a.cc",
       "function": "a", "visible": "v.json", "hidden_example": "h.json", "checkpoints": ["x"], "planted": "p"},
      {"number": 2, "dir": "02-b", "title": "b", "lesson": "b.md", "available": true, "file": "b.cc",
       "function": "b", "visible": "v.json", "hidden_example": "h.json", "checkpoints": ["x"], "planted": "p",
       "case_length": "steps"},
      {"number": 3, "dir": "03-c", "title": "c", "lesson": "c.md", "available": true, "file": "c.cc",
       "function": "c", "visible": "v.json", "hidden_example": "h.json", "checkpoints": ["x"], "planted": "p",
       "kernels": [{"name": "matmul", "fields": ["out", "in", "accumulate"]},
                   {"name": "matmul_swiglu", "fields": ["out", "in"]}, {"name": "causal_attention", "fields": []}]},
      {"number": 4, "dir": "04-d", "title": "d", "lesson": "d.md"},
      {"number": 5, "dir": "05-e", "title": "e", "lesson": "e.md"}]})", "stages.json").value();
  return table;
}

}  // namespace wbtest
