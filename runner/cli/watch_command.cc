// `workbook watch STAGE`: checks again every time you save your stage file.
//   --poll     watch by polling instead of inotify (network file systems, some containers)
//   --manual   no watching at all: press Enter to check again, q to stop
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "command.h"
#include "runner/report/renderers.h"
#include "runner/engine/check.h"
#include "runner/stages/stage_table.h"
#include "runner/watch/file_watcher.h"

namespace wb::cli {
namespace {

struct WatchOptions {
  CheckOptions check;
  bool manual = false;
  bool poll = false;
  bool verbose = false;  // the text report in full (TextStyle::verbose)
  int maxRuns = 0;  // 0: until stopped (the tests stop it after a few)
};

int RunWatch(const WatchOptions& o) {
  const WorkbookPaths paths = DefaultPaths();
  auto table = LoadStageTable(paths.sourceRoot + "/data/stages.json");
  if (!table.ok()) return ReportError(table.error());
  const StageInfo* stage = table->Find(o.check.stage);
  if (stage == nullptr || !stage->available) {
    return ReportUsageError(fmt::format("stage {} is not in this workbook yet", o.check.stage));
  }
  const std::string stagesDir = o.check.stagesDir.empty() ? paths.sourceRoot + "/stages" : o.check.stagesDir;
  const std::string file = fmt::format("{}/{}/{}", stagesDir, stage->dir, stage->file);
  std::unique_ptr<FileWatcher> watcher;
  if (!o.manual) {
    auto watched = FileWatcher::Watch(file, o.poll);
    if (!watched.ok()) return ReportError(watched.error());
    watcher = std::make_unique<FileWatcher>(std::move(*watched));
  }
  TextStyle style = DetectTextStyle();
  style.verbose = o.verbose;
  for (int run = 1;; ++run) {
    if (isatty(STDOUT_FILENO) == 1) std::fputs("\033[2J\033[H", stdout);  // a fresh screen per run
    auto report = RunCheck(o.check, paths);
    if (report.ok()) {
      RememberProgress(o.check, *report);
      std::fputs(RenderText(*report, style).c_str(), stdout);
    } else {
      std::fprintf(stdout, "workbook: %s\n", report.error().message.c_str());
    }
    if (o.maxRuns > 0 && run >= o.maxRuns) return wb::kExitPass;
    if (o.manual) {
      std::printf("\nPress Enter to check again, or q and Enter to stop. ");
      std::fflush(stdout);
      std::string line;
      if (!std::getline(std::cin, line) || line == "q") return wb::kExitPass;
      continue;
    }
    std::printf("\nWatching %s for changes (%s); Ctrl-C stops.\n", file.c_str(),
                watcher->mode() == FileWatcher::Mode::kInotify ? "inotify" : "polling");
    std::fflush(stdout);
    watcher->WaitForChange();
  }
}

}  // namespace

Command AddWatchCommand(CLI::App& app) {
  auto o = std::make_shared<WatchOptions>();
  CLI::App* c = app.add_subcommand("watch", "Check a stage again every time you save its file");
  c->add_option("stage", o->check.stage, "Stage number")->required();
  c->add_option("--cases", o->check.casesPath, "A case file (default: the stage's visible suite)");
  c->add_option("--stages-dir", o->check.stagesDir, "Watch the stage file of another stages/ tree");
  c->add_flag("--manual", o->manual, "Do not watch: press Enter to check again");
  c->add_flag("--poll", o->poll, "Watch by polling the file instead of inotify");
  c->add_flag("--verbose", o->verbose, "Show every buffer in full, as check --verbose does");
  c->add_option("--max-runs", o->maxRuns, "Stop after this many checks (for scripts and tests)");
  return {c, [o]() { return RunWatch(*o); }};
}

}  // namespace wb::cli
