// The report model: what a run found, independent of how it is printed.
//
// Contract: the stage drivers fill it; the renderers (text, JSON; JUnit and Gradescope
// build on the same model) only print it. A hidden case's expected values, inputs, worst
// element, samples, diagnosis and the child's output are removed from the model (Redact)
// by RunCase (runner/engine/check.h) as soon as its driver returns, before the report
// reaches a renderer or any other code, so no renderer and no driver can leak them.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace wb {

struct ElementDetail {
  std::string where;  // "token 2, head 3, channel 17"
  double expected = 0;
  double got = 0;
  std::string gotNote;  // "never written", "NaN", ... when got is not a number to show
};

struct MisconceptionHit {
  std::string id;        // "rope-adjacent-pairs"
  std::string sentence;  // one plain sentence
  std::string lesson;    // "docs/stages/01-block.md#..."
};

enum class CheckStatus { kPass, kFail };
enum class LocalStatus { kPass, kFail, kNotChecked };

struct CheckpointReport {
  std::string name;
  std::string shape;  // "4 x 512"
  CheckStatus status = CheckStatus::kPass;
  LocalStatus local = LocalStatus::kNotChecked;
  size_t total = 0;
  size_t failing = 0;
  size_t unwritten = 0;
  size_t fromUnwritten = 0;
  size_t nanCount = 0;
  size_t infCount = 0;
  double maxAbsError = 0;  // over finite elements
  // The RMS of the expected buffer: the unit of the lessons' error tables and of atol's
  // absolute term (0 when the check has no such scale, as for bit-exact cache rows).
  double rms = 0;
  double atol = 0;
  double rtol = 0;
  std::optional<ElementDetail> worst;
  std::vector<ElementDetail> samples;
  std::optional<MisconceptionHit> misconception;
  std::string observation;  // what the runner can see when no misconception matches
  // The checkpoints this one is computed from, by reported name: the stage's dependency
  // graph, from which a report says what a wrong buffer feeds (and what it does not).
  std::vector<std::string> computedFrom;
  double points = 0;
  double maxPoints = 0;
  // Passed, but scored 0 because it passes when nothing was done and this checkpoint, the
  // case's first, did not pass (GateGuards).
  std::string gatedBy;
};

enum class CaseStatus { kPass, kFail, kNotImplemented, kCrash, kTimeout, kExitedEarly };

struct CaseReport {
  std::string name;
  bool hidden = false;
  std::string parameters;  // "T=4, seed 1" (empty for hidden cases)
  CaseStatus status = CaseStatus::kPass;
  std::string headline;    // one sentence when the case did not simply pass or fail
  std::vector<std::string> notes;
  std::optional<std::string> firstFailure;
  std::vector<CheckpointReport> checkpoints;
  std::string childOutput;  // trimmed stdout + stderr of the student's code
  double callSeconds = 0;
  double wallSeconds = 0;   // the child's whole life, measured by the runner (0: not kept)
  // Why every checkpoint scored 0 although some passed ("this case scores 0 because it
  // crashed"); empty when the points are the checkpoints' own.
  std::string zeroedBecause;
};

enum class RunStatus { kPass, kFail, kCompileError };

// One figure of Gradescope's leaderboard (check --leaderboard), measured by the runner.
struct LeaderboardEntry {
  std::string name;   // "fused_block GFLOP/s (T=512, 1 thread)"
  double value = 0;
  bool ascending = false;  // true when smaller is better
};

// `check N --solutions` on a stage whose kernels come in instruction-set versions: the visible
// suite once more through each (runner/engine/kernel_versions.h).
struct KernelVersionRun {
  std::string name;    // "avx512vnni"
  bool ran = false;    // false: this CPU lacks its instructions (note says which)
  int passed = 0;
  int total = 0;
  std::string note;
};

struct RunReport {
  int stage = 0;
  std::string stageTitle;
  std::string impl;        // "student", "solution", or the path of another harness
  std::string source;      // the stage file checked
  std::string lesson;
  std::string nextStage;   // "stage 2: Decoding with a KV cache (docs/...)", empty at the end
  std::string caseFile;
  // What the stage's code is compiled with (a student's file and the solution alike),
  // after the compiler itself: the language, warnings and the stage's own flags.
  std::vector<std::string> compileFlags;
  RunStatus status = RunStatus::kPass;
  std::string compilerOutput;
  bool compileStopped = false;  // kCompileError because the compiler ran past its time or CPU limit
  std::vector<CaseReport> cases;
  // The slow cases of the stage's visible suite (its full pass) that were not run because a
  // case of the quick pass failed; they run once every quick case passes (runner/engine/check.h).
  std::vector<std::string> casesNotRun;
  // Asked for with --leaderboard: what the stage ranks submissions by; a submission that
  // fails any case ranks with 0.
  std::vector<LeaderboardEntry> leaderboard;
  std::vector<KernelVersionRun> kernelVersions;
};

// Strips from a hidden case everything but names, pass/fail and error magnitudes, and
// those only as a power of ten (OrderOfMagnitude).
void Redact(CaseReport& report);

// 10^floor(log10(value)), kept within [kSmallestHiddenError, kLargestHiddenError]; 0, NaN
// and inf unchanged.
constexpr double kSmallestHiddenError = 1e-30;
constexpr double kLargestHiddenError = 1e30;
double OrderOfMagnitude(double value);

std::string_view ToString(CaseStatus s);
std::string_view ToString(RunStatus s);
std::string_view ToString(CheckStatus s);
std::string_view ToString(LocalStatus s);

}  // namespace wb
