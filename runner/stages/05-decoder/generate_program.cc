// The generate program a command runs: generate_program.h.
#include "generate_program.h"

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runner/engine/check.h"
#include "runner/engine/paths.h"
#include "runner/generate/generate_paths.h"
#include "runner/stages/stage_driver.h"
#include "runner/stages/stage_table.h"

namespace wb::stage05 {

namespace {
constexpr int kGenerateStage = 5;
}  // namespace

std::vector<std::string> ModelReadablePaths(const std::string& model) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (model.empty()) return {};
  std::vector<std::string> paths = {fs::absolute(model, ec).lexically_normal().string()};
  const auto add = [&](const fs::path& path) {
    if (!fs::is_symlink(fs::symlink_status(path, ec))) return;
    const fs::path target = fs::weakly_canonical(path, ec);
    if (!ec) paths.push_back(target.string());
  };
  add(paths.front());
  if (fs::is_directory(paths.front(), ec)) {
    for (const auto& entry : fs::directory_iterator(paths.front(), ec)) add(entry.path());
  }
  return paths;
}

// The program to run: prebuilt, or the stage file compiled against the generate library.
Expected<GenerateBinary> GenerateProgram(const GenerateChoice& choice) {
  const WorkbookPaths paths = DefaultPaths();
  auto table = LoadStageTable(paths.Source("data/stages.json"));
  if (!table.ok()) return table.error();
  const StageInfo* stage = table->Find(kGenerateStage);
  const StageBuild* build = FindStageBuild(kGenerateStage);
  if (stage == nullptr || build == nullptr) {
    return BadUsage("generate needs stage 5's runner: run it as ./workbook generate (the launcher builds it)");
  }
  if (choice.kernels != "mine" && choice.kernels != "solutions") {
    return BadUsage(fmt::format("--kernels is '{}'; it must be mine or solutions", choice.kernels));
  }
  CheckOptions o;
  o.stage = kGenerateStage;
  o.solutions = !choice.mine;
  o.stagesDir = choice.stagesDir;
  const std::string stagesDir = o.stagesDir.empty() ? paths.Source("stages") : o.stagesDir;
  if (choice.kernels == "mine") {
    for (const std::string& number : {std::string("3"), std::string("4")}) {
      const StageInfo* kernelStage = table->Find(std::stoi(number));
      if (kernelStage == nullptr) return InternalError(fmt::format("stage {} is not in the table", number));
      o.kernelFiles.push_back(fmt::format("{}/{}/{}", stagesDir, kernelStage->dir, kernelStage->file));
    }
  }
  StageBuild generateBuild = *build;
  generateBuild.harnessLibrary = WB_GENERATE_LIBRARY;
  generateBuild.mineKernelsHarnessLibrary = WB_GENERATE_MINE_KERNELS_LIBRARY;
  generateBuild.solutionHarness = WB_GENERATE_SOLUTION;
  // The generate program also links the tokenizers' ICU (stage 5's child does not).
  static const std::string linkArgs = std::string(build->childLinkArgs) + " " + WB_GENERATE_EXTRA_LINK_ARGS;
  generateBuild.childLinkArgs = linkArgs.c_str();
  auto impl = PrepareImplementation(o, *stage, generateBuild, paths);
  if (!impl.ok()) return impl.error();
  const std::string who = choice.mine ? "your decoder (stages/05-decoder)" : "the solution's decoder (solutions/05-decoder)";
  GenerateBinary program{impl->compiled ? impl->harness : "",
                  choice.kernels == "mine" ? who + " with your kernels (stages 3 and 4)" : who};
  if (!impl->compiled) {
    std::fprintf(stderr, "%s\n", impl->compilerOutput.c_str());
    std::fprintf(stderr, "workbook: %s\n",
                 (impl->compileStopped ? fmt::format("{}: the compiler ran past its time limit", impl->source)
                                       : fmt::format("{} does not compile (the compiler's messages are above)",
                                                     impl->source))
                     .c_str());
  }
  return program;
}

}  // namespace wb::stage05
