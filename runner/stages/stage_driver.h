// A stage driver: how the runner checks one case of one stage. Each stage's driver lives
// in its own folder, runner/stages/NN-name/, with the harness call and the call layout it
// shares with the child, and defines wb::stageNN::MakeDriver().
//
// Contract: the build generates the table of built stages (BuiltStages) from
// data/stages.json: one entry per available stage, with the harness library a student's
// file is linked with and the prebuilt solution child, the same two for the stage's
// benchmark when it has one (its folder has bench_call.cc), and its driver. RunCheck (runner/engine/check.h) prepares the driver once, runs every case
// through it and redacts hidden cases itself: a driver never has to, and cannot skip it.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../../common/expected.h"
#include "../cases/case_file.h"
#include "../engine/paths.h"
#include "../isolation/child_process.h"
#include "../report/report.h"
#include "stage_table.h"

namespace wb {

struct StageContext {
  const StageInfo* stage = nullptr;  // the stage's row of data/stages.json
  WorkbookPaths paths;
  std::string harness;      // the child executable to run
  std::string weightsPath;  // --weights: a data file other than the stage's own ("": its own)
  ChildLimits limits;       // wallSeconds is set per case, from DefaultTimeLimit or --time-limit
};

// What `bench N` asks for; empty or zero: the stage's defaults.
struct BenchOptions {
  std::vector<int> contexts;  // stage 2: context lengths
  std::vector<int> tokens;    // stage 3: T values
  double budgetSeconds = 0;   // stage 5: timed runs per figure
  bool solutions = false;     // timing the solution: stage 3 also times its kernel versions
  std::string format = "text";  // "text" or "json", on stdout
  std::string plotPath;       // stages 3-5: also draw the figures as an SVG file here
  std::string source;         // the stage file being timed, as `check` names it
  std::string stagesDir;      // --stages-dir: another stages/ tree ("": the workbook's)
  uint64_t memoryLimitMiB = 1024;
  // A stage's own options; a driver says which it takes (StageDriver::BenchTakes), and `bench`
  // refuses the others before anything runs. Today stage 5's.
  bool mine = false;                  // --mine: the student's code, said explicitly
  std::string model;                  // --model: a model file or folder to time
  std::string kernels = "solutions";  // --kernels mine: the student's earlier kernels linked in
  bool contention = false;            // --contention: threads beside busy loops
};

// The stage-specific options of `bench`, by the name the command line gives them.
inline constexpr const char* kStageBenchOptions[] = {"--mine", "--model", "--kernels", "--contention"};

class StageDriver {
 public:
  virtual ~StageDriver() = default;
  // Loads what every case needs, once per run; a bad file is a BadData error naming it.
  virtual Status Prepare(const StageContext& context) = 0;
  // The wall-clock limit of the case (of each call, for stages that call several times).
  virtual double DefaultTimeLimit(const CaseSpec& spec) const = 0;
  // One case, for anything the student's code does; an error only for a failure of the
  // workbook itself (kInternal) or of the system (kSystem).
  virtual Expected<CaseReport> RunCase(const CaseSpec& spec, const StageContext& context) const = 0;
  // The stage's benchmark, run on context.harness (a bench child), printing its rows to
  // stdout as they are measured; the command has validated the implementation first.
  // Returns the exit status: 0 measured, 1 the student's code failed while timed.
  // A stage whose bench runs a child of its own (StageBuild::benchHarnessLibrary) gets it in
  // context.harness; one without (stage 5, which runs the generate program) builds what it runs.
  virtual Expected<int> Bench(const BenchOptions& options, const StageContext& context) const {
    (void)options;
    (void)context;
    return InternalError("this stage has no benchmark");
  }
  // The bench's own checks of its options (lengths, T values, a plot it can write), run by
  // `bench` before the validation's check, so that a mistyped option is said at once and not
  // after the visible suite has run; Bench may rely on them.
  virtual Status CheckBenchOptions(const BenchOptions& options) const {
    (void)options;
    return Status::Ok();
  }
  // Whether the stage has a benchmark (`bench N`), and which of kStageBenchOptions it takes.
  virtual bool HasBench() const { return false; }
  virtual std::vector<std::string> BenchTakes() const { return {}; }
  // For a hidden case that failed: the command that shows a failure of its kind in full,
  // without a byte of the case's data (no seed, no size). By default the visible suite, which
  // has a case of every kind a stage's hidden example has (the course self-check holds it).
  virtual std::string Reproduce(const CaseSpec& spec, int stage) const {
    (void)spec;
    return fmt::format("the visible suite has a case of every kind a hidden suite holds: ./workbook check {} "
                       "shows them in full", stage);
  }
  // For `check --kernels mine`, of a case that fails on the student's kernels and passes on
  // the provided ones: which of the earlier stages' kernels its products ran, and where
  // they are ("its matrices are Q4_0, which ... matmul_q of stages/04-quant/quant.cc").
  // Empty by default: a stage built on no earlier stage's kernels.
  virtual std::string KernelsOfCase(const CaseSpec& spec, const StageContext& context) const {
    (void)spec;
    (void)context;
    return "";
  }
  // What Gradescope's leaderboard ranks by (check --leaderboard): measured on context.harness
  // when `measure` (every case passed), else the same entries at 0; empty when the stage
  // ranks nothing. Timed by the runner's clock, never by anything the student's code can
  // write to, and on runs whose results are checked.
  virtual Expected<std::vector<LeaderboardEntry>> Leaderboard(const StageContext& context, bool measure) const {
    (void)context;
    (void)measure;
    return std::vector<LeaderboardEntry>{};
  }
};

struct StageBuild {
  int number = 0;
  const char* harnessLibrary = "";   // linked with a student's stage file
  const char* solutionHarness = "";  // the solution's prebuilt child
  const char* benchHarnessLibrary = "";  // linked with a student's stage file for `bench`; "": none
  const char* solutionBench = "";        // the solution's prebuilt bench child
  const char* studentPrelude = "";  // the standard headers, precompiled beside it (.gch)
  // Source folders (comma-separated, under the workbook root) whose headers the stage's code
  // includes besides contracts/, and what a child is linked with besides the harness library
  // (space-separated); "" for none (runner/stages/NN-name/child/meson.build sets them).
  const char* childFolders = "";
  const char* childLinkArgs = "";
  // `check N --kernels mine`: the harness library without the provided kernels' stages, and
  // those stages' numbers (comma-separated), whose stage files are compiled in instead.
  const char* mineKernelsHarnessLibrary = "";
  const char* mineKernelsStages = "";
  std::unique_ptr<StageDriver> (*makeDriver)() = nullptr;
};

// Generated by the build (runner/stages/stage_builds.cc.in): the stages of `workbook`.
std::span<const StageBuild> BuiltStages();
// The heavy stages (their drivers need the model library: stage 5), which only the front end
// workbook-decoder has (heavy_stage_builds.cc.in); empty in `workbook`. Their numbers are
// known to both, so `workbook` can hand a heavy stage's command over.
std::span<const StageBuild> HeavyStageBuilds();
std::span<const int> HeavyStageNumbers();
// nullptr when this front end has no such stage (in BuiltStages or HeavyStageBuilds).
const StageBuild* FindStageBuild(int number);

}  // namespace wb
