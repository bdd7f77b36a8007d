// `workbook hint STAGE [CHECKPOINT]`: graded hints, one more per call, never code.
// Without a checkpoint it hints at the first one your code gets wrong.
#include <cstdlib>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "command.h"
#include "runner/engine/check.h"
#include "hint_state.h"
#include "runner/stages/stage_table.h"

namespace wb::cli {
namespace {

struct HintOptions {
  int stage = 0;
  std::string checkpoint;
  std::string stagesDir;
  bool reset = false;
};

int RunHint(const HintOptions& o) {
  const WorkbookPaths paths = DefaultPaths();
  auto table = LoadStageTable(paths.Source("data/stages.json"));
  if (!table.ok()) return ReportError(table.error());
  const StageInfo* stage = table->Find(o.stage);
  if (stage == nullptr || !stage->available) {
    return ReportUsageError(fmt::format("stage {} has no hints: it is not in this workbook yet", o.stage));
  }
  // Where the count of hints shown is kept: the build folder, unless WORKBOOK_HINT_STATE says.
  const char* statePath = std::getenv("WORKBOOK_HINT_STATE");
  auto state = HintState::Load(statePath != nullptr ? statePath : paths.buildRoot + "/hints-shown.json");
  if (!state.ok()) return ReportError(state.error());
  if (o.reset) {
    state->Reset(o.stage);
    if (auto saved = state->Save(); !saved.ok()) return ReportError(saved.error());
    std::printf("The hints of stage %d start over.\n", o.stage);
    return wb::kExitPass;
  }

  std::string checkpoint = o.checkpoint;
  if (checkpoint.empty()) {
    CheckOptions check;
    check.stage = o.stage;
    check.stagesDir = o.stagesDir;
    auto report = RunCheck(check, paths);
    if (!report.ok()) return ReportError(report.error());
    if (report->status == RunStatus::kCompileError) {
      std::printf("Your %s does not compile yet: `./workbook check %d` shows the compiler's first error.\n",
                  report->source.c_str(), o.stage);
      return wb::kExitPass;
    }
    for (const auto& c : report->cases) {
      if (c.firstFailure) {
        checkpoint = *c.firstFailure;
        break;
      }
    }
    if (checkpoint.empty()) {
      std::printf("Every checkpoint of stage %d passes: no hint needed.\n", o.stage);
      return wb::kExitPass;
    }
  }
  // A reported name ("step2.attnOut") has the hints of its checkpoint in the table ("attnOut").
  const std::optional<std::string> base = stage->BaseName(checkpoint);
  const auto hints = base ? stage->hints.find(*base) : stage->hints.end();
  if (hints == stage->hints.end()) {
    std::string names;
    for (const auto& n : stage->AllCheckpoints()) names += (names.empty() ? "" : ", ") + n;
    if (base) {
      return ReportError(InternalError(fmt::format("data/stages.json has no hints for {} of stage {}: this is a bug "
                                                   "in the workbook; the lesson explains it: {}",
                                                   *base, o.stage, stage->lesson)));
    }
    return ReportUsageError(fmt::format("stage {} has no checkpoint '{}'; its checkpoints are {}", o.stage, checkpoint,
                                        names));
  }
  checkpoint = *base;
  const int total = static_cast<int>(hints->second.size());
  const int already = state->Shown(o.stage, checkpoint);
  const int show = std::min(already + 1, total);
  std::printf("Hints for %s (stage %d), %d of %d:\n\n", checkpoint.c_str(), o.stage, show, total);
  for (int i = 0; i < show; ++i) std::printf("%d. %s\n\n", i + 1, hints->second[i].c_str());
  if (already >= total) {
    std::printf("That is every hint for %s. The lesson explains it step by step: %s\n", checkpoint.c_str(),
                stage->lesson.c_str());
  } else if (show < total) {
    std::printf("Run the same command again for the next hint.\n");
  }
  state->SetShown(o.stage, checkpoint, show);
  if (auto saved = state->Save(); !saved.ok()) return ReportError(saved.error());
  return wb::kExitPass;
}

}  // namespace

Command AddHintCommand(CLI::App& app) {
  auto o = std::make_shared<HintOptions>();
  CLI::App* c = app.add_subcommand("hint", "One more hint for a checkpoint (default: your first failing one)");
  c->add_option("stage", o->stage, "Stage number")->required();
  c->add_option("checkpoint", o->checkpoint, "Checkpoint name, e.g. q");
  c->add_option("--stages-dir", o->stagesDir, "Find the first failure in another stages/ tree");
  c->add_flag("--reset", o->reset, "Start this stage's hints over");
  return {c, [o]() { return RunHint(*o); }};
}

}  // namespace wb::cli
