// One subcommand of the workbook CLI: its CLI11 parser and what runs when it was chosen.
// Each command lives in its own file and is registered in main.cc.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "common/expected.h"

namespace wb::cli {

struct Command {
  CLI::App* parser = nullptr;
  std::function<int()> run;  // returns the exit status
};

// Prints "workbook: <message>" to stderr and returns the exit status of its kind
// (common/expected.h): 2 for bad usage or data, 3 for a failure of the system or the workbook.
int ReportError(const Error& error);
// A usage error: prints it and returns 2.
int ReportUsageError(const std::string& message);

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
