// The text report as a student reads it, from report models built here: what a TODO line
// means, which units an error is printed in, how a failing case is summarised and shortened.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "runner/report/renderers.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace text_report_test {

namespace {

using wb::CaseReport;
using wb::CaseStatus;
using wb::CheckpointReport;
using wb::CheckStatus;
using wb::LocalStatus;
using wb::RunReport;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The report's line about a checkpoint: the one whose name follows the status tag.
std::string LineOf(const std::string& text, const std::string& name) {
  for (const auto& line : Lines(text)) {
    if (line.size() > 8 && line.rfind("  ", 0) == 0 && line.substr(8, name.size() + 1) == name + " ") return line;
  }
  return "";
}

CheckpointReport Passing(const std::string& name, double maxError, double rms) {
  CheckpointReport cp;
  cp.name = name;
  cp.shape = "4 x 512";
  cp.total = 2048;
  cp.maxAbsError = maxError;
  cp.rms = rms;
  cp.atol = 1e-3 * rms;
  cp.rtol = 1e-4;
  return cp;
}

CheckpointReport Unwritten(const std::string& name, size_t total) {
  CheckpointReport cp;
  cp.name = name;
  cp.shape = "4 x 128";
  cp.status = CheckStatus::kFail;
  cp.total = cp.failing = cp.unwritten = total;
  return cp;
}

RunReport OneCase(std::vector<CheckpointReport> checkpoints, CaseStatus status) {
  RunReport r;
  r.stage = 1;
  r.stageTitle = "One decoder block";
  r.impl = "student";
  r.source = "stages/01-block/block.cc";
  r.lesson = "docs/stages/01-block.md";
  r.caseFile = "data/stage01/visible.json";
  r.status = wb::RunStatus::kFail;
  CaseReport c;
  c.name = "visible-T4";
  c.parameters = "T=4, seed 1";
  c.status = status;
  c.checkpoints = std::move(checkpoints);
  for (const auto& cp : c.checkpoints) {
    if (cp.status == CheckStatus::kFail) {
      c.firstFailure = cp.name;
      break;
    }
  }
  r.cases.push_back(std::move(c));
  return r;
}

}  // namespace

TEST_CASE("a buffer with not one element written is TODO wherever it is, never FAIL") {
  // The first failure is q, never written; k and v after it are never written either.
  const RunReport r = OneCase({Passing("norm1", 6.6e-7, 0.6), Unwritten("q", 2048), Unwritten("k", 512),
                               Unwritten("v", 512)},
                              CaseStatus::kFail);
  const std::string text = wb::RenderText(r, {});
  for (const char* name : {"q", "k", "v"}) {
    CAPTURE(name);
    const std::string line = LineOf(text, name);
    CHECK(line.rfind("  TODO  ", 0) == 0);
    CHECK(line.find("not implemented yet") != std::string::npos);
  }
  CHECK(text.find("FAIL  k") == std::string::npos);
  CHECK(text.find("512 of 512 elements off") == std::string::npos);
}

TEST_CASE("a stopped case's unreached buffers are TODO too, and say why") {
  RunReport r = OneCase({Passing("norm1", 6.6e-7, 0.6), Unwritten("attnOut", 2048)}, CaseStatus::kCrash);
  r.cases[0].headline = "decoder_block crashed with a segmentation fault";
  const std::string line = LineOf(wb::RenderText(r, {}), "attnOut");
  CHECK(line.rfind("  TODO  ", 0) == 0);
  CHECK(line.find("not reached: your code stopped before writing any of it") != std::string::npos);
}

