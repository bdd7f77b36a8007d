// The workbook's command line. The launcher ./workbook builds the workbook and runs this.
//
// Exit status (common/expected.h): 0 everything checked passed; 1 a checkpoint failed, or
// the student's code did not compile, crashed or hung; 2 bad usage or bad data (the message
// names the file); 3 the system refused something, or a bug in the workbook itself.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "command.h"

namespace wb::cli {

int ReportError(const Error& error) {
  std::fprintf(stderr, "workbook: %s\n", error.message.c_str());
  return ExitStatusOf(error.kind);
}

int ReportUsageError(const std::string& message) { return ReportError(BadUsage(message)); }

bool Emit(const std::string& text, const std::string& path) {
  if (path.empty()) return std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.good()) return false;
  }
  return std::rename(temporary.c_str(), path.c_str()) == 0;
}

}  // namespace wb::cli

int main(int argc, char** argv) {
  using namespace wb::cli;
  CLI::App app{"Decoder Workbook: build an LLM decoder one stage at a time.", "workbook"};
  app.require_subcommand(1);
  std::vector<Command> commands = {
      AddCheckCommand(app),
      AddWatchCommand(app),
      AddHintCommand(app),
      AddListCommand(app),
      AddBenchCommand(app),
      AddReferenceCommand(app),
      AddInspectCommand(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return wb::kExitBadInput;
  }
  for (const Command& command : commands) {
    if (command.parser->parsed()) return command.run();
  }
  return wb::kExitBadInput;
}
