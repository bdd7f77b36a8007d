// `workbook check STAGE`: the checkpoint runner.
#include <memory>

#include <fmt/format.h>

#include "command.h"
#include "runner/report/renderers.h"
#include "runner/engine/check.h"
#include "runner/engine/kernel_versions.h"
#include "runner/stages/stage_table.h"
#include "runner/isolation/sandbox.h"

namespace wb::cli {

Command AddCheckCommand(CLI::App& app) {
  struct Options {
    CheckOptions check;
    std::string format = "text";
    std::string output;
    bool verbose = false;
    bool requireSandbox = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("check", "Check a stage's buffers against the float64 reference");
  c->add_option("stage", o->check.stage, "Stage number (1 to 5)")->required();
  c->add_flag("--solutions", o->check.solutions, "Check the solutions/ twin instead of your stages/ file");
  c->add_flag("--show-hidden", o->check.showHidden, "Report hidden cases in full (instructors only)");
  c->add_option("--cases", o->check.casesPath, "A case file (default: the stage's visible suite)");
  c->add_option("--format", o->format, "Report format: text, json, junit (XML) or gradescope (results.json)")
      ->check(CLI::IsMember({"text", "json", "junit", "gradescope"}));
  c->add_option("--output", o->output, "Write the report to FILE instead of stdout");
  c->add_flag("--verbose", o->verbose,
              "Text report: every buffer in full, including those off only because of an earlier one");
  c->add_option("--stages-dir", o->check.stagesDir, "Check the stage file of another stages/ tree");
  c->add_option("--model", o->check.modelPath,
                "Stage 5: check on this GGUF file or Hugging Face folder instead of the toy models");
  c->add_option("--tokens", o->check.tokens, "Stage 5 with --model: the prompt's token ids (default: 8 from a seed)")
      ->delimiter(',');
  c->add_option("--steps", o->check.decodeSteps, "Stage 5 with --model: decode steps after the prompt (default 3)");
  c->add_option("--kernels", o->check.kernels,
                "Stage 5: the matrix kernels under your decoder, solutions (default) or mine (your stage-3 and "
                "stage-4 files)");
  c->add_option("--cache", o->check.cache, "Stage 5 with --model: the cache's rows, f32, f16 or int8 (default f32)");
  c->add_option("--harness", o->check.harness, "Run a prebuilt child executable (used by the workbook's tests)");
  c->add_option("--weights", o->check.weightsPath, "Use another packed weight file");
  c->add_option("--compile-time-limit", o->check.compileSeconds, "Seconds the compiler may take (default 60)")
      ->check(CLI::PositiveNumber);
  c->add_option("--time-limit", o->check.timeLimitSeconds, "Seconds per case, or per call where a case calls your function several times (default: 10, more for long sequences)")
      ->check(CLI::PositiveNumber);
  c->add_option("--memory-limit", o->check.memoryLimitMiB, "MiB your code may allocate (default 1024)")
      ->check(CLI::PositiveNumber);
  c->add_flag("--leaderboard", o->check.leaderboard,
              "Also measure what the stage's Gradescope leaderboard ranks by (stage 3: fused_block GFLOP/s; 4: "
              "matmul_q GOP/s at T=1; 5: decode tokens/s)");
  c->add_option("--kernel-version", o->check.kernelVersion,
                "Run the kernels' version for one instruction set (portable, avx2, avx512vnni): the child reads it "
                "from WB_KERNEL_VERSION, as the solution of stage 4 does");
  c->add_flag("--require-sandbox", o->requireSandbox,
              "Refuse to grade unless every protection of the sandbox is in force on this machine");
  return {c, [o]() {
            if (o->requireSandbox && !CurrentSandbox().missing.empty()) {
              return ReportError(SystemError(fmt::format(
                  "--require-sandbox: this machine lacks {} of the sandbox's protections, so nothing was graded: {}",
                  CurrentSandbox().missing.size(), fmt::join(CurrentSandbox().missing, "; "))));
            }
            if (!o->check.kernelVersion.empty()) {
              auto version = DescribeKernelVersion(o->check.kernelVersion);
              if (!version.ok()) return ReportUsageError(version.error().message);
              if (!version->runsHere) {
                return ReportError(SystemError(fmt::format("--kernel-version {}: this CPU lacks {}, which it needs",
                                                           o->check.kernelVersion, version->needs)));
              }
            }
            auto report = RunCheck(o->check, DefaultPaths());
            if (!report.ok()) return ReportError(report.error());
            // The solution's kernels in each instruction-set version this CPU runs, on the visible
            // suite (kernel_versions in data/stages.json; runner/engine/kernel_versions.h).
            if (o->check.solutions && o->check.kernelVersion.empty() && o->check.casesPath.empty() &&
                report->status != RunStatus::kCompileError) {
              auto table = LoadStageTable(DefaultPaths().Source("data/stages.json"));
              if (!table.ok()) return ReportError(table.error());
              const StageInfo* stage = table->Find(o->check.stage);
              if (stage != nullptr && !stage->kernelVersions.empty()) {
                auto versions = RunKernelVersions(stage->kernelVersions, o->check, DefaultPaths());
                if (!versions.ok()) return ReportError(versions.error());
                report->kernelVersions = std::move(*versions);
                for (const KernelVersionRun& v : report->kernelVersions) {
                  if (v.ran && (v.passed != v.total || !v.note.empty())) report->status = RunStatus::kFail;
                }
              }
            }
            RememberProgress(o->check, *report);
            TextStyle style = o->output.empty() ? DetectTextStyle() : TextStyle{};
            style.verbose = o->verbose;
            const std::string text = o->format == "json"         ? RenderJson(*report)
                                     : o->format == "junit"      ? RenderJunit(*report)
                                     : o->format == "gradescope" ? RenderGradescope(*report)
                                                                 : RenderText(*report, style);
            if (!Emit(text, o->output)) return ReportUsageError(fmt::format("{}: cannot write the report", o->output));
            return ExitCodeFor(*report);
          }};
}

}  // namespace wb::cli
