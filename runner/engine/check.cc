#include "check.h"

#include "case_verdict.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../../common/fnv1a.h"
#include "../build/student_build.h"
#include "build_config.h"

namespace wb {
namespace {

namespace fsys = std::filesystem;

// A path as a student would type it: relative to the workbook when inside it.
std::string Shown(const std::string& path, const std::string& root) {
  std::error_code ec;
  const fsys::path absolute = fsys::absolute(path, ec).lexically_normal();
  const fsys::path relative = absolute.lexically_relative(fsys::absolute(root, ec).lexically_normal());
  if (relative.empty() || *relative.begin() == "..") return path;
  return relative.string();
}

std::string Under(const std::string& root, const std::string& relative) {
  return (fsys::path(root) / relative).lexically_normal().string();
}

}  // namespace

std::string WorkbookPaths::Source(const std::string& relative) const { return Under(sourceRoot, relative); }
std::string WorkbookPaths::Build(const std::string& relative) const { return Under(buildRoot, relative); }

WorkbookPaths DefaultPaths() {
  WorkbookPaths paths{WB_SOURCE_ROOT, WB_BUILD_ROOT};
  if (const char* root = std::getenv("WORKBOOK_ROOT")) paths.sourceRoot = root;
  return paths;
}

namespace {

// The non-empty items of a list the build wrote as one string.
std::vector<std::string> SplitList(std::string_view text, char separator) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(separator, start), text.size());
    if (end > start) items.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

// `check 5 --model PATH`: one case on the user's model, a prefill of the given tokens (or 8
// from the seed) and the decode steps asked for.
Expected<CaseFile> ModelCase(const CheckOptions& o, const StageInfo& stage) {
  if (stage.models.empty()) {
    return BadUsage(fmt::format("--model is for a stage that runs whole models (stage 5); stage {} checks {} on its "
                                "own data", stage.number, stage.function));
  }
  if (!o.casesPath.empty()) return BadUsage("--model and --cases are two ways to choose cases: give one of them");
  std::error_code ec;
  const fsys::path path = fsys::absolute(o.modelPath, ec).lexically_normal();
  if (ec || !fsys::exists(path, ec)) return BadUsage(fmt::format("{}: no such model file or folder", o.modelPath));
  if (o.decodeSteps < 0 || o.decodeSteps > 64) return BadUsage("--steps must be 0 to 64 decode steps");
  if (std::find(stage.cacheTypes.begin(), stage.cacheTypes.end(), o.cache) == stage.cacheTypes.end()) {
    return BadUsage(fmt::format("--cache must be one of {}", fmt::join(stage.cacheTypes, ", ")));
  }
  CaseFile file;
  file.path = path.string();
  file.stage = stage.number;
  CaseSpec spec;
  spec.name = path.filename().string();
  spec.model = path.string();  // a path: the driver opens it instead of a toy model
  spec.format = fsys::is_directory(path, ec) ? "hf" : "gguf";
  spec.cache = o.cache;
  spec.seed = 5;
  spec.tokens = o.tokens;
  const int prompt = o.tokens.empty() ? 8 : static_cast<int>(o.tokens.size());
  if (prompt + o.decodeSteps > kMaxCaseTokens) return BadUsage(fmt::format("at most {} tokens in all", kMaxCaseTokens));
  spec.steps.push_back(prompt);
  for (int s = 0; s < o.decodeSteps; ++s) spec.steps.push_back(1);
  file.cases.push_back(std::move(spec));
  return file;
}

}  // namespace

