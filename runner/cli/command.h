// One subcommand of the workbook CLI: its CLI11 parser and what runs when it was chosen.
// Each command lives in its own file and is registered in main.cc.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace wb::cli {

struct Command {
  CLI::App* parser = nullptr;
  std::function<int()> run;  // returns the exit status
};

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitBadUsage = 2;

// Prints "workbook: <message>" to stderr and returns kExitBadUsage.
int ReportError(const std::string& message);

// Writes text to stdout, or to `path` through a temporary file (no half-written report).
bool Emit(const std::string& text, const std::string& path);

Command AddCheckCommand(CLI::App& app);
Command AddHintCommand(CLI::App& app);
Command AddListCommand(CLI::App& app);
Command AddWatchCommand(CLI::App& app);
Command AddBenchCommand(CLI::App& app);
Command AddReferenceCommand(CLI::App& app);
Command AddInspectCommand(CLI::App& app);

}  // namespace wb::cli
