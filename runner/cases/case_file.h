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
// A stage whose row lists kernels also takes, in any case,
//               "threads": 2,                        optional: threads the code may use (1 to 64)
// and kernel cases, which check one kernel on its own instead of calling the stage function:
//               "kernel": "matmul",                  one of the row's kernels
//               "out": 77, "in": 515,                the matmul shape, for kernels whose row lists them
//               "accumulate": true                   y += x . W^T, for kernels whose row lists it
// A stage whose row lists weight_sets (stage 4) takes, in a block case (required),
//               "weights": "q8_0"                    one of the row's weight_sets
// and in a case of a kernel whose fields list "weights" (required), "q8_0" or "q4_0".
// A stage whose row lists models (stage 5) takes, instead of x_scale and w_scale,
//               "model": "qwen3", "format": "gguf",  one of the row's models, "gguf" or "hf"
//               "cache": "int8",                     optional: one of its cache_types (f32)
//               "page_size": 4,                      optional: positions per cache page (16)
//               "threads": 2,                        optional (1)
//               "logits": "last",                    optional: every call asks for Logits::kLast,
//                                                    one row, checked at row 0 ("all": kAll)
//               "variant": "tied-router"             optional: another checkpoint of the model,
//                                                    data/models/NAME/hf-VARIANT/ ("hf") or
//                                                    data/models/NAME/model-VARIANT.gguf ("gguf")
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
  int threads = 1;
  // A kernel case: the kernel ("" for a case of the stage function) and its shape.
  std::string kernel;
  int out = 0;
  int in = 0;
  bool accumulate = false;
  std::string weights;      // stage 4: the weight set ("q8_0", "q4_0", "mixed"), or W's type
  // A stage with models (stage 5): the toy model (data/models/NAME/), or the path given by
  // `check --model`; its format ("gguf" or "hf"); the cache's rows ("f32", "f16", "int8");
  // positions per page of the cache.
  std::string model;
  std::string format;
  std::string cache;
  int pageSize = 16;
  bool lastLogitsOnly = false;  // "logits": "last": every call asks for the last row's logits only
  std::string variant;      // "variant": another checkpoint of the toy model ("": the model's own)
  std::vector<int> tokens;  // `check --model --tokens`: the prompt's ids ("": from the seed)

  int Tokens() const;       // T, or the sum of steps
};

struct CaseFile {
  std::string path;
  int stage = 0;
  std::vector<CaseSpec> cases;
};

// The largest sequence a case may ask for (MAX_T of the decoding stages' contracts).
constexpr int kMaxCaseTokens = 4096;
// The most threads a case may give its code, and the largest kernel matrix side and size
// (floats of W, x or y): a kernel case's buffers stay within 64 MiB each.
constexpr int kMaxCaseThreads = 64;
constexpr int kMaxKernelSide = 8192;
constexpr int64_t kMaxKernelFloats = int64_t{1} << 24;

Expected<CaseFile> ParseCaseFile(const std::string& text, const std::string& pathForMessages,
                                 const StageTable& stages);
Expected<CaseFile> LoadCaseFile(const std::string& path, const StageTable& stages);

}  // namespace wb
