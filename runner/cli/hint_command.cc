// `workbook hint STAGE [CHECKPOINT]`: graded hints, one more per call, never code.
// Without a checkpoint it hints at the first one your code gets wrong, or, when the runner
// recognises the mistake there (a misconception of its catalogues), at that mistake: the
// table's misconception_hints. A checkpoint may be named as reported ("step2.attnOut") or as
// the table lists it ("attnOut"), and a mistake by its id. The record of hints shown is per
// stage and per checkpoint or mistake.
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// What a hint call shows: the hints of one checkpoint, or of one diagnosed mistake.
struct HintTopic {
  std::string key;    // the hint record's key: the checkpoint's table name, or the mistake's id
  const std::vector<std::string>* hints = nullptr;
  std::string intro;  // printed before the hints ("" for none)
  std::string readMore;  // where the last hint points
};

// The table's name of `name`: a checkpoint as reported ("step2.attnOut") or as the table
// lists it ("attnOut"); nullopt when it is neither.
std::optional<std::string> CheckpointNamed(const StageInfo& stage, const std::string& name) {
  if (auto base = stage.BaseName(name)) return base;
  for (const auto& n : stage.AllCheckpoints()) {
    if (n == name) return n;
  }
  return std::nullopt;
}

Expected<HintTopic> CheckpointTopic(const StageInfo& stage, const std::string& checkpoint) {
  const auto hints = stage.hints.find(checkpoint);
  if (hints == stage.hints.end()) {
    return InternalError(fmt::format("data/stages.json has no hints for {} of stage {}: this is a bug in the "
                                     "workbook; the lesson explains it: {}",
                                     checkpoint, stage.number, stage.lesson));
  }
  return HintTopic{.key = checkpoint, .hints = &hints->second, .intro = "", .readMore = stage.lesson};
}

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

  HintTopic topic;
  if (!o.checkpoint.empty()) {
    // A checkpoint, with or without its call ("step2.attnOut" or "attnOut"), or a mistake's id.
    if (const auto checkpoint = CheckpointNamed(*stage, o.checkpoint)) {
      auto found = CheckpointTopic(*stage, *checkpoint);
      if (!found.ok()) return ReportError(found.error());
      topic = *found;
    } else if (const auto mistake = table->misconceptionHints.find(o.checkpoint);
               mistake != table->misconceptionHints.end()) {
      topic = {.key = mistake->first, .hints = &mistake->second, .intro = "", .readMore = stage->lesson};
    } else {
      std::string names;
      for (const auto& n : stage->AllCheckpoints()) names += (names.empty() ? "" : ", ") + n;
      return ReportUsageError(fmt::format("stage {} has no checkpoint '{}'; its checkpoints are {} (or give the id "
                                          "of a mistake `check` named)",
                                          o.stage, o.checkpoint, names));
    }
  } else {
    CheckOptions check;
    check.stage = o.stage;
    check.stagesDir = o.stagesDir;
    auto report = RunCheck(check, paths);
    if (!report.ok()) return ReportError(report.error());
    RememberProgress(check, *report);
    if (report->status == RunStatus::kCompileError) {
      std::printf("Your %s does not compile yet: `./workbook check %d` shows the compiler's first error.\n",
                  report->source.c_str(), o.stage);
      return wb::kExitPass;
    }
    const CheckpointReport* failing = nullptr;
    for (const auto& c : report->cases) {
      if (!c.firstFailure) continue;
      for (const auto& cp : c.checkpoints) {
        if (cp.name == *c.firstFailure) failing = &cp;
      }
      if (failing != nullptr) break;
    }
    if (failing == nullptr) {
      if (report->status == RunStatus::kPass) {
        std::printf("Every checkpoint of stage %d passes: no hint needed.\n", o.stage);
      } else {
        std::printf("Every checkpoint of stage %d is right, yet a case fails: `./workbook check %d` says why.\n",
                    o.stage, o.stage);
      }
      return wb::kExitPass;
    }
    const std::optional<std::string> checkpoint = stage->BaseName(failing->name);
    if (!checkpoint) {
      return ReportError(InternalError(fmt::format("stage {} reported a checkpoint '{}' that data/stages.json does "
                                                   "not list: this is a bug in the workbook",
                                                   o.stage, failing->name)));
    }
    // The diagnosed mistake, when the runner named one and the table has hints for it;
    // otherwise the checkpoint's own hints.
    const auto mistake = failing->misconception
                             ? table->misconceptionHints.find(failing->misconception->id)
                             : table->misconceptionHints.end();
    if (mistake != table->misconceptionHints.end()) {
      topic = {.key = mistake->first,
               .hints = &mistake->second,
               .intro = fmt::format("The first wrong buffer is {}, and the runner recognises the mistake ({}): {}\n\n",
                                    failing->name, mistake->first, failing->misconception->sentence),
               .readMore = failing->misconception->lesson.empty() ? stage->lesson : failing->misconception->lesson};
    } else {
      auto found = CheckpointTopic(*stage, *checkpoint);
      if (!found.ok()) return ReportError(found.error());
      topic = *found;
    }
  }

  const int total = static_cast<int>(topic.hints->size());
  const int already = state->Shown(o.stage, topic.key);
  const int show = std::min(already + 1, total);
  std::fputs(topic.intro.c_str(), stdout);
  std::printf("Hints for %s (stage %d), %d of %d:\n\n", topic.key.c_str(), o.stage, show, total);
  for (int i = 0; i < show; ++i) std::printf("%d. %s\n\n", i + 1, (*topic.hints)[i].c_str());
  if (already >= total) {
    std::printf("That is every hint for %s. The lesson explains it step by step: %s\n", topic.key.c_str(),
                topic.readMore.c_str());
  } else if (show < total) {
    std::printf("Run the same command again for the next hint.\n");
  }
  state->SetShown(o.stage, topic.key, show);
  if (auto saved = state->Save(); !saved.ok()) return ReportError(saved.error());
  return wb::kExitPass;
}

}  // namespace

Command AddHintCommand(CLI::App& app) {
  auto o = std::make_shared<HintOptions>();
  CLI::App* c = app.add_subcommand("hint", "One more hint for a checkpoint (default: your first failing one)");
  c->add_option("stage", o->stage, "Stage number")->required();
  c->add_option("checkpoint", o->checkpoint, "Checkpoint name (e.g. q, attnOut or step2.attnOut) or a mistake's id");
  c->add_option("--stages-dir", o->stagesDir, "Find the first failure in another stages/ tree");
  c->add_flag("--reset", o->reset, "Start this stage's hints over");
  return {c, [o]() { return RunHint(*o); }};
}

}  // namespace wb::cli
