// `workbook bench STAGE`: validate, then time (llm.c's dev/cuda order). The student's stage
// file (or, with --solutions, the solution) is checked on the stage's visible suite first: a
// kernel that gets the wrong answer is not timed. Then the stage's driver times it
// (StageDriver::Bench): built into the stage's bench child where the stage has one
// (StageBuild::benchHarnessLibrary), else with what the driver builds itself (the heavy
// stage's generate program). The command knows no stage by number: which stages have a bench,
// and which stage-specific options each takes, the drivers say. Exit status: 0 measured, 1 not
// valid (or failed while timed), 2 bad usage.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "command.h"
#include "runner/engine/check.h"
#include "runner/report/renderers.h"
#include "runner/stages/stage_driver.h"

namespace wb::cli {
namespace {

struct BenchCommandOptions {
  int stage = 0;
  bool solutions = false;
  bool mine = false;      // the student's code (the default), said explicitly
  std::string model;      // a model to time instead of the bench's own
  std::string kernels = "solutions";  // mine links the student's earlier kernels
  std::string stagesDir;
  std::string contexts;
  std::string tokens;
  std::string format = "text";
  std::string plot;
  double budget = 0;
  bool contention = false;  // 1 and 2 threads, as the machine is and with busy loops

  // The stage-specific options given (kStageBenchOptions' names).
  std::vector<std::string> StageOptionsGiven() const {
    std::vector<std::string> given;
    if (mine) given.push_back("--mine");
    if (!model.empty()) given.push_back("--model");
    if (kernels != "solutions") given.push_back("--kernels");
    if (contention) given.push_back("--contention");
    return given;
  }
};

// The stages of this build that have a bench, and of those the ones that take `option`
// (every one when `option` is empty), as "`bench 2`, `bench 3`"; a heavy stage this front end
// does not build is named by its number alone, as the one a heavy option belongs to.
std::string BenchesTaking(const std::string& option) {
  std::string named;
  auto add = [&named](int number) { named += fmt::format("{}`bench {}`", named.empty() ? "" : ", ", number); };
  for (std::span<const StageBuild> (*builds)() : {BuiltStages, HeavyStageBuilds}) {
    for (const StageBuild& s : builds()) {
      const std::unique_ptr<StageDriver> driver = s.makeDriver();
      const std::vector<std::string> takes = driver->BenchTakes();
      if (driver->HasBench() && (option.empty() || std::find(takes.begin(), takes.end(), option) != takes.end())) {
        add(s.number);
      }
    }
  }
  if (!option.empty() && named.empty() && HeavyStageBuilds().empty()) {
    for (int number : HeavyStageNumbers()) add(number);
  }
  return named;
}

// "512,4096" for --contexts (context lengths) or --tokens (T values).
Expected<std::vector<int>> ParseCounts(const std::string& text, const char* option, const char* what) {
  std::vector<int> counts;
  if (text.empty()) return counts;
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 1 || value > 1 << 20) {
      return BadUsage(fmt::format("{}: '{}' is not a list of positive {}", option, text, what));
    }
    counts.push_back(static_cast<int>(value));
  }
  if (counts.empty()) return BadUsage(fmt::format("{}: give at least one of the {}", option, what));
  return counts;
}

