// What every front end of the workbook shares: how an error is printed and how a report is
// written (runner/cli/command.h).
#include <cstdio>
#include <fstream>
#include <string>

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

int ParseAndRun(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv) {
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

}  // namespace wb::cli
