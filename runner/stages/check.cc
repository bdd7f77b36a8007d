#include "check.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "../../common/fnv1a.h"
#include "../build/student_build.h"
#include "build_config.h"
#include "../cases/case_file.h"
#include "block_stage.h"
#include "stage_driver.h"
#include "stage_table.h"

namespace wb {
namespace {

namespace fsys = std::filesystem;

std::string Under(const std::string& root, const std::string& relative) {
  return (fsys::path(root) / relative).lexically_normal().string();
}

// A path as a student would type it: relative to the workbook when inside it.
std::string Shown(const std::string& path, const std::string& root) {
  std::error_code ec;
  const fsys::path absolute = fsys::absolute(path, ec).lexically_normal();
  const fsys::path relative = absolute.lexically_relative(fsys::absolute(root, ec).lexically_normal());
  if (relative.empty() || *relative.begin() == "..") return path;
  return relative.string();
}

// What `check` runs: a prebuilt child, or the stage file built here.
struct Implementation {
  std::string impl;
  std::string source;
  std::string harness;
  bool compiled = true;
  std::string compilerOutput;
};

Expected<Implementation> PrepareImplementation(const CheckOptions& o, const StageInfo& stage,
                                               const StageDriver& driver, const WorkbookPaths& paths) {
  Implementation impl;
  if (!o.harness.empty()) {
    impl.impl = o.harness;
    impl.source = o.harness;
    impl.harness = o.harness;
    return impl;
  }
  if (o.solutions) {
    impl.impl = "solution";
    impl.source = Under(paths.sourceRoot, fmt::format("solutions/{}/{}", stage.dir, stage.file));
    impl.harness = driver.solutionHarness;
    return impl;
  }
  const std::string stagesDir = o.stagesDir.empty() ? Under(paths.sourceRoot, "stages") : o.stagesDir;
  impl.impl = "student";
  impl.source = Under(stagesDir, fmt::format("{}/{}", stage.dir, stage.file));
  if (!fsys::exists(impl.source)) {
    return BadUsage(fmt::format("{}: no such file; the stage file of stage {} is {}/{}", impl.source, stage.number,
                                stage.dir, stage.file));
  }
  CompilerSetup setup;
  setup.compiler = {WB_STUDENT_COMPILER};
  setup.flags = {WB_STUDENT_FLAGS};
  setup.contractsDir = Under(paths.sourceRoot, "contracts");
  setup.cacheDir = Under(paths.buildRoot, "student");
  // One cached build per stage and per tree, so graders can check many trees at once.
  const std::string tree = fsys::absolute(stagesDir).lexically_normal().string();
  const std::string cacheName =
      fmt::format("stage{:02}-{:08x}", stage.number, Fnv1a64(tree.data(), tree.size()) & 0xffffffffu);
  auto built = BuildStageHarness(setup, impl.source, driver.harnessLibrary, cacheName);
  if (!built.ok()) return built.error();
  impl.compiled = built->compiled;
  impl.compilerOutput = built->diagnostics;
  impl.harness = built->executable;
  return impl;
}

}  // namespace

WorkbookPaths DefaultPaths() {
  WorkbookPaths paths{WB_SOURCE_ROOT, WB_BUILD_ROOT};
  if (const char* root = std::getenv("WORKBOOK_ROOT")) paths.sourceRoot = root;
  return paths;
}

Expected<RunReport> RunCheck(const CheckOptions& o, const WorkbookPaths& paths) {
  auto table = LoadStageTable(Under(paths.sourceRoot, "data/stages.json"));
  if (!table.ok()) return table.error();
  const StageInfo* stage = table->Find(o.stage);
  if (stage == nullptr) return BadUsage(fmt::format("there is no stage {}; the stages are 1 to 5", o.stage));
  const StageDriver* driver = FindStageDriver(o.stage);
  if (!stage->available || driver == nullptr) {
    return BadUsage(fmt::format("stage {} ({}) is not in this workbook yet", o.stage, stage->title));
  }
  const std::string casesPath = o.casesPath.empty() ? Under(paths.sourceRoot, stage->visible) : o.casesPath;
  auto cases = LoadCaseFile(casesPath);
  if (!cases.ok()) return cases.error();
  if (cases->stage != o.stage) {
    return BadData(fmt::format("{}: field 'stage' is {}, but this is a check of stage {}", casesPath, cases->stage,
                               o.stage));
  }
  const std::string weightsPath = o.weightsPath.empty() ? std::string(WB_WEIGHTS_STAGE01) : o.weightsPath;
  auto weights = LoadBlockWeights(weightsPath);
  if (!weights.ok()) return weights.error();

  auto impl = PrepareImplementation(o, *stage, *driver, paths);
  if (!impl.ok()) return impl.error();

  RunReport report;
  report.stage = stage->number;
  report.stageTitle = stage->title;
  report.impl = impl->impl;
  report.source = Shown(impl->source, paths.sourceRoot);
  report.lesson = stage->lesson;
  report.caseFile = Shown(casesPath, paths.sourceRoot);
  if (const StageInfo* next = table->Next(stage->number)) {
    report.nextStage = next->available
                           ? fmt::format("stage {}: {} ({}): ./workbook check {}", next->number, next->title,
                                         next->lesson, next->number)
                           : fmt::format("stage {}, {}, is coming to this workbook.", next->number, next->title);
  }
  if (!impl->compiled) {
    report.status = RunStatus::kCompileError;
    report.compilerOutput = impl->compilerOutput;
    return report;
  }
  StageContext setup;
  setup.weights = &*weights;
  setup.harness = impl->harness;
  setup.lessonPath = stage->lesson;
  setup.limits.memoryBytes = o.memoryLimitMiB << 20;
  for (CaseSpec spec : cases->cases) {
    if (o.showHidden) spec.hidden = false;
    setup.limits.wallSeconds = o.timeLimitSeconds > 0 ? o.timeLimitSeconds : driver->defaultTimeLimit(spec);
    report.cases.push_back(driver->runCase(spec, setup));
  }
  report.status = RunStatus::kPass;
  for (const auto& c : report.cases) {
    if (c.status != CaseStatus::kPass) report.status = RunStatus::kFail;
  }
  return report;
}

int ExitCodeFor(const RunReport& report) { return report.status == RunStatus::kPass ? 0 : 1; }

}  // namespace wb
