#include "decode_consistency.h"

#include <set>
#include <vector>

#include <fmt/format.h>

#include "runner/compare/block_tolerances.h"
#include "runner/compare/compare.h"
#include "runner/diagnose/observations.h"
#include "runner/engine/checkpoint_engine.h"

namespace wb::stage02 {
namespace {

using ref::Checkpoint;

// Where token t came from: "token 6 (step 3), channel 17".
std::string Where(const DecodeCase& data, size_t index) {
  const int width = data.shape.model;
  const int token = static_cast<int>(index / width);
  int step = 0;
  for (size_t s = 0; s < data.calls.size(); ++s) {
    if (token >= data.calls[s].pos) step = static_cast<int>(s) + 1;
  }
  return fmt::format("token {} (step {}), channel {}", token, step, static_cast<int>(index % width));
}

}  // namespace

CheckpointReport SameAsPrefillNotReached(const DecodeCase& data, double points) {
  return wb::NotReached(kSameAsPrefill, fmt::format("{} x {}", data.tokens, data.shape.model),
                    static_cast<size_t>(data.tokens) * data.shape.model, points);
}

CheckpointReport CheckSameAsPrefill(const DecodeCase& data, std::span<const float> steppedOutput,
                                    const CallRun& prefill, double points) {
  const Tolerance output = BlockTolerance(Checkpoint::kOutput);
  // Two correct implementations may each be one tolerance away from the reference.
  const Tolerance agreement{.absoluteOfRms = 2 * output.absoluteOfRms, .relative = 2 * output.relative};
  const auto& oneCall = prefill.buffers[ref::Index(Checkpoint::kOutput)];
  const std::vector<double> expected(oneCall.begin(), oneCall.end());
  const Comparison c = Compare(steppedOutput, expected, agreement, 3);

  CheckpointReport cp;
  cp.name = kSameAsPrefill;
  cp.shape = fmt::format("{} x {}", data.tokens, data.shape.model);
  RecordComparison(c, points, cp);
  if (c.hasWorst) cp.worst = DescribeElement(Where(data, c.worstIndex), c.worstExpected, steppedOutput[c.worstIndex]);
  for (size_t index : c.failingSample) {
    if (c.hasWorst && index == c.worstIndex) continue;
    cp.samples.push_back(DescribeElement(Where(data, index), expected[index], steppedOutput[index]));
  }
  if (c.pass()) return cp;

  // Which tokens differ, and which side the reference agrees with.
  std::set<int> tokens;
  const double atol = c.atol;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double got = steppedOutput[i];
    const double want = expected[i];
    const bool agree = std::isfinite(got) && std::isfinite(want) && std::fabs(got - want) <= atol + c.rtol * std::fabs(want);
    if (!agree) tokens.insert(static_cast<int>(i / data.shape.model));
  }
  const auto& reference = data.reference[ref::Index(Checkpoint::kOutput)];
  const bool callsRight = Matches(steppedOutput, reference, output);
  std::string firstWrong;
  for (Checkpoint b : ref::kCheckpointOrder) {
    if (!Matches(prefill.buffers[ref::Index(b)], data.reference[ref::Index(b)], BlockTolerance(b))) {
      firstWrong = std::string(ref::CheckpointName(b));
      break;
    }
  }
  const std::string differ = fmt::format("token{} {} differ{}", tokens.size() == 1 ? "" : "s",
                                         Ranges(std::vector<int>(tokens.begin(), tokens.end())),
                                         tokens.size() == 1 ? "s" : "");
  const std::string oneCallName = fmt::format("one call of all {} tokens", data.tokens);
  if (callsRight && !firstWrong.empty()) {
    cp.observation = fmt::format("{}: your calls match the reference, but {} does not; its first wrong buffer is {}",
                                 differ, oneCallName, firstWrong);
  } else if (!callsRight && firstWrong.empty()) {
    cp.observation = fmt::format("{}: {} matches the reference, your calls do not: fix the first failing step", differ,
                                 oneCallName);
  } else if (!firstWrong.empty()) {
    cp.observation = fmt::format("{}: neither your calls nor {} match the reference; the one call's first wrong "
                                 "buffer is {}", differ, oneCallName, firstWrong);
  } else {
    cp.observation = fmt::format("{}: each side is within the reference's tolerance, but not within twice it of "
                                 "the other", differ);
  }
  return cp;
}

}  // namespace wb::stage02