Expected<Implementation> PrepareImplementation(const CheckOptions& o, const StageInfo& stage, const StageBuild& build,
                                               const WorkbookPaths& paths) {
  Implementation impl;
  if (!o.harness.empty()) {
    impl.impl = o.harness;
    impl.source = o.harness;
    impl.harness = o.harness;
    return impl;
  }
  const bool mineKernels = !o.kernelFiles.empty();
  if (o.solutions && !mineKernels) {
    impl.impl = "solution";
    impl.source = paths.Source(fmt::format("solutions/{}/{}", stage.dir, stage.file));
    impl.harness = build.solutionHarness;
    return impl;
  }
  const std::string stagesDir = o.stagesDir.empty() ? paths.Source("stages") : o.stagesDir;
  impl.impl = o.solutions ? "solution" : "student";
  impl.source = o.solutions ? paths.Source(fmt::format("solutions/{}/{}", stage.dir, stage.file))
                            : Under(stagesDir, fmt::format("{}/{}", stage.dir, stage.file));
  std::error_code missing;
  if (!fsys::exists(fsys::symlink_status(impl.source, missing))) {
    return BadUsage(fmt::format("{}: no such file; the stage file of stage {} is {}/{}", impl.source, stage.number,
                                stage.dir, stage.file));
  }
  CompilerSetup setup;
  setup.compiler = {WB_STUDENT_COMPILER};
  setup.flags = {WB_STUDENT_FLAGS};
  setup.flags.insert(setup.flags.end(), stage.compileFlags.begin(), stage.compileFlags.end());
  setup.contractsDir = paths.Source("contracts");
  setup.cacheDir = paths.Build("student");
  setup.prelude = build.studentPrelude;
  setup.wallSeconds = o.compileSeconds;
  setup.sourceRoot = paths.Source("");
  for (const std::string& folder : SplitList(build.childFolders, ',')) setup.sourceFolders.push_back(folder);
  setup.linkArgs = SplitList(build.childLinkArgs, ' ');
  setup.extraSources = o.kernelFiles;
  setup.stageFiles = stage.files;
  setup.refuseUncountedAllocation = std::find(stage.caseCheckpoints.begin(), stage.caseCheckpoints.end(),
                                              "allocations") != stage.caseCheckpoints.end();
  const char* library = mineKernels ? build.mineKernelsHarnessLibrary : build.harnessLibrary;
  // One cached build per stage, per tree and per harness (the check's or the bench's), so
  // graders can check many trees at once and a bench does not undo a check's build.
  const std::string tree = fsys::absolute(stagesDir).lexically_normal().string();
  const std::string cacheName = fmt::format("stage{:02}-{:08x}-{}{}", stage.number,
                                            Fnv1a64(tree.data(), tree.size()) & 0xffffffffu,
                                            fsys::path(library).stem().string(), o.solutions ? "-solution" : "");
  auto built = BuildStageHarness(setup, impl.source, library, cacheName);
  if (!built.ok()) return built.error();
  impl.compiled = built->compiled;
  impl.compilerOutput = built->diagnostics;
  impl.compileStopped = built->stoppedAtLimit;
  impl.harness = built->executable;
  return impl;
}

Expected<CaseReport> RunCase(const StageDriver& driver, const CaseSpec& spec, const StageContext& context) {
  auto report = driver.RunCase(spec, context);
  if (!report.ok()) return report.error();
  report->name = spec.name;
  report->hidden = spec.hidden;
  if (context.stage != nullptr) GateGuards(*context.stage, *report);
  if (report->hidden) Redact(*report);
  return report;
}