TEST_CASE("an error is printed in both units: absolute and as a fraction of the buffer's RMS") {
  CheckpointReport q = Passing("q", 1.4e-2, 4.5);
  q.status = CheckStatus::kFail;
  q.failing = 12;
  q.local = LocalStatus::kFail;
  q.atol = 0.0045;
  q.worst = wb::ElementDetail{.where = "token 1, head 0, channel 3", .expected = 0.5, .got = 0.52, .gotNote = ""};
  const RunReport r = OneCase({Passing("norm1", 6.6e-7, 0.6), q}, CaseStatus::kFail);
  const std::string text = wb::RenderText(r, {});
  CHECK(LineOf(text, "norm1").find("max |error| 6.6e-07 = 1.1e-06 × RMS") != std::string::npos);
  CHECK(text.find("allowed: |got - expected| <= 0.0045 (= 1e-03 × RMS) + 1e-04 × |expected|") != std::string::npos);
  CHECK(text.find("max error ") == std::string::npos);  // no bare "error" without its unit

  // A hidden case's RMS is redacted, and its error is only a power of ten: absolute, and it
  // says it is approximate.
  RunReport hidden = r;
  hidden.cases[0].hidden = true;
  wb::Redact(hidden.cases[0]);
  const std::string hiddenText = wb::RenderText(hidden, {});
  CHECK(LineOf(hiddenText, "norm1").find("max |error| about 1e-07") != std::string::npos);
  CHECK(hiddenText.find("6.6") == std::string::npos);
  CHECK(hiddenText.find("RMS") == std::string::npos);
}

namespace {

// One stage-2 call's twelve checkpoints, all passing, with the stage's dependency graph.
std::vector<CheckpointReport> Call(int number) {
  const std::string step = "step" + std::to_string(number) + ".";
  const std::vector<std::pair<std::string, std::vector<std::string>>> graph = {
      {"norm1", {}},
      {"q", {"norm1"}},
      {"k", {"norm1"}},
      {"v", {"norm1"}},
      {"cacheOtherRows", {}},
      {"kCache", {"k"}},
      {"vCache", {"v"}},
      {"attnOut", {"q", "kCache", "vCache", "cacheOtherRows"}},
      {"residual1", {"norm1", "attnOut"}},
      {"norm2", {"residual1"}},
      {"ffnOut", {"norm2"}},
      {"output", {"residual1", "ffnOut"}}};
  std::vector<CheckpointReport> call;
  for (const auto& [name, inputs] : graph) {
    CheckpointReport cp = Passing(step + name, 1e-6, 0.5);
    cp.shape = "1 x 512";
    cp.local = LocalStatus::kPass;
    for (const auto& input : inputs) cp.computedFrom.push_back(step + input);
    call.push_back(cp);
  }
  for (int earlier = 1; earlier < number; ++earlier) {
    for (const char* cache : {"kCache", "vCache", "cacheOtherRows"}) {
      call[7].computedFrom.push_back("step" + std::to_string(earlier) + "." + cache);
    }
  }
  return call;
}

CheckpointReport& Find(RunReport& r, const std::string& name) {
  for (auto& cp : r.cases[0].checkpoints) {
    if (cp.name == name) return cp;
  }
  FAIL("no checkpoint " << name);
  return r.cases[0].checkpoints[0];
}

void Fail(CheckpointReport& cp, LocalStatus local) {
  cp.status = CheckStatus::kFail;
  cp.failing = 100;
  cp.local = local;
}

wb::MisconceptionHit RopeWithinCall(const std::string& buffer) {
  return {"rope-position-within-call", "Your " + buffer + " is rotated with row t.",
          "docs/stages/02-kv-cache.md#rope-at-the-absolute-position"};
}

// The visible stage-2 case of a student whose RoPE uses row t: step 1 passes, step 2's q and
// k are wrong, and everything computed from them is off only because of them.
RunReport RopeRowTReport() {
  std::vector<CheckpointReport> all = Call(1);
  for (const auto& cp : Call(2)) all.push_back(cp);
  RunReport r = OneCase(all, CaseStatus::kFail);
  r.stage = 2;
  r.stageTitle = "Decoding with a KV cache";
  r.lesson = "docs/stages/02-kv-cache.md";
  Fail(Find(r, "step2.q"), LocalStatus::kFail);
  Find(r, "step2.q").misconception = RopeWithinCall("q");
  Fail(Find(r, "step2.k"), LocalStatus::kFail);
  Find(r, "step2.k").misconception = RopeWithinCall("k");
  for (const char* name : {"step2.kCache", "step2.attnOut", "step2.residual1", "step2.norm2", "step2.ffnOut",
                           "step2.output"}) {
    Fail(Find(r, name), LocalStatus::kPass);
  }
  r.cases[0].firstFailure = "step2.q";
  return r;
}

}  // namespace

