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

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "command.h"

namespace wb::cli {
namespace {

constexpr std::string_view kModelCommands[] = {"inspect", "reference"};

bool IsModelCommand(std::string_view name) {
  for (std::string_view command : kModelCommands) {
    if (name == command) return true;
  }
  return false;
}

// Replaces this process with workbook-models, same arguments; returns only on failure.
int HandOverToModelTools(char** argv) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path tools = (ec ? std::filesystem::path(argv[0]) : self).parent_path() / "workbook-models";
  ::execv(tools.c_str(), argv);
  if (errno == ENOENT) {
    return ReportUsageError(fmt::format("`{}` needs {}, which is built on first use: run it as ./workbook {} "
                                        "(the launcher builds it), or build it with `ninja -C {} workbook-models`",
                                        argv[1], tools.string(), argv[1], tools.parent_path().string()));
  }
  return ReportError(SystemError(fmt::format("cannot run {}: {}", tools.string(), std::strerror(errno))));
}

// The model commands in this executable's help, with workbook-models' own summaries.
void ListModelCommands(CLI::App& app) {
  app.add_subcommand("inspect", kInspectSummary);
  app.add_subcommand("reference", kReferenceSummary);
}

}  // namespace
}  // namespace wb::cli

int main(int argc, char** argv) {
  using namespace wb::cli;
  if (argc > 1 && IsModelCommand(argv[1])) return HandOverToModelTools(argv);
  CLI::App app{"Decoder Workbook: build an LLM decoder one stage at a time.", "workbook"};
  app.require_subcommand(1);
  std::vector<Command> commands = {
      AddCheckCommand(app),
      AddWatchCommand(app),
      AddHintCommand(app),
      AddListCommand(app),
      AddBenchCommand(app),
  };
  ListModelCommands(app);
  return ParseAndRun(app, commands, argc, argv);
}
