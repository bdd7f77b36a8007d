// `workbook generate --model PATH --prompt TEXT [-n N] [--seed S] ... [--mine] [--kernels mine]`:
// a decoder writes text. The options are the generate program's (runner/generate/
// generate_options.h); this command checks them, picks the program and runs it in place of
// itself, so text streams straight to the terminal and Ctrl-C reaches it:
//   - by default the solution's decoder, prebuilt (workbook-generate-solution);
//   - --mine: the student's stages/05-decoder/decoder.cc, compiled against the generate
//     program's library as `check 5` compiles it (cached; a file that does not compile is
//     reported with the compiler's messages, exit 1);
//   - --kernels mine: with the student's own stage-3 and stage-4 kernels linked in instead of
//     the solutions' (as `check 5 --kernels mine`).
// The student's code runs here as a program of theirs, not under the check's sandbox:
// generate grades nothing.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <csignal>
#include <filesystem>

#include <fmt/format.h>

#include "command.h"
#include "generate_program.h"
#include "runner/generate/generate_paths.h"
#include "runner/isolation/child_process.h"
#include "runner/engine/check.h"
#include "runner/engine/paths.h"
#include "runner/generate/generate_options.h"
#include "runner/stages/stage_driver.h"
#include "runner/stages/stage_table.h"

namespace wb::cli {

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

Command AddGenerateCommand(CLI::App& app) {
  auto settings = std::make_shared<generate::GenerateSettings>();
  auto choice = std::make_shared<GenerateChoice>();
  CLI::App* c = app.add_subcommand("generate", kGenerateSummary);
  generate::AddGenerateOptions(*c, *settings);
  c->add_flag("--mine", choice->mine, "Your decoder (stages/05-decoder), compiled as check 5 compiles it");
  c->add_flag("--solutions", choice->solutions, "The solution's decoder (the default)");
  c->add_option("--kernels", choice->kernels, "mine: link your stage-3 and stage-4 kernels instead of the solutions'")
      ->capture_default_str();
  c->add_option("--stages", choice->stagesDir, "Another tree's stages/ folder (with --mine)");
  return {c, [settings, choice]() {
            if (choice->mine && choice->solutions) return ReportUsageError("--mine and --solutions: choose one");
            auto program = GenerateProgram(*choice);
            if (!program) return ReportError(program.error());
            if (program->path.empty()) return kExitFail;
            if (::access(program->path.c_str(), X_OK) != 0) {
              return ReportUsageError(fmt::format("{} is built on first use: run ./workbook generate (the launcher "
                                                  "builds it), or build it with `ninja -C build generate-ready`",
                                                  program->path));
            }
            settings->decoderName = program->decoderName;
            // The decoder runs confined, as check's child does: it reads the model and nothing
            // else of the caller's, from "/", so the model's path is made absolute.
            std::vector<std::string> readable = ModelReadablePaths(settings->model);
            if (!readable.empty()) settings->model = readable.front();
            // --messages: the one other file it reads, by its absolute path.
            if (!settings->messages.empty()) {
              std::error_code ec;
              settings->messages = std::filesystem::absolute(settings->messages, ec).lexically_normal().string();
              readable.push_back(settings->messages);
            }
            std::vector<std::string> args = generate::ToArguments(*settings);
            args.insert(args.begin(), program->path);
            auto ran = RunConfinedProgram(
                args, {.wallSeconds = 0, .memoryBytes = 0, .readablePaths = readable, .kernelVersion = ""}, STDOUT_FILENO);
            if (!ran.ok()) return ReportError(ran.error());
            return ran->interrupted && ran->exitStatus == 128 + SIGINT ? kExitFail : ran->exitStatus;
          }};
}

}  // namespace wb::cli
