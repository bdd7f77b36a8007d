// One subcommand of the workbook CLI: its CLI11 parser and what runs when it was chosen.
// Each command lives in its own file and is registered in main.cc or models_main.cc.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/expected.h"

namespace wb {
struct CheckOptions;
struct RunReport;
}  // namespace wb

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

// Parses argv into one of the commands and runs it; the exit status of a parse error is 2.
int ParseAndRun(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv);

// After a check: keeps its progress line for `list` when the check was a plain one of the
// student's own tree (runner/cli/list_command.cc says what the line depends on).
void RememberProgress(const CheckOptions& check, const RunReport& report);

// The runner's commands (workbook, runner/cli/main.cc).
Command AddCheckCommand(CLI::App& app);
Command AddHintCommand(CLI::App& app);
Command AddListCommand(CLI::App& app);
Command AddWatchCommand(CLI::App& app);
Command AddBenchCommand(CLI::App& app);
Command AddGradeCommand(CLI::App& app);
// `generate`, which workbook-decoder runs (`workbook` hands it over, as a heavy stage's command).
inline constexpr const char* kGenerateSummary = "Your decoder writes text: a prompt, sampling, tokens/s";
Command AddGenerateCommand(CLI::App& app);

// The model library's commands (workbook-models, runner/cli/models_main.cc); `workbook`
// lists them with these summaries and hands them over.
inline constexpr const char* kInspectSummary = "Show what a GGUF file or Hugging Face checkpoint holds";
inline constexpr const char* kReferenceSummary = "Print the float64 reference decoder's logits for a prompt";
inline constexpr const char* kConvertSummary = "Write a Hugging Face checkpoint as a GGUF file (f16, q8_0 or q4_0)";
Command AddReferenceCommand(CLI::App& app);
Command AddInspectCommand(CLI::App& app);
Command AddConvertCommand(CLI::App& app);

}  // namespace wb::cli