TEST_CASE("after the first failure, a call's buffers that are only consequences share one line") {
  const RunReport r = RopeRowTReport();
  const std::string text = wb::RenderText(r, {});
  const auto lines = Lines(text);
  CAPTURE(text);
  CHECK(text.find("  FAIL  6 later buffers of step2 are off only because of step2.q and step2.k: kCache, attnOut, "
                  "residual1, norm2, ffnOut and output\n") != std::string::npos);
  for (const char* consequence : {"step2.kCache", "step2.attnOut", "step2.output"}) {
    CAPTURE(consequence);
    CHECK(LineOf(text, consequence).empty());
  }
  // The mistake is said once; k's line points back to q's.
  CHECK(text.find("> the same mistake as step2.q (rope-position-within-call)") != std::string::npos);
  // Header (2), what to fix (1), blank, case (1), step 1 (one line: all pass), step 2: 4 ok,
  // q (3), k (2), the shared line (1); then blank, the summary and the --verbose hint.
  CHECK(text.find("  ok    step1: all 12 buffers pass (max |error| <= 2.0e-06 × RMS)\n") != std::string::npos);
  CHECK(lines.size() == 2 + 1 + 1 + 1 + 1 + 4 + 3 + 2 + 1 + 3);

  // --verbose shows every buffer on its own line.
  const std::string verbose = wb::RenderText(r, {.verbose = true});
  CHECK(verbose.find("later buffers of step2") == std::string::npos);
  for (const char* consequence : {"step2.kCache", "step2.attnOut", "step2.output"}) {
    CAPTURE(consequence);
    CHECK(LineOf(verbose, consequence).rfind("  FAIL  ", 0) == 0);
  }
  CHECK(Lines(verbose).size() == lines.size() - 2 + 12 + 6);  // step 1's twelve; the shared line's six
}

TEST_CASE("what to fix is said at the top, after the header, and follows the dependency graph") {
  const std::string text = wb::RenderText(RopeRowTReport(), {});
  const auto lines = Lines(text);
  REQUIRE(lines.size() > 3);
  CHECK(lines[2].rfind("> Fix step2.q first (case visible-T4): Your q is rotated with row t.", 0) == 0);
  // 6 buffers are computed from q (kCache is not: it is k's copy); k is the same mistake.
  CHECK(lines[2].find("5 later buffers computed from it fail too") != std::string::npos);
  CHECK(lines[2].find("The same mistake shows at step2.k.") != std::string::npos);
  CHECK(text.find("every buffer after it") == std::string::npos);
  // The summary at the bottom says the same.
  CHECK(text.find("1 of 1 case failed. Fix step2.q first") != std::string::npos);
}

TEST_CASE("a first wrong buffer that feeds nothing is not said to feed every buffer after it") {
  RunReport r = OneCase({Passing("norm1", 1e-6, 0.5), Passing("ffnOut", 1e-6, 0.5), Passing("output", 1e-6, 0.5)},
                        CaseStatus::kFail);
  Find(r, "ffnOut").computedFrom = {"norm1"};
  Find(r, "output").computedFrom = {"ffnOut"};
  Fail(Find(r, "output"), LocalStatus::kFail);
  r.cases[0].firstFailure = "output";
  const std::string text = wb::RenderText(r, {});
  CHECK(Lines(text)[2].find("Nothing is computed from output: the step that writes it is the one to fix.") !=
        std::string::npos);
  CHECK(text.find("every buffer after it") == std::string::npos);
}

