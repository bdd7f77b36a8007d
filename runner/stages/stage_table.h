// The stage table (data/stages.json): the one list of stages. The build, the driver table,
// the planted-bug suites, `list`, `hint`, the docs tables and the site's nav are derived
// from it or checked against it (tests/course), so a stage is one row plus its folders.
//
// A row (every field but number, dir, title, lesson and available is for available stages):
//   number, dir ("01-block": its folder in stages/, solutions/, runner/stages/, docs/stages/
//   as the lesson), file, files (optional: every file of the stage, plain names in its folder,
//   `file` among them; the compiler sees only these), function, title, lesson, visible, hidden_example (case files),
//   case_length ("T": one call of T tokens, or "steps": tokens per call),
//   kernels (optional: the kernels a case may check on their own, each with the case fields
//   its cases give besides T, seed and threads, [{"name": "matmul", "fields": ["out", "in",
//   "accumulate"]}], "weights" among them for a kernel on quantized weights; a
//   kernel case reports one checkpoint, named after its kernel, checked before any call of the
//   stage function), checkpoints (per call, in dependency order), case_checkpoints (once per
//   case, after the calls), reported_as (how a per-call checkpoint is named in reports: "{checkpoint}" or
//   "step{call}.{checkpoint}"), compile_flags (what student code and the solution are
//   compiled with, besides the language and warnings), bench (what `bench N` measures, or
//   absent), planted (the folder of planted bugs) with planted_timeout (seconds per bug),
//   hints (per checkpoint, gentlest first), guards (optional: per-call checkpoints that check
//   what the code must leave alone, each mapped to the per-call checkpoints whose writes it
//   guards, {"cacheOtherRows": ["kCache", "vCache"]}; such a checkpoint passes before any code
//   is written, so `list` counts it in a call only when that call wrote at least one element
//   of a checkpoint it guards), kernel_versions (optional: the instruction-set versions the
//   solution's kernels come in, by name, "portable" first: `check N --solutions` runs the
//   visible suite once more through each this CPU runs, asking for it by WB_KERNEL_VERSION;
//   runner/engine/kernel_versions.h knows the names).
//
// Beside the rows, the table has misconception_hints: for each misconception id of the
// runner's catalogues (runner/diagnose/misconceptions.cc and each stage's own beside its
// driver), graded hints, gentlest first, that `hint` shows instead of the checkpoint's when
// the first failing checkpoint is diagnosed as that mistake. Ids are lowercase words joined
// by '-', and none may be a checkpoint's name (the hint record keys both alike). That every
// catalogue id has hints is the course self-check's (tests/course/course_check.cc).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../../common/expected.h"

namespace wb {

// How a checkpoint of one layer is named inside a call's name: "step2.layer1.q" (stage 5).
inline constexpr const char* kLayerPrefix = "layer";
// How a kernel's run on weights the file packed itself (stage 4's pack_q) is named:
// "matmul_q, packed weights". Its table name, hints and progress are the kernel's.
inline constexpr const char* kPackedRunSuffix = ", packed weights";

enum class CaseLength { kTokens, kSteps };

// A kernel a case may check on its own, and the case fields its cases give besides T, seed
// and threads ("out", "in", "accumulate").
struct KernelInfo {
  std::string name;
  std::vector<std::string> fields;

  bool Takes(const std::string& field) const;
};

struct StageInfo {
  int number = 0;
  std::string dir;       // "01-block"
  std::string file;      // "block.cc": the stage file the runner compiles
  // Every file of the stage in its folder, `file` first (stage 5's decoder.cc includes five
  // part files and a header): what the compiler sees, what a submission must hold, what
  // `watch` watches. `files` in the row; just `file` when the row has none.
  std::vector<std::string> files;
  std::string function;  // "decoder_block"
  std::string title;
  std::string lesson;    // relative to the workbook root
  std::string visible;   // relative to the workbook root
  std::string hiddenExample;
  CaseLength caseLength = CaseLength::kTokens;
  std::vector<KernelInfo> kernels;           // checked on their own by kernel cases
  std::vector<std::string> checkpoints;      // per call
  std::vector<std::string> caseCheckpoints;  // once per case
  std::string reportedAs = "{checkpoint}";
  std::vector<std::string> compileFlags;
  // weight_sets (optional): the quantized weight files a block case may choose with
  // "weights" (stage 4: "q8_0", "q4_0", "mixed"); a kernel whose fields list "weights" takes
  // the single-type ones of them.
  std::vector<std::string> weightSets;
  // models (optional): the toy models a case may choose with "model" (stage 5: the eight
  // families, data/models/NAME/), each in either format ("format": "gguf" or "hf");
  // cache_types: what "cache" may say ("f32", "f16", "int8"); layer_checkpoints: the per-call
  // checkpoints that every layer has, reported as "layer{L}.{checkpoint}" in the call's name
  // ("step2.layer1.q").
  std::vector<std::string> models;
  std::vector<std::string> cacheTypes;
  std::vector<std::string> layerCheckpoints;
  std::vector<std::string> kernelVersions;  // "portable", "avx2", "avx512vnni" (see above)
  std::string bench;     // what the benchmark measures; "" when there is none
  std::string planted;   // folder of .bug files, relative to the workbook root
  int plantedTimeout = 120;
  std::map<std::string, std::vector<std::string>> hints;  // per checkpoint, gentlest first
  // guard checkpoint -> the per-call checkpoints whose writes make it count (see above)
  std::map<std::string, std::vector<std::string>> guards;
  bool available = false;

  // The reported name of checkpoint `name` in call `call` (1-based), and of a per-layer one
  // in layer `layer` (0-based) of that call.
  std::string Reported(const std::string& name, int call) const;
  std::string Reported(const std::string& name, int call, int layer) const;
  bool PerLayer(const std::string& name) const;  // one of layer_checkpoints
  // The table's name of a reported checkpoint ("step2.attnOut" -> "attnOut", "matmul_q,
  // packed weights" -> "matmul_q"); nullopt when it is none of this stage's.
  std::optional<std::string> BaseName(const std::string& reported) const;
  // Every checkpoint name: the kernels', then per call and per case, in order.
  std::vector<std::string> AllCheckpoints() const;
  // nullptr when the stage has no such kernel.
  const KernelInfo* FindKernel(const std::string& name) const;
};

struct StageTable {
  int version = 0;
  std::vector<StageInfo> stages;
  // misconception id -> graded hints, gentlest first (see above)
  std::map<std::string, std::vector<std::string>> misconceptionHints;

  const StageInfo* Find(int number) const;
  const StageInfo* Next(int number) const;  // the stage after `number`, available or not
  std::string Numbers() const;              // "1 to 5", for messages
};

Expected<StageTable> ParseStageTable(const std::string& text, const std::string& pathForMessages);
Expected<StageTable> LoadStageTable(const std::string& path);

}  // namespace wb
