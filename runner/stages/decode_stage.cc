#include "decode_stage.h"

#include "case_outcome.h"
#include "crash_description.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "crash_description.h"
#include "decode_case.h"
#include "decode_checks.h"
#include "decode_child.h"
#include "decode_consistency.h"

namespace wb {
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

std::optional<CaseStatus> StatusOfEnding(ChildOutcome::Ending ending) {
  switch (ending) {
    case ChildOutcome::Ending::kReturned: return std::nullopt;
    case ChildOutcome::Ending::kTimeLimit: return CaseStatus::kTimeout;
    case ChildOutcome::Ending::kExitedEarly: return CaseStatus::kExitedEarly;
    case ChildOutcome::Ending::kSignal:
    case ChildOutcome::Ending::kHarnessFailed: return CaseStatus::kCrash;
  }
  return CaseStatus::kCrash;
}

void AppendOutput(std::string& all, const std::string& label, const ChildOutcome& outcome) {
  const std::string out = outcome.stdoutText.Text();
  const std::string err = outcome.stderrText.Text();
  std::string text = out + (!out.empty() && !err.empty() && out.back() != '\n' ? "\n" : "") + err;
  if (text.empty()) return;
  if (text.back() != '\n') text += '\n';
  all += fmt::format("[{}]\n{}", label, text);
}

// The runner itself could not run a call (no memory for the region, no fork).
CaseReport RunnerFailed(CaseReport report, const Error& error) {
  report.status = CaseStatus::kCrash;
  report.headline = error.message;
  if (report.hidden) Redact(report);
  return report;
}

}  // namespace

double DefaultDecodeTimeLimit(const CaseSpec& spec) { return std::max(10.0, 0.03 * spec.Tokens()); }

CaseReport RunDecodeCase(const CaseSpec& spec, const StageContext& setup) {
  CaseReport report;
  report.name = spec.name;
  report.hidden = spec.hidden;
  report.parameters = Parameters(spec);
  const DecodeCase data = PrepareDecodeCase(spec, *setup.weights);
  const int callCount = static_cast<int>(data.calls.size());

  CacheState cache = CacheState::Poisoned();
  std::vector<float> steppedOutput;
  steppedOutput.reserve(static_cast<size_t>(data.tokens) * data.shape.model);
  bool allUnwritten = true;
  std::optional<CaseStatus> stopped;
  std::vector<std::string> canary;
  std::string flood;  // the first call that printed more than the output limit
  for (int s = 0; s < callCount && !stopped; ++s) {
    const ref::DecodeCall& call = data.calls[s];
    auto ran = RunCallInChild(data, call, s, cache, setup);
    if (!ran.ok()) return RunnerFailed(std::move(report), ran.error());
    const CallRun& run = *ran;
    report.callSeconds += run.outcome.callSeconds;
    AppendOutput(report.childOutput, fmt::format("step {}", s + 1), run.outcome);
    CallChecks checks = CheckCall({.data = &data, .call = call, .number = s + 1, .run = &run, .before = &cache,
                                   .lessonPath = setup.lessonPath, .points = spec.points});
    allUnwritten = allUnwritten && checks.allUnwritten;
    for (auto& cp : checks.checkpoints) report.checkpoints.push_back(std::move(cp));
    const auto& output = run.buffers[ref::Index(ref::Checkpoint::kOutput)];
    steppedOutput.insert(steppedOutput.end(), output.begin(), output.end());
    for (const auto& note : run.canaryNotes) canary.push_back(fmt::format("step {}: {}", s + 1, note));
    if (const std::string f = DescribeOutputFlood(run.outcome, setup.limits.outputLimitBytes); !f.empty() && flood.empty()) {
      flood = fmt::format("step {}: {}", s + 1, f);
    }

    stopped = StatusOfEnding(run.outcome.ending);
    if (stopped) {
      report.headline = fmt::format("step {} ({}): {}", s + 1, CallWords(call), run.ending);
      report.notes.insert(report.notes.end(), canary.begin(), canary.end());
      canary.clear();
      report.notes.push_back(fmt::format("when it stopped: {}", run.written));
      if (s + 1 < callCount) {
        report.notes.push_back(fmt::format("steps {}-{} were not run: they would start from a cache this step left "
                                           "unfinished", s + 2, callCount));
      }
      for (int later = s + 1; later < callCount; ++later) {
        for (auto& cp : NotReached(data, data.calls[later], later + 1, spec.points)) {
          report.checkpoints.push_back(std::move(cp));
        }
      }
      if (callCount > 1) report.checkpoints.push_back(SameAsPrefillNotReached(data, spec.points));
      break;
    }
    cache = run.cacheAfter;
  }

  // The agreement check: the whole sequence as one call, from an empty cache.
  if (!stopped && callCount > 1) {
    if (allUnwritten) {
      report.checkpoints.push_back(SameAsPrefillNotReached(data, spec.points));
    } else {
      const ref::DecodeCall whole{.pos = 0, .n = data.tokens};
      auto ran = RunCallInChild(data, whole, callCount, CacheState::Poisoned(), setup);
      if (!ran.ok()) return RunnerFailed(std::move(report), ran.error());
      AppendOutput(report.childOutput, fmt::format("one call of all {} tokens", data.tokens), ran->outcome);
      stopped = StatusOfEnding(ran->outcome.ending);
      if (stopped) {
        report.headline = fmt::format("the whole sequence as one call ({}), which must agree with the steps: {}",
                                      CallWords(whole), ran->ending);
        report.checkpoints.push_back(SameAsPrefillNotReached(data, spec.points));
      } else {
        report.checkpoints.push_back(CheckSameAsPrefill(data, steppedOutput, *ran, spec.points));
      }
    }
  }

  for (const auto& cp : report.checkpoints) {
    if (!report.firstFailure && cp.status == CheckStatus::kFail) report.firstFailure = cp.name;
  }
  if (stopped) {
    report.status = *stopped;
  } else if (!canary.empty()) {
    report.status = CaseStatus::kFail;
    report.headline = canary.front();
    report.notes.insert(report.notes.end(), canary.begin() + 1, canary.end());
  } else if (allUnwritten) {
    report.status = CaseStatus::kNotImplemented;
  } else {
    report.status = report.firstFailure ? CaseStatus::kFail : CaseStatus::kPass;
  }
  ApplyOutputFlood(flood, report);
  if (report.hidden) Redact(report);
  return report;
}

}  // namespace wb