TEST_CASE("a wrong buffer that the first one does not feed is named as a mistake of its own") {
  // step1.kCache is wrong (keys cached before RoPE); step2.q is wrong too, computed from step2.norm1 only.
  std::vector<CheckpointReport> all = Call(1);
  for (const auto& cp : Call(2)) all.push_back(cp);
  RunReport r = OneCase(all, CaseStatus::kFail);
  Fail(Find(r, "step1.kCache"), LocalStatus::kFail);
  Find(r, "step1.kCache").misconception =
      wb::MisconceptionHit{"keys-cached-before-rope", "Your kCache rows hold the keys before RoPE.", "l#k"};
  for (const char* name : {"step1.attnOut", "step1.residual1", "step1.norm2", "step1.ffnOut", "step1.output",
                           "step2.attnOut", "step2.residual1", "step2.norm2", "step2.ffnOut", "step2.output"}) {
    Fail(Find(r, name), LocalStatus::kPass);
  }
  Fail(Find(r, "step2.q"), LocalStatus::kFail);
  r.cases[0].firstFailure = "step1.kCache";
  const std::string fix = Lines(wb::RenderText(r, {}))[2];
  CHECK(fix.rfind("> Fix step1.kCache first", 0) == 0);
  CHECK(fix.find("10 later buffers computed from it fail too") != std::string::npos);
  CHECK(fix.find("step2.q is wrong too, and not computed from step1.kCache.") != std::string::npos);
}

TEST_CASE("the headline never calls a buffer wrong on its own when its line says it is off because of another") {
  // step2.attnOut reads the rows step 1 stored, but the graph links it to step 2's q and
  // cache rows only; its step is right for what it was given (local pass), so its line says
  // "off only because an earlier buffer is", and the headline must not list it as a mistake.
  std::vector<CheckpointReport> all = Call(1);
  for (const auto& cp : Call(2)) all.push_back(cp);
  RunReport r = OneCase(all, CaseStatus::kFail);
  Fail(Find(r, "step1.kCache"), LocalStatus::kFail);
  Find(r, "step1.kCache").computedFrom.clear();
  for (const char* name : {"step1.attnOut", "step1.residual1", "step1.norm2", "step1.ffnOut", "step1.output"}) {
    Fail(Find(r, name), LocalStatus::kPass);
  }
  Fail(Find(r, "step2.attnOut"), LocalStatus::kPass);
  Find(r, "step2.attnOut").computedFrom = {"step2.q", "step2.kCache", "step2.vCache"};
  r.cases[0].firstFailure = "step1.kCache";
  const std::string text = wb::RenderText(r, {});
  CHECK(LineOf(text, "step2.attnOut").find("off only because") != std::string::npos);
  const std::string fix = Lines(text)[2];
  CHECK(fix.rfind("> Fix step1.kCache first", 0) == 0);
  CHECK(fix.find("step2.attnOut") == std::string::npos);
  CHECK(fix.find("not computed from") == std::string::npos);
}

TEST_CASE("a case that stopped, or wrote where it must not, is summarised by its headline") {
  RunReport r = OneCase({Passing("norm1", 6.6e-7, 0.6), Unwritten("attnOut", 2048)}, CaseStatus::kCrash);
  r.cases[0].headline = "decoder_block crashed with a segmentation fault.";
  CHECK(Lines(wb::RenderText(r, {}))[2] ==
        "> Fix this first (case visible-T4): decoder_block crashed with a segmentation fault. Lesson: "
        "docs/stages/01-block.md");
}

TEST_CASE("a hidden case's summary says what fails and what it feeds, nothing of how") {
  RunReport r = RopeRowTReport();
  r.cases[0].hidden = true;
  wb::Redact(r.cases[0]);
  const std::string fix = Lines(wb::RenderText(r, {}))[2];
  CHECK(fix.rfind("> Fix step2.q first (case visible-T4). 5 later buffers computed from it fail too", 0) == 0);
  CHECK(fix.find("step2.k") == std::string::npos);
}

}  // namespace text_report_test
