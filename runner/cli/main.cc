// The workbook's command line. The launcher ./workbook builds the workbook and runs this.
//
// Exit status: 0 everything checked passed; 1 a checkpoint failed, or the student's code
// did not compile, crashed or hung; 2 bad usage or bad data (the message names the file).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "runner/report/renderers.h"
#include "runner/stages/check.h"

namespace {

constexpr int kExitBadUsage = 2;

int Fail(const wb::Error& e) {
  std::fprintf(stderr, "workbook: %s\n", e.message.c_str());
  return e.kind == wb::ErrorKind::kInternal || e.kind == wb::ErrorKind::kSystem ? kExitBadUsage : kExitBadUsage;
}

// Writes text to `path` through a temporary file, so a reader never sees half a report.
bool WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.good()) return false;
  }
  return std::rename(temporary.c_str(), path.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Decoder Workbook: build an LLM decoder one stage at a time.", "workbook"};
  app.require_subcommand(1);

  wb::CheckOptions check;
  std::string format = "text";
  std::string outputPath;
  CLI::App* checkCommand = app.add_subcommand("check", "Check a stage's buffers against the float64 reference");
  checkCommand->add_option("stage", check.stage, "Stage number (1 to 5)")->required();
  checkCommand->add_flag("--solutions", check.solutions, "Check the solutions/ twin instead of your stages/ file");
  checkCommand->add_option("--cases", check.casesPath, "A case file (default: the stage's visible suite)");
  checkCommand->add_option("--format", format, "Report format")->check(CLI::IsMember({"text", "json"}));
  checkCommand->add_option("--output", outputPath, "Write the report to FILE instead of stdout");
  checkCommand->add_option("--stages-dir", check.stagesDir, "Check the stage file of another stages/ tree");
  checkCommand->add_option("--harness", check.harness, "Run a prebuilt child executable (the workbook's tests)");
  checkCommand->add_option("--weights", check.weightsPath, "Use another packed weight file");
  checkCommand->add_option("--time-limit", check.timeLimitSeconds, "Seconds per case (default: 10, more for long T)")
      ->check(CLI::PositiveNumber);
  checkCommand->add_option("--memory-limit", check.memoryLimitMiB, "MiB your code may allocate (default 1024)")
      ->check(CLI::PositiveNumber);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadUsage;
  }

  if (checkCommand->parsed()) {
    auto report = wb::RunCheck(check, wb::DefaultPaths());
    if (!report.ok()) return Fail(report.error());
    const std::string text = format == "json" ? wb::RenderJson(*report)
                                              : wb::RenderText(*report, outputPath.empty() ? wb::DetectTextStyle()
                                                                                            : wb::TextStyle{});
    if (outputPath.empty()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else if (!WriteFileAtomically(outputPath, text)) {
      return Fail(wb::BadUsage(fmt::format("{}: cannot write the report", outputPath)));
    }
    return wb::ExitCodeFor(*report);
  }
  return kExitBadUsage;
}
