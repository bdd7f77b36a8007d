// Stage 5's driver: one case = a model, a prefill and decode steps over one paged KV cache.
//
// Contract: RunCase prepares the case (decoder_case.h: the model opened by the runner, the
// tokens, the page table, the reference of the whole sequence), runs every call in one child
// (decoder_child.h), then checks every call's checkpoints in one chain (decoder_checks.h) and
// the allocations of the decode steps. A child that crashes, hangs or exits ends the case;
// the calls it returned from are checked, the one it stopped in shows what it wrote, and
// the later ones are reported as not reached.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "decoder_bench.h"
#include "decoder_case.h"
#include "decoder_checks.h"
#include "decoder_child.h"
#include "runner/engine/case_verdict.h"
#include "runner/engine/crash_description.h"
#include "runner/stages/leaderboard_timing.h"

namespace wb::stage05 {
namespace {

using L = DecoderCall;

std::string Parameters(const CaseSpec& spec, const DecoderCase& data) {
  std::string steps;
  for (int n : spec.steps) steps += (steps.empty() ? "" : "+") + std::to_string(n);
  return fmt::format("{}, steps {}, {} cache, page size {}, seed {}{}{}", data.modelLabel, steps, spec.cache,
                     spec.pageSize, spec.seed, spec.threads > 1 ? fmt::format(", {} threads", spec.threads) : "",
                     spec.lastLogitsOnly ? ", Logits::kLast" : "");
}

class DecoderDriver final : public StageDriver {
 public:
  Status Prepare(const StageContext& context) override {
    (void)context;
    return Status::Ok();
  }

  // The whole case runs in one child: 20 s, more for long sequences.
  double DefaultTimeLimit(const CaseSpec& spec) const override { return std::max(20.0, 0.05 * spec.Tokens()); }

  // The case's toy model and cache, which `check 5 --model` runs with tokens of its own: the
  // same family, file format and row type, so the same switches and roundings, and the same
  // first failure for a mistake of that kind (the case's seed, steps and pages stay unsaid).
  std::string Reproduce(const CaseSpec& spec, int stage) const override {
    if (spec.model.empty() || spec.model.find('/') != std::string::npos) return StageDriver::Reproduce(spec, stage);
    return fmt::format("to see a failure of this kind in full: ./workbook check {} --model {} --cache {}", stage,
                       ToyModelPath(spec), spec.cache);
  }

  // The provided weight_matmul (child/weight_kernels.cc) hands products of Q8_0 and Q4_0
  // matrices to stage 4's kernels, and of F32 ones on more than one thread to stage 3's; any
  // other type it multiplies itself.
  std::string KernelsOfCase(const CaseSpec& spec, const StageContext& context) const override {
    auto prepared = PrepareDecoderCase(spec, context.paths);
    if (!prepared) return "";
    const std::vector<std::string>& types = prepared->matrixTypes;
    auto has = [&types](const char* type) { return std::find(types.begin(), types.end(), type) != types.end(); };
    std::vector<std::string> quantized;
    for (const char* type : {"Q8_0", "Q4_0"}) {
      if (has(type)) quantized.push_back(type);
    }
    std::vector<std::string> uses;
    if (!quantized.empty()) {
      uses.push_back(fmt::format("the {} products to your stage-4 quantize_q8_0 and matmul_q (./workbook check 4 "
                                 "checks them on their own)",
                                 fmt::join(quantized, " and ")));
    }
    if (has("F32") && spec.threads > 1) {
      uses.push_back(fmt::format("the F32 products, on {} threads, to your stage-3 matmul and matmul_swiglu "
                                 "(./workbook check 3 checks them on their own)",
                                 spec.threads));
    }
    if (uses.empty()) {
      return fmt::format("Its matrices are {}, which the provided weight_matmul multiplies itself: the difference "
                         "comes from something else in your stage-3 or stage-4 file",
                         fmt::join(types, ", "));
    }
    return fmt::format("Its matrices are {}; the provided weight_matmul hands {}", fmt::join(types, ", "),
                       fmt::join(uses, ", and "));
  }

  // The whole decoder against the machine's memory, or beside busy loops (decoder_bench.h).
  bool HasBench() const override { return true; }
  Status CheckBenchOptions(const BenchOptions& options) const override { return CheckDecoderBenchOptions(options); }
  std::vector<std::string> BenchTakes() const override {
    return {std::begin(kStageBenchOptions), std::end(kStageBenchOptions)};
  }
  Expected<int> Bench(const BenchOptions& options, const StageContext& context) const override {
    return RunDecoderBench(options, context);
  }