int RunBench(const BenchCommandOptions& o) {
  const WorkbookPaths paths = DefaultPaths();
  auto table = LoadStageTable(paths.Source("data/stages.json"));
  if (!table.ok()) return ReportError(table.error());
  const StageInfo* stage = table->Find(o.stage);
  const StageBuild* build = FindStageBuild(o.stage);
  const std::unique_ptr<StageDriver> driver = build != nullptr ? build->makeDriver() : nullptr;
  if (stage == nullptr || driver == nullptr || !driver->HasBench()) {
    return ReportUsageError(fmt::format("stage {} has no benchmark; the ones there are: {}", o.stage, BenchesTaking("")));
  }
  if (o.mine && o.solutions) return ReportUsageError("--mine and --solutions: choose one");
  const std::vector<std::string> takes = driver->BenchTakes();
  for (const std::string& option : o.StageOptionsGiven()) {
    if (std::find(takes.begin(), takes.end(), option) == takes.end()) {
      return ReportUsageError(
          fmt::format("bench {} takes no {}: it is an option of {}", o.stage, option, BenchesTaking(option)));
    }
  }
  auto contexts = ParseCounts(o.contexts, "--contexts", "context lengths");
  if (!contexts.ok()) return ReportError(contexts.error());
  auto tokens = ParseCounts(o.tokens, "--tokens", "T values");
  if (!tokens.ok()) return ReportError(tokens.error());
  BenchOptions options;
  options.contexts = *contexts;
  options.tokens = *tokens;
  options.budgetSeconds = o.budget;
  options.solutions = o.solutions;
  options.format = o.format;
  options.plotPath = o.plot;
  options.stagesDir = o.stagesDir;
  options.mine = o.mine;
  options.model = o.model;
  options.kernels = o.kernels;
  options.contention = o.contention;
  // The bench's own refusals first: a mistyped option is said now, not after the check.
  if (Status usage = driver->CheckBenchOptions(options); !usage.ok()) return ReportError(usage.error());
  // With --format json, stdout is the JSON alone: what the bench says on the way goes to stderr.
  std::FILE* progress = o.format == "json" ? stderr : stdout;

  // Validate: the stage's visible suite, exactly as `check` runs it.
  CheckOptions check;
  check.stage = o.stage;
  check.solutions = o.solutions;
  check.stagesDir = o.stagesDir;
  check.kernels = o.kernels;
  auto validated = RunCheck(check, paths);
  if (!validated.ok()) return ReportError(validated.error());
  if (validated->status != RunStatus::kPass) {
    std::fputs(RenderText(*validated, DetectTextStyle()).c_str(), progress);
    std::fprintf(progress,
                 "\nbench: not timed. %s fails stage %d's visible cases, and the speed of a wrong answer means nothing: "
                 "`./workbook check %d` until it passes, then bench again.\n",
                 validated->source.c_str(), o.stage, o.stage);
    return kExitFail;
  }
  std::fprintf(progress, "bench: %s passes stage %d's visible cases; timing it.\n\n", validated->source.c_str(),
               o.stage);
  std::fflush(progress);

  // Time: the same file, built into the stage's bench child where the stage has one.
  StageContext context;
  context.stage = stage;
  context.paths = paths;
  context.limits.memoryBytes = check.memoryLimitMiB << 20;
  if (build->benchHarnessLibrary[0] != '\0') {
    StageBuild benchBuild = *build;
    benchBuild.harnessLibrary = build->benchHarnessLibrary;
    benchBuild.solutionHarness = build->solutionBench;
    auto impl = PrepareImplementation(check, *stage, benchBuild, paths);
    if (!impl.ok()) return ReportError(impl.error());
    if (!impl->compiled) {
      return ReportError(InternalError(fmt::format("{} compiled for the check but not for the bench: {}",
                                                   impl->source, impl->compilerOutput)));
    }
    context.harness = impl->harness;
  }
  if (auto prepared = driver->Prepare(context); !prepared.ok()) return ReportError(prepared.error());
  options.memoryLimitMiB = check.memoryLimitMiB;
  options.source = validated->source;
  auto timed = driver->Bench(options, context);
  if (!timed.ok()) return ReportError(timed.error());
  return *timed;
}

}  // namespace

Command AddBenchCommand(CLI::App& app) {
  auto o = std::make_shared<BenchCommandOptions>();
  CLI::App* c = app.add_subcommand("bench", "Check a stage's code, then time it");
  c->add_option("stage", o->stage, "Stage number")->required();
  c->add_flag("--solutions", o->solutions, "Time the solutions/ twin instead of your stages/ file");
  c->add_option("--stages-dir", o->stagesDir, "Time the stage file of another stages/ tree");
  c->add_option("--contexts", o->contexts, "Stage 2: context lengths, comma-separated (default 512,4096)");
  c->add_option("--budget", o->budget, "Seconds each measurement may repeat for (stage 2: default 6; stage 3: "
                "0.25); stage 5: runs per figure (default 3)")
      ->check(CLI::PositiveNumber);
  c->add_option("--tokens", o->tokens, "Stage 3: T values, comma-separated (default 1,16,128,512)");
  c->add_option("--format", o->format, "Stages 3-5: text (a table) or json, on stdout")
      ->check(CLI::IsMember({"text", "json"}));
  c->add_option("--plot", o->plot, "Stages 3-5: also draw the figures as an SVG file");
  c->add_flag("--mine", o->mine, "Stage 5: time your decoder (the default)");
  c->add_option("--model", o->model, "Stage 5: time this GGUF file or Hugging Face folder instead of the "
                "TinyLlama-shaped models");
  c->add_option("--kernels", o->kernels, "Stage 5: mine links your stage-3 and stage-4 kernels")
      ->check(CLI::IsMember({"mine", "solutions"}));
  c->add_flag("--contention", o->contention, "Stage 5: decode on 1 and 2 threads, alone and with a busy loop per CPU "
              "beside it (the KJV and TinyLlama-shaped models, or --model)");
  return {c, [o]() { return RunBench(*o); }};
}

}  // namespace wb::cli
