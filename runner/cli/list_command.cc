// `workbook list`: every stage and how far your code gets, on one screen.
//
// A plain `check N` of the student's own tree leaves its progress line in build/student
// (progress-stageNN-TREE.json) with a fingerprint of everything the line depends on: the
// stage's files, the visible suite, the stage table, the contract headers and the runner's
// executables. `list` shows a remembered line while its fingerprint still holds and checks
// the stage again otherwise, so after a check it answers at once and never shows a stale line.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "common/fnv1a.h"
#include "runner/report/report.h"
#include "runner/engine/check.h"
#include "runner/stages/stage_table.h"

namespace wb::cli {
namespace {

namespace fsys = std::filesystem;

// Whether checkpoint `cp` of case `c` counts as reached: a checkpoint the row lists under
// "guards" (one that checks what the code must leave alone, and so passes before anything
// is written) counts only when the same call wrote an element of a checkpoint it guards:
// one named as it is with the guarded name in place of its own, or a layer's of that call
// ("step2.cacheOtherRows" guards stage 2's "step2.kCache" and stage 5's "step2.layer1.kCache").
bool Reached(const CaseReport& c, const CheckpointReport& cp, const StageInfo& stage) {
  const std::optional<std::string> base = stage.BaseName(cp.name);
  if (!base) return true;
  const auto guard = stage.guards.find(*base);
  if (guard == stage.guards.end()) return true;
  if (cp.name.size() < base->size() || cp.name.compare(cp.name.size() - base->size(), base->size(), *base) != 0) {
    return true;
  }
  const std::string prefix = cp.name.substr(0, cp.name.size() - base->size());
  auto sibling = [&](const std::string& name, const std::string& guarded) {
    if (name == prefix + guarded) return true;
    const std::string layerPrefix = prefix + std::string(kLayerPrefix);
    return name.size() > layerPrefix.size() + guarded.size() && name.compare(0, layerPrefix.size(), layerPrefix) == 0 &&
           name.compare(name.size() - guarded.size() - 1, std::string::npos, "." + guarded) == 0;
  };
  for (const auto& other : c.checkpoints) {
    for (const auto& guarded : guard->second) {
      if (sibling(other.name, guarded) && other.unwritten < other.total) return true;
    }
  }
  return false;
}

// A checkpoint of the table counts when it passes, and was reached, in every visible case
// that reports it, in every call that reports it (stage 2's attnOut counts when
// step1.attnOut, step2.attnOut, ... all pass), and some case reports it (stage 5's
// experts, which only its mixture-of-experts cases have). "next" is the first failing
// checkpoint in report order (the first failing case's first failure), the one `check` and
// `hint` start from.
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
      for (const auto& cp : c.checkpoints) {
        if (stage.BaseName(cp.name) != name) continue;
        checkedSomewhere[name] = true;
        passes[name] = passes[name] && cp.status == CheckStatus::kPass && Reached(c, cp, stage);
      }
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

// The stage's tree, as the check of `stagesDir` reads it.
std::string StagesDirOf(const CheckOptions& o, const WorkbookPaths& paths) {
  return fsys::absolute(o.stagesDir.empty() ? paths.Source("stages") : o.stagesDir).lexically_normal().string();
}

std::string MemoPath(const CheckOptions& o, const WorkbookPaths& paths) {
  const std::string tree = StagesDirOf(o, paths);
  return paths.Build(fmt::format("student/progress-stage{:02}-{:08x}.json", o.stage,
                                 Fnv1a64(tree.data(), tree.size()) & 0xffffffffu));
}

// A check whose progress line is the one `list` would compute: the student's own stage files
// on the visible suite, with every option at its default.
bool IsPlainCheck(const CheckOptions& o) {
  const CheckOptions plain;
  return !o.solutions && !o.showHidden && o.casesPath.empty() && o.harness.empty() && o.weightsPath.empty() &&
         o.timeLimitSeconds == plain.timeLimitSeconds && o.memoryLimitMiB == plain.memoryLimitMiB &&
         !o.leaderboard && o.modelPath.empty() && o.kernels == plain.kernels && o.kernelFiles.empty();
}

// Everything a progress line depends on: the bytes of the stage's files, and the size and time
// of the visible suite, the stage table, the contract headers and the runner's executables.
uint64_t Fingerprint(const CheckOptions& o, const StageInfo& stage, const WorkbookPaths& paths) {
  uint64_t hash = Fnv1a64("progress", 8);
  auto addText = [&hash](const std::string& text) { hash = Fnv1a64(text.data(), text.size(), hash); };
  auto addStat = [&](const std::string& path) {
    struct stat st {};
    addText(path);
    if (stat(path.c_str(), &st) != 0) return addText("absent");
    addText(fmt::format("{}:{}.{}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec));
  };
  const std::string folder = StagesDirOf(o, paths) + "/" + stage.dir;
  for (const std::string& name : stage.files.empty() ? std::vector<std::string>{stage.file} : stage.files) {
    std::ifstream in(folder + "/" + name, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    addText(name);
    addText(in ? bytes.str() : std::string("absent"));
  }
  addStat(paths.Source(stage.visible));
  addStat(paths.Source("data/stages.json"));
  std::error_code ec;
  for (const auto& entry : fsys::directory_iterator(paths.Source("contracts"), ec)) addStat(entry.path().string());
  for (const char* exe : {"workbook", "workbook-decoder"}) addStat(paths.Build(exe));
  return hash;
}

std::optional<std::string> RememberedProgress(const CheckOptions& o, const StageInfo& stage,
                                              const WorkbookPaths& paths) {
  std::ifstream in(MemoPath(o, paths));
  if (!in) return std::nullopt;
  const nlohmann::json memo = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!memo.is_object() || !memo.contains("fingerprint") || !memo.contains("line")) return std::nullopt;
  if (!memo["fingerprint"].is_string() || !memo["line"].is_string()) return std::nullopt;
  if (memo["fingerprint"].get<std::string>() != fmt::format("{:016x}", Fingerprint(o, stage, paths))) {
    return std::nullopt;
  }
  return memo["line"].get<std::string>();
}

void WriteMemo(const CheckOptions& o, const StageInfo& stage, const WorkbookPaths& paths, const std::string& line) {
  const nlohmann::json memo = {{"fingerprint", fmt::format("{:016x}", Fingerprint(o, stage, paths))}, {"line", line}};
  // A memo is only a shortcut: one that cannot be written is simply not there next time.
  (void)Emit(memo.dump() + "\n", MemoPath(o, paths));
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
      if (auto remembered = RememberedProgress(check, stage, paths)) {
        status = *remembered;
      } else {
        auto report = RunCheck(check, paths);
        status = report.ok() ? Progress(*report, stage) : "cannot be checked: " + report.error().message;
        if (report.ok()) WriteMemo(check, stage, paths, status);
      }
    }
    std::printf("  %d  %-30s %s\n", stage.number, stage.title.c_str(), status.c_str());
  }
  std::printf("\n./workbook check N checks stage N; ./workbook hint N gives a hint.\n");
  return wb::kExitPass;
}

}  // namespace

void RememberProgress(const CheckOptions& check, const RunReport& report) {
  if (!IsPlainCheck(check)) return;
  const WorkbookPaths paths = DefaultPaths();
  auto table = LoadStageTable(paths.Source("data/stages.json"));
  if (!table.ok()) return;
  const StageInfo* stage = table->Find(check.stage);
  if (stage == nullptr) return;
  WriteMemo(check, *stage, paths, Progress(report, *stage));
}

Command AddListCommand(CLI::App& app) {
  auto stagesDir = std::make_shared<std::string>();
  CLI::App* c = app.add_subcommand("list", "Every stage and how many of its checkpoints your code passes");
  c->add_option("--stages-dir", *stagesDir, "List the progress of another stages/ tree");
  return {c, [stagesDir]() { return RunList(*stagesDir); }};
}

}  // namespace wb::cli
