// The checkpoint engine: one pass that turns a stage's checkpoint descriptors into reports.
//
// Contract: a stage describes each checkpoint of a call (its reported name, the student's
// buffer, the reference chain's values, the tolerance, how to name an element, which
// earlier checkpoints it is computed from, the reference step on the student's own upstream
// buffers, and what it would hold under each misconception) and CheckChain does the rest,
// identically for every stage:
//   1. the chain view: the student's buffer against the reference chain (the first failure
//      is the first wrong operator);
//   2. the local view: against the reference step applied to the student's upstream, when
//      every element of that upstream is written and finite (with its own tolerance, and
//      deciding the checkpoint's status too, for a descriptor that says localDecides);
//   3. diagnosis of a failing buffer that is not entirely unwritten: a misconception when
//      one is named (runner/diagnose/misconception.h), else "off only because an earlier
//      buffer is", "not checked on its own", or what the runner can see (observations.h),
//      after the entries it could not tell apart, when several matched.
// Descriptors come in dependency order; `upstream` indexes earlier descriptors only. Each
// report names what its checkpoint is computed from (computedFrom: the upstream
// descriptors' names, then alsoComputedFrom), so a report carries the stage's dependency
// graph and its summary can say what a wrong buffer feeds.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../common/expected.h"
#include "../compare/compare.h"
#include "../diagnose/misconception.h"
#include "../diagnose/observations.h"
#include "../report/report.h"

namespace wb {

struct CheckpointDescriptor {
  std::string name;              // as reported: "q", "step2.attnOut"
  std::string shape;             // "4 x 512"
  std::span<const float> got;    // the student's buffer
  std::vector<double> expected;  // the reference chain's values, one per element of got
  Tolerance tolerance;
  std::function<std::string(size_t index)> where;  // "token 2, head 3, channel 17"
  BufferGeometry geometry;       // rows, width and heads, for observations
  std::vector<size_t> upstream;  // earlier descriptors this one is computed from
  // Checkpoints outside this chain that it is computed from, by reported name (an earlier
  // call's cache rows), and checkpoints of the chain it reads without needing them for its
  // local check; only the report's dependency graph shows them.
  std::vector<std::string> alsoComputedFrom;
  // What steps downstream read of this checkpoint, when more than `got` (a cache's rows of
  // earlier calls too); it decides whether a downstream local check can run.
  std::span<const float> readDownstream;
  // Something else upstream that is off, named when this checkpoint is off only because of it.
  std::optional<std::string> brokenInput;
  // The reference step on the student's upstream buffers; empty: no local check.
  std::function<std::vector<double>()> local;
  // The local view's own tolerance, when it is tighter than the chain's (stage 4: the
  // integer part of a quantized product is exact, so only float sums may differ), and
  // whether a local view that fails fails the checkpoint even when the chain view passes.
  // Without localDecides the chain view alone decides, as in stages 1-3.
  std::optional<Tolerance> localTolerance;
  bool localDecides = false;
  // For a local view that fails: how far each element may move beyond the tolerance for a
  // reason it does not cover (Compare's slack), asked for only then; the view is compared
  // again with it. Empty: no slack.
  std::function<std::vector<double>()> localSlack;
  // The misconception the buffer matches, computed on the student's upstream when `onStudent`
  // (it is usable), else on the reference's.
  std::function<Recognition(bool onStudent)> recognise;
  // For a buffer not one element of which was written: a mistake that shows that way (its
  // rows written somewhere else), so the report names it instead of "not implemented yet".
  std::function<Recognition()> recogniseUnwritten;
  // A checkpoint checked some other way (bit for bit) reports itself; the engine only counts it.
  std::function<CheckpointReport()> custom;
};

struct ChainResult {
  std::vector<CheckpointReport> checkpoints;
  bool allUnwritten = true;  // not one element of any buffer checked by value written
};

ChainResult CheckChain(std::span<const CheckpointDescriptor> descriptors, double points);

// A case whose float64 reference holds an inf, a NaN or a value beyond the largest float
// grades nothing: its scales are too large for the arithmetic. Bad case data (exit 2),
// naming the case and the buffer.
Status RequireFiniteReference(std::string_view caseName, std::string_view buffer, std::span<const double> values);

// Every element written and finite: fit to be the upstream of a local check.
bool UsableAsUpstream(std::span<const float> values);

// A checkpoint that never ran (a call after one that crashed): entirely unwritten.
CheckpointReport NotReached(std::string name, std::string shape, size_t elements, double points);

// What an element holds, for a report: its position, both values and a note when the
// student's value is not a number to show ("never written", "NaN").
ElementDetail DescribeElement(std::string where, double expected, float got);

// Status, counts, error size, tolerance and points of a checkpoint from its comparison.
void RecordComparison(const Comparison& chain, double points, CheckpointReport& checkpoint);

// "a", "a and b", "a, b and c"
std::string JoinNames(const std::vector<std::string>& names);

}  // namespace wb
