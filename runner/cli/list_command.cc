// `workbook list`: every stage and how far your code gets, on one screen.
#include <memory>

#include <fmt/format.h>

#include "command.h"
#include "runner/report/report.h"
#include "runner/stages/check.h"
#include "runner/stages/stage_table.h"

namespace wb::cli {
namespace {

// A checkpoint counts when it passes in every visible case.
std::string Progress(const RunReport& report, const StageInfo& stage) {
  if (report.status == RunStatus::kCompileError) return "does not compile (./workbook check shows why)";
  const size_t total = stage.checkpoints.size();
  size_t passing = 0;
  std::string next;
  for (size_t i = 0; i < total; ++i) {
    bool everywhere = true;
    for (const auto& c : report.cases) {
      everywhere = everywhere && i < c.checkpoints.size() && c.checkpoints[i].status == CheckStatus::kPass;
    }
    if (everywhere) {
      ++passing;
    } else if (next.empty()) {
      next = stage.checkpoints[i];
    }
  }
  std::string bar(total, '.');
  for (size_t i = 0; i < passing; ++i) bar[i] = '#';
  std::string line = fmt::format("{:>2} / {:<2} checkpoints  [{}]", passing, total, bar);
  if (passing == total) return line + "  done";
  bool untouched = true;
  for (const auto& c : report.cases) untouched = untouched && c.status == CaseStatus::kNotImplemented;
  return line + (untouched ? "  not started" : fmt::format("  next: {}", next));
}

int RunList(const std::string& stagesDir) {
  const WorkbookPaths paths = DefaultPaths();
  auto table = LoadStageTable(paths.sourceRoot + "/data/stages.json");
  if (!table.ok()) return ReportError(table.error().message);
  std::printf("Decoder Workbook: your progress\n\n");
  for (const StageInfo& stage : table->stages) {
    std::string status = "coming";
    if (stage.available) {
      CheckOptions check;
      check.stage = stage.number;
      check.stagesDir = stagesDir;
      auto report = RunCheck(check, paths);
      status = report.ok() ? Progress(*report, stage) : "cannot be checked: " + report.error().message;
    }
    std::printf("  %d  %-30s %s\n", stage.number, stage.title.c_str(), status.c_str());
  }
  std::printf("\n./workbook check N checks stage N; ./workbook hint N gives a hint.\n");
  return kExitPass;
}

}  // namespace

Command AddListCommand(CLI::App& app) {
  auto stagesDir = std::make_shared<std::string>();
  CLI::App* c = app.add_subcommand("list", "Every stage and how many of its checkpoints your code passes");
  c->add_option("--stages-dir", *stagesDir, "List the progress of another stages/ tree");
  return {c, [stagesDir]() { return RunList(*stagesDir); }};
}

}  // namespace wb::cli
