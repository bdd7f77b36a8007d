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
#include "runner/stages/05-decoder/generate_program.h"
#include "runner/generate/generate_paths.h"
#include "runner/isolation/child_process.h"
#include "runner/engine/check.h"
#include "runner/engine/paths.h"
#include "runner/generate/generate_options.h"
#include "runner/stages/stage_driver.h"
#include "runner/stages/stage_table.h"

namespace wb::cli {

using stage05::GenerateChoice;
using stage05::GenerateProgram;
using stage05::ModelReadablePaths;

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
