// `workbook list`: every stage and how far your code gets, on one screen.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "command.h"
#include "runner/report/report.h"
#include "runner/engine/check.h"
#include "runner/stages/stage_table.h"

namespace wb::cli {
namespace {

// Whether checkpoint `cp` of case `c` counts as reached: a checkpoint the row lists under
// "guards" (one that checks what the code must leave alone, and so passes before anything
// is written) counts in a call only when that call wrote an element of a checkpoint it guards.
bool Reached(const CaseReport& c, const CheckpointReport& cp, const StageInfo& stage) {
  const std::optional<std::string> base = stage.BaseName(cp.name);
  if (!base) return true;
  const auto guard = stage.guards.find(*base);
  if (guard == stage.guards.end()) return true;
  for (int call = 1; call <= static_cast<int>(c.checkpoints.size()); ++call) {
    if (stage.Reported(*base, call) != cp.name) continue;
    for (const auto& other : c.checkpoints) {
      for (const auto& guarded : guard->second) {
        if (other.name == stage.Reported(guarded, call) && other.unwritten < other.total) return true;
      }
    }
    return false;
  }
  return true;
}

// A checkpoint of the table counts when it passes, and was reached, in every visible case,
// in every call that reports it (stage 2's attnOut counts when step1.attnOut,
// step2.attnOut, ... all pass). "next" is the first failing checkpoint in report order (the
// first failing case's first failure), the one `check` and `hint` start from.
std::string Progress(const RunReport& report, const StageInfo& stage) {
  if (report.status == RunStatus::kCompileError) return "does not compile (./workbook check shows why)";
  const std::vector<std::string> names = stage.AllCheckpoints();
  std::map<std::string, bool> passes;
  std::map<std::string, bool> checkedSomewhere;
  for (const auto& name : names) passes[name] = !report.cases.empty();
  for (const auto& c : report.cases) {
    // A kernel case (stage 3's) reports its kernel's checkpoint alone; any other case
    // reports the row's other checkpoints. A case is held only to the ones it reports.
    const KernelInfo* kernel = c.checkpoints.empty() ? nullptr : stage.FindKernel(c.checkpoints.front().name);
    for (const auto& name : names) {
      if (!stage.kernels.empty() && (kernel != nullptr ? name != kernel->name : stage.FindKernel(name) != nullptr)) {
        continue;
      }
      checkedSomewhere[name] = true;
      bool reported = false;
      for (const auto& cp : c.checkpoints) {
        if (stage.BaseName(cp.name) != name) continue;
        reported = true;
        passes[name] = passes[name] && cp.status == CheckStatus::kPass && Reached(c, cp, stage);
      }
      passes[name] = passes[name] && reported;
    }
  }
  for (const auto& name : names) passes[name] = passes[name] && checkedSomewhere[name];
  size_t passing = 0;
  std::string next;
  std::string bar;
  for (const auto& name : names) {
    bar += passes[name] ? '#' : '.';
    if (passes[name]) ++passing;
  }
  for (const auto& c : report.cases) {
    if (c.status == CaseStatus::kPass || !c.firstFailure) continue;
    next = stage.BaseName(*c.firstFailure).value_or(*c.firstFailure);
    break;
  }
  if (next.empty()) {  // no case names a failing checkpoint: the first one not counted
    for (const auto& name : names) {
      if (!passes[name]) {
        next = name;
        break;
      }
    }
  }
  std::string line = fmt::format("{:>2} / {:<2} checkpoints  [{}]", passing, names.size(), bar);
  if (report.status == RunStatus::kPass) return line + "  done";
  bool untouched = true;
  for (const auto& c : report.cases) untouched = untouched && c.status == CaseStatus::kNotImplemented;
  if (untouched) return line + "  not started";
  if (next.empty()) return line + fmt::format("  not done: ./workbook check {} says why", stage.number);
  return line + fmt::format("  next: {}", next);
}

int RunList(const std::string& stagesDir) {
  const WorkbookPaths paths = DefaultPaths();
  auto table = LoadStageTable(paths.Source("data/stages.json"));
  if (!table.ok()) return ReportError(table.error());
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
  return wb::kExitPass;
}

}  // namespace

Command AddListCommand(CLI::App& app) {
  auto stagesDir = std::make_shared<std::string>();
  CLI::App* c = app.add_subcommand("list", "Every stage and how many of its checkpoints your code passes");
  c->add_option("--stages-dir", *stagesDir, "List the progress of another stages/ tree");
  return {c, [stagesDir]() { return RunList(*stagesDir); }};
}

}  // namespace wb::cli
