// Stage 2's driver: one case = a sequence of decoder_step calls over one KV cache.
//
// Contract: RunCase prepares the case (decode_case.h), runs each call in its own child
// with the cache the earlier calls left (decode_child.h), checks the twelve checkpoints of
// every call in order (decode_checks.h), then runs the whole sequence as one call and
// checks that every token's output agrees (decode_consistency.h). A call that crashes,
// hangs or exits ends the case there, and the calls it did not reach are reported as not
// reached, so a report has the same checkpoints whatever happened.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "decode_case.h"
#include "decode_checks.h"
#include "decode_child.h"
#include "bench_driver.h"
#include "decode_consistency.h"
#include "runner/blocks/block_weights.h"
#include "runner/engine/case_verdict.h"
#include "runner/engine/crash_description.h"

namespace wb::stage02 {
namespace {

// "1 token at position 5", "5 tokens at positions 0-4"
std::string CallWords(const ref::DecodeCall& call) {
  if (call.n == 1) return fmt::format("1 token at position {}", call.pos);
  return fmt::format("{} tokens at positions {}-{}", call.n, call.pos, call.pos + call.n - 1);
}

std::string Parameters(const CaseSpec& spec) {
  std::string steps;
  for (int n : spec.steps) steps += (steps.empty() ? "" : "+") + std::to_string(n);
  std::string text = fmt::format("steps {}, seed {}", steps, spec.seed);
  if (spec.xScale != 1.0) text += fmt::format(", x_scale {}", spec.xScale);
  if (spec.wScale != 1.0) text += fmt::format(", w_scale {}", spec.wScale);
  return text;
}

void AppendOutput(std::string& all, const std::string& label, const ChildOutcome& outcome) {
  std::string text = ChildOutputText(outcome);
  if (text.empty()) return;
  if (text.back() != '\n') text += '\n';
  all += fmt::format("[{}]\n{}", label, text);
}

class DecodeDriver final : public BlockWeightsDriver {
 public:
  // Per call: 10 s, more for long sequences.
  double DefaultTimeLimit(const CaseSpec& spec) const override { return std::max(10.0, 0.03 * spec.Tokens()); }

  Expected<CaseReport> RunCase(const CaseSpec& spec, const StageContext& context) const override;