  // Decode tokens/s on the workbook's own model (kjv-llama-2m in Q8_0), one thread: a prompt of
  // kLeaderboardPrompt tokens and then kLeaderboardSteps decode steps of one token in one child,
  // every call checked as a case's are, timed by the runner's clock (leaderboard_timing.h) less
  // the solution's child on the prompt and one step: its start-up, the model's opening and the
  // prompt, which no submission can lengthen.
  Expected<std::vector<LeaderboardEntry>> Leaderboard(const StageContext& context, bool measure) const override {
    constexpr int kRuns = 5;  // a run is a fraction of a second: more of them steady the fastest
    constexpr int kLeaderboardPrompt = 16;
    constexpr int kLeaderboardSteps = kMaxCalls - 1;  // as many as one case may make
    LeaderboardEntry entry{.name = fmt::format("decode tokens/s (kjv-llama-2m Q8_0, {} steps, 1 thread)",
                                               kLeaderboardSteps),
                           .value = 0,
                           .ascending = false};
    if (!measure) return std::vector<LeaderboardEntry>{entry};
    CaseSpec spec;
    spec.name = "leaderboard";
    spec.model = "kjv-llama-2m";
    spec.format = "gguf";
    spec.variant = "q8_0";
    spec.cache = "f16";
    spec.pageSize = 16;
    spec.seed = 20261206;
    spec.threads = 1;
    spec.lastLogitsOnly = true;
    spec.steps.assign(1 + kLeaderboardSteps, 1);
    spec.steps.front() = kLeaderboardPrompt;
    const StageBuild* build = FindStageBuild(context.stage->number);
    if (build == nullptr) return InternalError("the leaderboard needs stage 5's build");
    StageContext solution = context;
    solution.harness = build->solutionHarness;
    CaseSpec startup = spec;
    startup.steps.resize(2);
    auto seconds = TimeFromOutside(
        kRuns, [&] { return RunCase(spec, context); }, [&] { return RunCase(startup, solution); });
    if (!seconds.ok()) return seconds.error();
    if (!seconds->has_value()) return std::vector<LeaderboardEntry>{entry};
    entry.value = (kLeaderboardSteps - 1) / **seconds;
    return std::vector<LeaderboardEntry>{entry};
  }

  Expected<CaseReport> RunCase(const CaseSpec& spec, const StageContext& context) const override {
    auto prepared = PrepareDecoderCase(spec, context.paths);
    if (!prepared) return prepared.error();
    const DecoderCase& data = *prepared;
    CaseReport report;
    report.parameters = Parameters(spec, data);
    auto ran = RunCallsInChild(data, spec.threads, context);
    if (!ran) return ran.error();
    ChildRun& run = *ran;
    report.callSeconds = run.outcome.callSeconds;
    report.wallSeconds = run.outcome.wallSeconds;
    report.childOutput = ChildOutputText(run.outcome);

    ChainResult checks = CheckDecoderCase(data, run, *context.stage, spec.points);
    report.checkpoints = std::move(checks.checkpoints);
    if (data.calls.size() > 1) {
      // Code that writes nothing allocates nothing either: that is not a pass.
      report.checkpoints.push_back(checks.allUnwritten
                                       ? NotReached("allocations", fmt::format("{} decode steps", data.calls.size() - 1),
                                                    data.calls.size() - 1, spec.points)
                                       : CheckAllocations(data, run, spec.points));
    }

    std::vector<uint32_t> outputs;
    for (uint32_t b = L::kEmbedding; b < L::kBufferCount; ++b) outputs.push_back(b);
    CaseFindings findings = FindingsOfChild(run.outcome, run.region, context.stage->function, run.limits, outputs,
                                            checks.allUnwritten);
    if (findings.stop) {
      const int call = std::min<int>(run.callsReturned, static_cast<int>(data.calls.size()) - 1);
      findings.stop->headline = fmt::format("{}, step {}: {}", data.modelLabel, call + 1, findings.stop->headline);
    }
    Conclude(findings, report);
    if (report.firstFailure && !findings.stop) {
      report.notes.insert(report.notes.begin(), fmt::format("model: {}", data.modelLabel));
    }
    return report;
  }
};

}  // namespace

std::unique_ptr<StageDriver> MakeDriver() { return std::make_unique<DecoderDriver>(); }

}  // namespace wb::stage05
