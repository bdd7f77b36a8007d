// The workbook's command line. The launcher ./workbook builds the workbook and runs this.
//
// Exit status (common/expected.h): 0 everything checked passed; 1 a checkpoint failed, or
// the student's code did not compile, crashed or hung; 2 bad usage or bad data (the message
// names the file); 3 the system refused something, or a bug in the workbook itself.
//
// `inspect` and `reference` are the model library's front ends. They live in a second
// executable, workbook-models (runner/cli/models_main.cc), next to this one, so that a
// student's first `check` does not wait for the model-file readers and the eight-family
// reference to compile; this executable hands those two commands over to it unchanged.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "runner/stages/stage_driver.h"

#include "command.h"

namespace wb::cli {
namespace {

constexpr std::string_view kModelCommands[] = {"inspect", "reference", "convert"};

bool IsModelCommand(std::string_view name) {
  for (std::string_view command : kModelCommands) {
    if (name == command) return true;
  }
  return false;
}

// Replaces this process with `program`, the executable beside this one that has the command
// (built on its first use as ninja's `target`), same arguments; returns only on failure.
int HandOver(char** argv, const char* program, const char* target) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path other = (ec ? std::filesystem::path(argv[0]) : self).parent_path() / program;
  ::execv(other.c_str(), argv);
  if (errno == ENOENT) {
    return ReportUsageError(fmt::format("`{}` needs {}, which is built on first use: run it as ./workbook {} "
                                        "(the launcher builds it), or build it with `ninja -C {} {}`",
                                        argv[1], other.string(), argv[1], other.parent_path().string(), target));
  }
  return ReportError(SystemError(fmt::format("cannot run {}: {}", other.string(), std::strerror(errno))));
}

// The stage a stage command names (its first argument made of digits), or 0.
int StageArgument(int argc, char** argv) {
  static constexpr std::string_view kStageCommands[] = {"check", "watch", "hint", "bench"};
  if (argc < 3 || std::find(std::begin(kStageCommands), std::end(kStageCommands), argv[1]) == std::end(kStageCommands)) {
    return 0;
  }
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.empty() && arg.size() < 4 && std::all_of(arg.begin(), arg.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::stoi(std::string(arg));
    }
  }
  return 0;
}

// Whether this is `workbook` asked about a heavy stage, which workbook-decoder has; or asked
// for `list` of every stage when workbook-decoder has been built (it lists them all).
bool IsHeavyStageCommand(int argc, char** argv) {
  if (!wb::HeavyStageBuilds().empty()) return false;  // this is workbook-decoder
  if (argc > 1 && std::string_view(argv[1]) == "generate") return true;  // stage 5's decoder writes text
  if (argc > 1 && std::string_view(argv[1]) == "list") {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return !ec && !wb::HeavyStageNumbers().empty() && std::filesystem::exists(self.parent_path() / "workbook-decoder");
  }
  const int stage = StageArgument(argc, argv);
  const auto heavy = wb::HeavyStageNumbers();
  return stage > 0 && std::find(heavy.begin(), heavy.end(), stage) != heavy.end();
}

// The model commands in this executable's help, with workbook-models' own summaries.
void ListModelCommands(CLI::App& app) {
  app.add_subcommand("inspect", kInspectSummary);
  app.add_subcommand("reference", kReferenceSummary);
  app.add_subcommand("convert", kConvertSummary);
}

}  // namespace
}  // namespace wb::cli

int main(int argc, char** argv) {
  using namespace wb::cli;
  if (argc > 1 && IsModelCommand(argv[1])) return HandOver(argv, "workbook-models", "workbook-models");
  if (IsHeavyStageCommand(argc, argv)) {
    const bool generate = std::string_view(argv[1]) == "generate";
    return HandOver(argv, "workbook-decoder", generate ? "generate-ready" : "decoder-ready");
  }
  CLI::App app{"Decoder Workbook: build an LLM decoder one stage at a time.", "workbook"};
  app.require_subcommand(1);
  std::vector<Command> commands = {
      AddCheckCommand(app),
      AddWatchCommand(app),
      AddHintCommand(app),
      AddListCommand(app),
      AddBenchCommand(app),
      AddGradeCommand(app),
  };
  if (!wb::HeavyStageBuilds().empty()) {
    commands.push_back(AddGenerateCommand(app));
  } else {
    app.add_subcommand("generate", kGenerateSummary);  // handed over to workbook-decoder
  }
  ListModelCommands(app);
  return ParseAndRun(app, commands, argc, argv);
}