namespace {

double TimeLimitOf(const CheckOptions& o, const StageDriver& driver, const CaseSpec& spec) {
  return o.timeLimitSeconds > 0 ? o.timeLimitSeconds : driver.DefaultTimeLimit(spec);
}

// `--kernels mine`: a case that fails on the student's kernels and passes on the provided
// ones under the same decoder fails because of the kernels, whichever buffer shows it first,
// so its headline says that and names them. A case that fails either way keeps its report:
// the decoder is wrong too, and its first failure is the place to start.
Status BlameKernels(const CheckOptions& mine, const StageInfo& stage, const StageBuild& build,
                    const WorkbookPaths& paths, const StageDriver& driver, StageContext context,
                    const std::vector<CaseSpec>& specs, RunReport& report) {
  CheckOptions provided = mine;
  provided.kernelFiles.clear();
  auto impl = PrepareImplementation(provided, stage, build, paths);
  if (!impl.ok() || !impl->compiled) return Status::Ok();  // nothing to compare with: the report stands
  context.harness = impl->harness;
  std::vector<std::string> files;
  for (const std::string& file : mine.kernelFiles) files.push_back(Shown(file, paths.sourceRoot));
  for (size_t i = 0; i < report.cases.size(); ++i) {
    CaseReport& c = report.cases[i];
    if (c.status == CaseStatus::kPass) continue;
    context.limits.wallSeconds = TimeLimitOf(mine, driver, specs[i]);
    auto again = RunCase(driver, specs[i], context);
    if (!again.ok()) return again.error();
    if (again->status != CaseStatus::kPass) continue;
    std::string headline = fmt::format(
        "your kernels are what is wrong here, not your decoder: with the provided kernels in place of {} this case "
        "passes",
        fmt::join(files, " and "));
    if (const std::string which = driver.KernelsOfCase(specs[i], context); !which.empty()) {
      headline += ". " + which;
    }
    if (!c.headline.empty()) headline += fmt::format(" (with yours: {})", c.headline);
    c.headline = headline + ".";
  }
  return Status::Ok();
}

}  // namespace

