#include "checkpoint_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace wb {
namespace {

constexpr size_t kSamplesShown = 3;

// The engine's record of one checkpoint already checked, for the ones downstream of it.
struct Checked {
  bool failed = false;
  bool usable = false;
};

CheckpointReport CheckByValue(const CheckpointDescriptor& d, std::span<const Checked> earlier,
                              const std::vector<std::string>& names, double points) {
  const Comparison chain = Compare(d.got, d.expected, d.tolerance, kSamplesShown);
  CheckpointReport cp;
  cp.name = d.name;
  cp.shape = d.shape;
  RecordComparison(chain, points, cp);
  if (chain.hasWorst) cp.worst = DescribeElement(d.where(chain.worstIndex), chain.worstExpected, d.got[chain.worstIndex]);
  for (size_t index : chain.failingSample) {
    if (chain.hasWorst && index == chain.worstIndex) continue;
    cp.samples.push_back(DescribeElement(d.where(index), d.expected[index], d.got[index]));
  }

  // The local view: this step on the student's own upstream buffers.
  bool upstreamUsable = true;
  std::vector<std::string> broken;
  for (size_t u : d.upstream) {
    upstreamUsable = upstreamUsable && earlier[u].usable;
    if (earlier[u].failed) broken.push_back(names[u]);
  }
  if (d.brokenInput) broken.push_back(*d.brokenInput);
  std::vector<double> local;
  const Tolerance& localTolerance = d.localTolerance ? *d.localTolerance : d.tolerance;
  // A local step that cannot run (the reference refused the student's upstream) returns
  // nothing, and the local view is then not shown.
  if (upstreamUsable && d.local) local = d.local();
  if (!local.empty() && local.size() == d.got.size()) {
    Comparison view = Compare(d.got, local, localTolerance, kSamplesShown);
    if (!view.pass() && d.localSlack) {
      const std::vector<double> slack = d.localSlack();
      if (slack.size() == local.size()) view = Compare(d.got, local, localTolerance, kSamplesShown, slack);
    }
    cp.local = view.pass() ? LocalStatus::kPass : LocalStatus::kFail;
    if (d.localDecides && chain.pass() && !view.pass()) {
      // Within the chain's tolerance, which allows for roundings flipped upstream, but not
      // what this step makes of the inputs it was given: the report is the local view's.
      RecordComparison(view, points, cp);
      cp.worst.reset();
      cp.samples.clear();
      if (view.hasWorst) cp.worst = DescribeElement(d.where(view.worstIndex), view.worstExpected, d.got[view.worstIndex]);
      for (size_t index : view.failingSample) {
        if (view.hasWorst && index == view.worstIndex) continue;
        cp.samples.push_back(DescribeElement(d.where(index), local[index], d.got[index]));
      }
    }
  }
  if (cp.status == CheckStatus::kPass) return cp;
  if (chain.allUnwritten()) {
    if (d.recogniseUnwritten) cp.misconception = d.recogniseUnwritten().hit;
    return cp;
  }

  // Diagnosis: a named mistake, else what the two views and the buffer itself show.
  std::vector<std::string> tied;
  if (cp.local != LocalStatus::kPass && d.recognise) {
    Recognition recognition = d.recognise(upstreamUsable);
    cp.misconception = std::move(recognition.hit);
    tied = std::move(recognition.tied);
  }
  if (cp.misconception) return cp;
  const std::string verb = broken.size() == 1 ? "is" : "are";
  if (!upstreamUsable && !broken.empty()) {
    cp.observation = fmt::format("not checked on its own: {} {} elements that are unwritten or not finite",
                                 JoinNames(broken), broken.size() == 1 ? "has" : "have");
  } else if (cp.local == LocalStatus::kPass && !broken.empty()) {
    const std::string upstream = JoinNames(broken);
    const std::string step = d.name.substr(d.name.find('.') + 1);  // "step2.q" is the q step
    cp.observation = fmt::format("your {} step is right for the {} it was given; it is off only because {} {}", step,
                                 upstream, upstream, verb);
  } else {
    cp.observation = Observe(d.got, cp.local == LocalStatus::kNotChecked ? std::span<const double>(d.expected)
                                                                          : std::span<const double>(local),
                             cp.local == LocalStatus::kNotChecked ? d.tolerance : localTolerance, d.geometry);
  }
  if (!tied.empty()) {
    // Facts, not a guess: which known mistakes fit, and that this case cannot choose.
    const std::string fits = fmt::format("it matches {} known mistakes that this case cannot tell apart: {}",
                                         tied.size(), JoinNames(tied));
    cp.observation = cp.observation.empty() ? fits : fits + "; " + cp.observation;
  }
  return cp;
}

}  // namespace