  bool HasBench() const override { return true; }
  Status CheckBenchOptions(const BenchOptions& options) const override { return CheckDecodeBenchOptions(options); }
  Expected<int> Bench(const BenchOptions& options, const StageContext& context) const override {
    return RunDecodeBench(weights_, options, context);
  }
};

}  // namespace

Expected<CaseReport> DecodeDriver::RunCase(const CaseSpec& spec, const StageContext& context) const {
  const StageInfo& stage = *context.stage;
  CaseReport report;
  report.parameters = Parameters(spec);
  const DecodeCase data = PrepareDecodeCase(spec, weights_);
  for (ref::Checkpoint c : ref::kCheckpointOrder) {
    if (auto finite = RequireFiniteReference(spec.name, ref::CheckpointName(c), data.reference[ref::Index(c)]);
        !finite.ok()) {
      return finite.error();
    }
  }
  const int callCount = static_cast<int>(data.calls.size());

  // Every call first, each from the cache the one before it left; then the checks of all of
  // them together, since a mistake is named at one call only if the others agree with it.
  const CacheState empty = CacheState::Poisoned();
  std::vector<CallRun> runs;
  runs.reserve(data.calls.size());  // the checks hold pointers into it
  std::vector<float> steppedOutput;
  steppedOutput.reserve(static_cast<size_t>(data.tokens) * data.shape.model);
  CaseFindings findings;
  for (int s = 0; s < callCount && !findings.stop; ++s) {
    const ref::DecodeCall& call = data.calls[s];
    auto ran = RunCallInChild(data, call, s, s == 0 ? empty : runs.back().cacheAfter, context);
    if (!ran.ok()) return ran.error();
    runs.push_back(std::move(*ran));
    const CallRun& run = runs.back();
    report.callSeconds += run.outcome.callSeconds;
    findings.leftoverProcesses += run.outcome.leftoverProcesses;
    AppendOutput(report.childOutput, fmt::format("step {}", s + 1), run.outcome);
    const auto& output = run.buffers[ref::Index(ref::Checkpoint::kOutput)];
    steppedOutput.insert(steppedOutput.end(), output.begin(), output.end());
    for (const auto& note : run.canaryNotes) findings.canaryNotes.push_back(fmt::format("step {}: {}", s + 1, note));
    if (const std::string f = DescribeOutputFlood(run.outcome, context.limits.outputLimitBytes);
        !f.empty() && findings.outputFlood.empty()) {
      findings.outputFlood = fmt::format("step {}: {}", s + 1, f);
    }
    if (const auto stopped = StatusOfEnding(run.outcome.ending)) {
      CaseStop stop{.status = *stopped,
                    .headline = fmt::format("step {} ({}): {}", s + 1, CallWords(call), run.ending),
                    .notes = findings.canaryNotes};
      stop.notes.push_back(fmt::format("when it stopped: {}", run.written));
      if (s + 1 < callCount) {
        stop.notes.push_back(fmt::format("steps {}-{} were not run: they would start from a cache this step left "
                                         "unfinished", s + 2, callCount));
      }
      findings.stop = std::move(stop);
    }
  }
  std::vector<CallCheckInput> inputs;
  for (size_t s = 0; s < runs.size(); ++s) {
    inputs.push_back({.data = &data, .stage = &stage, .call = data.calls[s], .number = static_cast<int>(s) + 1,
                      .run = &runs[s], .before = s == 0 ? &empty : &runs[s - 1].cacheAfter, .points = spec.points});
  }
  for (ChainResult& checks : CheckCalls(inputs)) {
    findings.allUnwritten = findings.allUnwritten && checks.allUnwritten;
    for (auto& cp : checks.checkpoints) report.checkpoints.push_back(std::move(cp));
  }
  for (int later = static_cast<int>(runs.size()); later < callCount; ++later) {
    for (auto& cp : CallNotReached(data, stage, data.calls[later], later + 1, spec.points)) {
      report.checkpoints.push_back(std::move(cp));
    }
  }
  if (findings.stop && callCount > 1) report.checkpoints.push_back(SameAsPrefillNotReached(data, spec.points));

  // The agreement check: the whole sequence as one call, from an empty cache.
  if (!findings.stop && callCount > 1) {
    if (findings.allUnwritten) {
      report.checkpoints.push_back(SameAsPrefillNotReached(data, spec.points));
    } else {
      const ref::DecodeCall whole{.pos = 0, .n = data.tokens};
      auto ran = RunCallInChild(data, whole, callCount, CacheState::Poisoned(), context);
      if (!ran.ok()) return ran.error();
      AppendOutput(report.childOutput, fmt::format("one call of all {} tokens", data.tokens), ran->outcome);
      if (const auto stopped = StatusOfEnding(ran->outcome.ending)) {
        findings.stop = CaseStop{
            .status = *stopped,
            .headline = fmt::format("the whole sequence as one call ({}), which must agree with the steps: {}",
                                    CallWords(whole), ran->ending),
            .notes = findings.canaryNotes};
        report.checkpoints.push_back(SameAsPrefillNotReached(data, spec.points));
      } else {
        report.checkpoints.push_back(CheckSameAsPrefill(data, steppedOutput, *ran, spec.points));
      }
    }
  }
  // sameAsPrefill is computed from every call's output: the last edges of the stage's graph.
  if (callCount > 1) {
    auto& agreement = report.checkpoints.back();
    for (int s = 1; s <= callCount; ++s) agreement.computedFrom.push_back(stage.Reported("output", s));
  }
  Conclude(findings, report);
  return report;
}

std::unique_ptr<StageDriver> MakeDriver() { return std::make_unique<DecodeDriver>(); }

}  // namespace wb::stage02