Expected<RunReport> RunCheck(const CheckOptions& o, const WorkbookPaths& paths) {
  auto table = LoadStageTable(paths.Source("data/stages.json"));
  if (!table.ok()) return table.error();
  const StageInfo* stage = table->Find(o.stage);
  if (stage == nullptr) return BadUsage(fmt::format("there is no stage {}; the stages are {}", o.stage, table->Numbers()));
  const StageBuild* build = FindStageBuild(o.stage);
  const auto heavy = HeavyStageNumbers();
  if (stage->available && build == nullptr && std::find(heavy.begin(), heavy.end(), o.stage) != heavy.end()) {
    return BadUsage(fmt::format("stage {}'s runner is built on its first use: run ./workbook check {} once",
                                o.stage, o.stage));
  }
  if (!stage->available || build == nullptr) {
    return BadUsage(fmt::format("stage {} ({}) is not in this workbook yet", o.stage, stage->title));
  }
  const std::string casesPath = !o.modelPath.empty() ? o.modelPath
                                : o.casesPath.empty() ? paths.Source(stage->visible) : o.casesPath;
  auto cases = o.modelPath.empty() ? LoadCaseFile(casesPath, *table) : ModelCase(o, *stage);
  if (!cases.ok()) return cases.error();
  if (cases->stage != o.stage) {
    return BadData(fmt::format("{}: field 'stage' is {}, but this is a check of stage {}", casesPath, cases->stage,
                               o.stage));
  }
  StageContext context;
  context.stage = stage;
  context.paths = paths;
  context.weightsPath = o.weightsPath;
  context.limits.memoryBytes = o.memoryLimitMiB << 20;
  context.limits.kernelVersion = o.kernelVersion;
  const std::unique_ptr<StageDriver> driver = build->makeDriver();
  if (auto prepared = driver->Prepare(context); !prepared.ok()) return prepared.error();

  CheckOptions withKernels = o;
  if (o.kernels == "mine") {
    if (build->mineKernelsStages[0] == '\0') {
      return BadUsage(fmt::format("--kernels mine is for a stage built on the kernels of earlier stages (stage 5); "
                                  "stage {} has none", o.stage));
    }
    if (!o.harness.empty()) return BadUsage("--kernels mine and --harness cannot go together");
    const std::string stagesDir = o.stagesDir.empty() ? paths.Source("stages") : o.stagesDir;
    for (const std::string& number : SplitList(build->mineKernelsStages, ',')) {
      const StageInfo* kernelStage = table->Find(std::stoi(number));
      if (kernelStage == nullptr) return InternalError(fmt::format("stage {} is not in the table", number));
      withKernels.kernelFiles.push_back(Under(stagesDir, fmt::format("{}/{}", kernelStage->dir, kernelStage->file)));
    }
  } else if (o.kernels != "solutions") {
    return BadUsage(fmt::format("--kernels is '{}'; it must be mine or solutions", o.kernels));
  }
  auto impl = PrepareImplementation(withKernels, *stage, *build, paths);
  if (!impl.ok()) return impl.error();
  context.harness = impl->harness;

  RunReport report;
  report.stage = stage->number;
  report.stageTitle = stage->title;
  report.impl = impl->impl;
  report.source = Shown(impl->source, paths.sourceRoot);
  report.lesson = stage->lesson;
  report.caseFile = Shown(casesPath, paths.sourceRoot);
  report.compileFlags = {WB_STUDENT_FLAGS};
  report.compileFlags.insert(report.compileFlags.end(), stage->compileFlags.begin(), stage->compileFlags.end());
  if (const StageInfo* next = table->Next(stage->number)) {
    report.nextStage = next->available
                           ? fmt::format("stage {}: {} ({}): ./workbook check {}", next->number, next->title,
                                         next->lesson, next->number)
                           : fmt::format("stage {}, {}, is coming to this workbook.", next->number, next->title);
  }
  if (!impl->compiled) {
    report.status = RunStatus::kCompileError;
    report.compilerOutput = impl->compilerOutput;
    report.compileStopped = impl->compileStopped;
    return report;
  }
  // The visible suite: the quick pass, then the full pass once every quick case passed.
  // Any other case file: every case, in its order.
  const bool twoPasses = o.casesPath.empty();
  std::vector<const CaseSpec*> quick;
  std::vector<const CaseSpec*> full;
  for (const CaseSpec& spec : cases->cases) (twoPasses && spec.slow ? full : quick).push_back(&spec);
  std::vector<CaseSpec> specsRun;  // of report.cases, in order
  auto runAll = [&](const std::vector<const CaseSpec*>& pass) -> Status {
    for (const CaseSpec* listed : pass) {
      CaseSpec spec = *listed;
      if (o.showHidden) spec.hidden = false;
      context.limits.wallSeconds = TimeLimitOf(o, *driver, spec);
      auto ran = RunCase(*driver, spec, context);
      if (!ran.ok() && ran.error().kind == ErrorKind::kBadData) {
        return BadData(fmt::format("{}: {}", casesPath, ran.error().message));  // which file holds the case
      }
      if (!ran.ok()) return ran.error();
      if (ran->hidden && ran->status != CaseStatus::kPass) ran->notes.push_back(driver->Reproduce(spec, stage->number));
      report.cases.push_back(std::move(*ran));
      specsRun.push_back(spec);
    }
    return Status::Ok();
  };
  auto allPassed = [&report] {
    return std::all_of(report.cases.begin(), report.cases.end(),
                       [](const CaseReport& c) { return c.status == CaseStatus::kPass; });
  };
  if (auto ran = runAll(quick); !ran.ok()) return ran.error();
  if (allPassed()) {
    if (auto ran = runAll(full); !ran.ok()) return ran.error();
  } else {
    for (const CaseSpec* spec : full) report.casesNotRun.push_back(spec->name);
  }
  if (!withKernels.kernelFiles.empty() && !allPassed()) {
    if (auto blamed = BlameKernels(withKernels, *stage, *build, paths, *driver, context, specsRun, report); !blamed.ok()) {
      return blamed.error();
    }
  }
  report.status = allPassed() && report.casesNotRun.empty() ? RunStatus::kPass : RunStatus::kFail;
  if (o.leaderboard) {
    context.limits.wallSeconds = o.timeLimitSeconds > 0 ? o.timeLimitSeconds : 60;
    // A wrong answer has no speed: a submission that fails ranks with 0, unmeasured.
    auto entries = driver->Leaderboard(context, report.status == RunStatus::kPass);
    if (!entries.ok()) return entries.error();
    if (entries->empty()) return BadUsage(fmt::format("--leaderboard: stage {} ranks nothing", stage->number));
    report.leaderboard = std::move(*entries);
  }
  return report;
}

int ExitCodeFor(const RunReport& report) { return report.status == RunStatus::kPass ? 0 : 1; }

}  // namespace wb