bool UsableAsUpstream(std::span<const float> values) {
  return std::all_of(values.begin(), values.end(),
                     [](float v) { return StateOf(v) == ElementState::kWritten && std::isfinite(v); });
}

ChainResult CheckChain(std::span<const CheckpointDescriptor> descriptors, double points) {
  ChainResult result;
  std::vector<Checked> checked;
  std::vector<std::string> names;
  for (const CheckpointDescriptor& d : descriptors) {
    CheckpointReport cp = d.custom ? d.custom() : CheckByValue(d, checked, names, points);
    for (size_t u : d.upstream) cp.computedFrom.push_back(names[u]);
    cp.computedFrom.insert(cp.computedFrom.end(), d.alsoComputedFrom.begin(), d.alsoComputedFrom.end());
    if (!d.custom) result.allUnwritten = result.allUnwritten && cp.unwritten == cp.total;
    checked.push_back({.failed = cp.status == CheckStatus::kFail,
                       .usable = UsableAsUpstream(d.readDownstream.empty() ? d.got : d.readDownstream)});
    names.push_back(d.name);
    result.checkpoints.push_back(std::move(cp));
  }
  return result;
}

Status RequireFiniteReference(std::string_view caseName, std::string_view buffer, std::span<const double> values) {
  // The student computes in float: a reference value beyond the largest float is as
  // ungradable as an inf.
  constexpr double kLargestFloat = std::numeric_limits<float>::max();
  const auto bad = std::ranges::find_if(values, [](double v) { return !(std::fabs(v) <= kLargestFloat); });
  if (bad == values.end()) return Status::Ok();
  const std::string what = std::isnan(*bad)   ? "a NaN"
                           : std::isinf(*bad) ? "an inf"
                                              : fmt::format("{:.3g}, beyond the largest float,", *bad);
  return BadData(fmt::format("case {}: the float64 reference's {} holds {} at element {}: the case's scales are too "
                             "large to grade anything; make w_scale or x_scale smaller",
                             caseName, buffer, what, bad - values.begin()));
}

CheckpointReport NotReached(std::string name, std::string shape, size_t elements, double points) {
  CheckpointReport cp;
  cp.name = std::move(name);
  cp.shape = std::move(shape);
  cp.status = CheckStatus::kFail;
  cp.total = cp.failing = cp.unwritten = elements;
  cp.maxPoints = points;
  return cp;
}

ElementDetail DescribeElement(std::string where, double expected, float got) {
  ElementDetail d;
  d.where = std::move(where);
  d.expected = expected;
  d.got = got;
  switch (StateOf(got)) {
    case ElementState::kUnwritten: d.gotNote = "never written"; break;
    case ElementState::kFromUnwritten: d.gotNote = "NaN computed from an element that was never written"; break;
    case ElementState::kWritten:
      if (std::isnan(got)) d.gotNote = "NaN";
      break;
  }
  return d;
}

void RecordComparison(const Comparison& chain, double points, CheckpointReport& cp) {
  cp.status = chain.pass() ? CheckStatus::kPass : CheckStatus::kFail;
  cp.total = chain.total;
  cp.failing = chain.failing;
  cp.unwritten = chain.unwritten;
  cp.fromUnwritten = chain.fromUnwritten;
  cp.nanCount = chain.nanCount;
  cp.infCount = chain.infCount;
  cp.maxAbsError = chain.maxAbsError;
  cp.rms = chain.rms;
  cp.atol = chain.atol;
  cp.rtol = chain.rtol;
  cp.maxPoints = points;
  cp.points = chain.pass() ? points : 0;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string joined;
  for (size_t i = 0; i < names.size(); ++i) {
    joined += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return joined;
}

}  // namespace wb
