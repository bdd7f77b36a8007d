// Stage 2 end to end: the solution passes with every call's checkpoints, the starter stops
// at its first TODO, a mistake that shows only in a later call is reported there, a crash
// in a call ends the case with the same checkpoints, hidden cases stay redacted, and the
// benchmark runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace decode_cli_test {

using nlohmann::json;
using wbtest::Quote;
using wbtest::Source;
using wbtest::Workbook;

namespace {

const std::vector<std::string> kCallCheckpoints = {"norm1",  "q",       "k",         "v",     "cacheOtherRows", "kCache",
                                                   "vCache", "attnOut", "residual1", "norm2", "ffnOut",         "output"};

// The checkpoint names a case of these steps reports, in order.
std::vector<std::string> ExpectedNames(const std::vector<int>& steps) {
  std::vector<std::string> names;
  for (size_t s = 0; s < steps.size(); ++s) {
    for (const auto& c : kCallCheckpoints) names.push_back(fmt::format("step{}.{}", s + 1, c));
  }
  if (steps.size() > 1) names.emplace_back("sameAsPrefill");
  return names;
}

std::vector<std::string> Names(const json& c) {
  std::vector<std::string> names;
  for (const auto& cp : c["checkpoints"]) names.push_back(cp["name"].get<std::string>());
  return names;
}

std::set<std::string> Keys(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

std::string ReadFile(const std::string& path) { return wbtest::ReadFile(path); }

// `text` with its one occurrence of `find` replaced.
std::string Replaced(std::string text, const std::string& find, const std::string& replace) {
  const size_t at = text.find(find);
  REQUIRE(at != std::string::npos);
  REQUIRE(text.find(find, at + 1) == std::string::npos);
  return text.replace(at, find.size(), replace);
}

// A stages/ tree with stage 1 solved and `decode` as stage 2's file.
std::string StagesTree(const std::string& name, const std::string& decode) {
  const std::string dir = std::filesystem::temp_directory_path() / fmt::format("wb-decode-{}-{}", getpid(), name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/01-block");
  std::filesystem::create_directories(dir + "/02-kv-cache");
  std::filesystem::copy_file(Source("solutions/01-block/block.cc"), dir + "/01-block/block.cc");
  std::ofstream(dir + "/02-kv-cache/decode.cc") << decode;
  return dir;
}

// Stage `number`'s line of `list`.
std::string StageLine(const std::string& out, int number) {
  const size_t at = out.find(fmt::format("  {}  ", number));
  REQUIRE(at != std::string::npos);
  return out.substr(at, out.find('\n', at) - at);
}

}  // namespace

TEST_CASE("a mistake that only a later call can show is reported in that call, with absolute positions") {
  const auto ran = Workbook("check 2 --format json --harness " + Quote(wbtest::Env("WB_ROPE_WITHIN_CALL_HARNESS")));
  CHECK(ran.status == 1);
  const json c = json::parse(ran.out)["cases"][0];
  CHECK(c["status"] == "fail");
  CHECK(c["first_failure"] == "step2.q");
  for (const auto& cp : c["checkpoints"]) {
    if (cp["name"].get<std::string>().rfind("step1.", 0) == 0) CHECK(cp["status"] == "pass");
    if (cp["name"] != "step2.q") continue;
    CHECK(cp["misconception_id"] == "rope-position-within-call");
    CHECK(cp["lesson"] == "docs/stages/02-kv-cache.md#rope-at-the-absolute-position");
    // The visible case's second call is the token at position 5.
    CHECK(cp["worst"]["where"].get<std::string>().rfind("token 5, head", 0) == 0);
  }
}

TEST_CASE("RoPE left out is named as such, never as RoPE with the call's row t") {
  const std::string harness = Quote(wbtest::Env("WB_ROPE_NOT_APPLIED_HARNESS"));
  const auto ran = Workbook("check 2 --format json --harness " + harness);
  CHECK(ran.status == 1);
  const json c = json::parse(ran.out)["cases"][0];
  CHECK(c["first_failure"] == "step1.q");
  std::set<std::string> named;
  for (const auto& cp : c["checkpoints"]) {
    if (cp["misconception_id"].is_string()) named.insert(cp["misconception_id"].get<std::string>());
    // In the one-token steps at pos > 0 row t is row 0, which turns by nothing: without the
    // prefill the two mistakes would give the same q there.
    if (cp["name"] == "step2.q" || cp["name"] == "step2.k") CHECK(cp["misconception_id"] == "rope-not-applied");
  }
  CHECK(named == std::set<std::string>{"rope-not-applied"});

  // A case of one-token calls cannot tell the two apart: the runner names neither.
  const std::string path = std::filesystem::temp_directory_path() / fmt::format("wb-one-token-{}.json", getpid());
  std::ofstream(path) << R"({"stage": 2, "cases": [{"name": "ones", "steps": [1, 1, 1], "seed": 21}]})";
  for (const std::string& h : {harness, Quote(wbtest::Env("WB_ROPE_WITHIN_CALL_HARNESS"))}) {
    CAPTURE(h);
    const auto ones = Workbook("check 2 --format json --harness " + h + " --cases " + Quote(path));
    CHECK(ones.status == 1);
    const json one = json::parse(ones.out)["cases"][0];
    CHECK(one["first_failure"] == "step2.q");
    for (const auto& cp : one["checkpoints"]) {
      CAPTURE(cp["name"]);
      CHECK(cp["misconception_id"].is_null());
      if (cp["name"] == "step2.q") {
        CHECK(cp["observation"].get<std::string>().find(
                  "cannot tell apart: rope-position-within-call and rope-not-applied") != std::string::npos);
      }
    }
  }
  std::filesystem::remove(path);
}

TEST_CASE("a stage-2 report says what to fix at the top and gives each call's consequences one line") {
  const std::string harness = Quote(wbtest::Env("WB_ROPE_WITHIN_CALL_HARNESS"));
  const auto ran = Workbook("check 2 --harness " + harness);
  CHECK(ran.status == 1);
  std::vector<std::string> lines;
  std::istringstream in(ran.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() > 3);
  CHECK(lines[2].rfind("> Fix step2.q first (case prefill-5-then-3-steps): Your q is rotated with the RoPE table row",
                       0) == 0);
  CHECK(ran.out.find("every buffer after it") == std::string::npos);
  for (int step = 2; step <= 4; ++step) {
    CAPTURE(step);
    CHECK(ran.out.find(fmt::format("  FAIL  6 later buffers of step{} are off only because of", step)) !=
          std::string::npos);
    CHECK(ran.out.find(fmt::format("FAIL  step{}.attnOut", step)) == std::string::npos);
  }
  // Step 1 in one line (every buffer passes), then per later call 4 passes, q, k and the
  // shared line; the first failure's details (7); header, both summaries and sameAsPrefill.
  CHECK(ran.out.find("  ok    step1: all 12 buffers pass") != std::string::npos);
  // The case's own block, from its heading to the next case's: issue 9 counted about 72
  // lines for this one case; header and summaries add 5.
  const auto first = std::find_if(lines.begin(), lines.end(),
                                  [](const std::string& l) { return l.rfind("case prefill-5-then-3-steps", 0) == 0; });
  REQUIRE(first != lines.end());
  const auto next = std::find_if(first + 1, lines.end(), [](const std::string& l) { return l.rfind("case ", 0) == 0; });
  CHECK(next - first <= 38);
  const auto verbose = Workbook("check 2 --verbose --harness " + harness);
  CHECK(verbose.out.find("FAIL  step2.attnOut") != std::string::npos);
  CHECK(verbose.out.find("later buffers of step2") == std::string::npos);
  CHECK(std::count(verbose.out.begin(), verbose.out.end(), '\n') > static_cast<long>(lines.size()) + 15);
}

TEST_CASE("a crash in a decode step ends the case there and keeps every checkpoint in the report") {
  const auto ran = Workbook("check 2 --format json --harness " + Quote(wbtest::Env("WB_CRASH_HARNESS")));
  CHECK(ran.status == 1);
  const json c = json::parse(ran.out)["cases"][0];
  CHECK(c["status"] == "crash");
  CHECK(c["first_failure"] == "step2.kCache");
  CHECK(c["headline"].get<std::string>().rfind("step 2 (1 token at position 5): decoder_step crashed", 0) == 0);
  CHECK(Names(c) == ExpectedNames({5, 1, 1, 1}));
  for (const auto& cp : c["checkpoints"]) {
    if (cp["name"].get<std::string>().rfind("step3.", 0) == 0) CHECK(cp["unwritten"] == cp["total"]);
  }
}

TEST_CASE("a hidden stage-2 case reports names, pass/fail and error sizes only") {
  const std::string harness = Quote(wbtest::Env("WB_ROPE_WITHIN_CALL_HARNESS"));
  // Two short hidden cases (the example suite's long one would only slow the test down).
  const std::string path = std::filesystem::temp_directory_path() / fmt::format("wb-decode-hidden-{}.json", getpid());
  std::ofstream(path) << R"({"stage": 2, "cases": [
      {"name": "a", "steps": [5, 1, 1], "seed": 31, "hidden": true},
      {"name": "b", "steps": [4, 3], "seed": 32, "hidden": true}]})";
  const std::string cases = Quote(path);
  // What the instructor sees with --show-hidden: the facts that must not leak.
  const auto revealed = Workbook("check 2 --format json --show-hidden --harness " + harness + " --cases " + cases);
  REQUIRE(revealed.status == 1);
  std::vector<std::string> secrets;
  const json revealedReport = json::parse(revealed.out);
  for (const auto& c : revealedReport["cases"]) {
    secrets.push_back(c["parameters"].get<std::string>());
    for (const auto& cp : c["checkpoints"]) {
      if (cp["worst"].is_object()) secrets.push_back(cp["worst"]["where"].get<std::string>());
      if (cp["observation"].is_string()) secrets.push_back(cp["observation"].get<std::string>());
      if (cp["misconception"].is_string()) secrets.push_back(cp["misconception"].get<std::string>());
    }
  }
  REQUIRE(secrets.size() > 10);
  const auto ran = Workbook("check 2 --format json --harness " + harness + " --cases " + cases);
  const auto text = Workbook("check 2 --harness " + harness + " --cases " + cases);
  CHECK(ran.status == 1);
  CHECK(text.status == 1);
  for (const auto& secret : secrets) {
    CAPTURE(secret);
    CHECK(ran.out.find(secret) == std::string::npos);
    CHECK(text.out.find(secret) == std::string::npos);
  }
  const json report = json::parse(ran.out);
  for (const auto& c : report["cases"]) {
    CHECK(Keys(c) == std::set<std::string>{"name", "hidden", "status", "first_failure", "headline", "zeroed_because",
                                           "checkpoints"});
    for (const auto& cp : c["checkpoints"]) {
      CHECK(Keys(cp) == std::set<std::string>{"name", "status", "max_abs_error", "points", "max_points", "misconception",
                                              "never_written", "gated_by"});
      CHECK(cp["misconception"].is_null());
    }
  }
  std::filesystem::remove(path);
}

TEST_CASE("bench 2 validates first, then prints one row per context with both times and their ratio") {
  const auto ran = Workbook("bench 2 --solutions --contexts 8,16 --budget 0.05");
  CHECK(ran.status == 0);
  CHECK(ran.out.find("passes stage 2's visible cases; timing it") != std::string::npos);
  CHECK(ran.out.find("decode step") != std::string::npos);
  CHECK(ran.out.find("recompute") != std::string::npos);
  int rows = 0;
  std::istringstream lines(ran.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string context;
    fields >> context;
    if (context != "8" && context != "16") continue;
    ++rows;
    CHECK(line.back() == 'x');
  }
  CHECK(rows == 2);
  const auto noBench = Workbook("bench 1");  // stage 1 has no benchmark
  CHECK(noBench.status == 2);
  CHECK(noBench.err.find("stage 1 has no benchmark; the ones there are: `bench 2`, `bench 3`") != std::string::npos);
  CHECK(Workbook("bench 2 --contexts 0").status == 2);
  CHECK(Workbook("bench 2 --solutions --contexts 5000").status == 2);
}

TEST_CASE("bench 2 refuses to time a kernel that fails the visible cases") {
  // The shipped starter computes nothing; a planted variant computes the wrong thing.
  const std::string dir = std::filesystem::temp_directory_path() / ("wb-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir + "/02-kv-cache");
  std::filesystem::copy_file(wbtest::Env("WB_ROPE_WITHIN_CALL_SOURCE"), dir + "/02-kv-cache/decode.cc");
  for (const std::string& tree : {Source("stages"), dir}) {
    CAPTURE(tree);
    const auto ran = Workbook("bench 2 --contexts 8 --budget 0.05 --stages-dir " + Quote(tree));
    CHECK(ran.status == 1);
    CHECK(ran.out.find("bench: not timed.") != std::string::npos);
    CHECK(ran.out.find("recompute") == std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("list and hint name stage 2's progress by the table's checkpoint names") {
  // Stage 1 solved; stage 2 right in its first call and wrong at q from the second on.
  const std::string dir = StagesTree("list-hint", ReadFile(wbtest::Env("WB_ROPE_WITHIN_CALL_SOURCE")));
  const auto list = Workbook("list --stages-dir " + Quote(dir));
  CHECK(list.status == 0);
  const std::string line = StageLine(list.out, 2);
  CHECK(line.find("4 / 13 checkpoints") != std::string::npos);  // norm1, v, cacheOtherRows, vCache
  CHECK(line.find("next: q") != std::string::npos);
  const std::string state = "WORKBOOK_HINT_STATE=" + Quote(dir + "/hints.json") + " ";
  auto hint = [&state](const std::string& args) {
    return wbtest::RunShell(state + Quote(wbtest::Env("WB_RUNNER")) + " hint 2 " + args);
  };
  // The first failure, step2.q, is a mistake the runner names: its hints, not q's.
  const auto first = hint("--stages-dir " + Quote(dir));
  CHECK(first.status == 0);
  CHECK(first.out.find("The first wrong buffer is step2.q, and the runner recognises the mistake "
                       "(rope-position-within-call)") != std::string::npos);
  CHECK(first.out.find("Hints for rope-position-within-call (stage 2), 1 of 3:") != std::string::npos);
  // A checkpoint by its reported name or by the table's, one record for both.
  const auto named = hint("step3.attnOut");
  CHECK(named.status == 0);
  CHECK(named.out.find("Hints for attnOut (stage 2), 1 of 3:") != std::string::npos);
  const auto bare = hint("attnOut");
  CHECK(bare.status == 0);
  CHECK(bare.out.find("Hints for attnOut (stage 2), 2 of 3:") != std::string::npos);
  CHECK(hint("sameAsPrefill").out.find("Hints for sameAsPrefill (stage 2), 1 of 3:") != std::string::npos);
  const auto unknown = hint("step0.attnOut");
  CHECK(unknown.status == 2);
  CHECK(unknown.err.find("stage 2 has no checkpoint 'step0.attnOut'; its checkpoints are norm1, q, k, v, "
                         "cacheOtherRows, kCache") != std::string::npos);
  CHECK(hint("attnout").status == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("list counts a stage-2 checkpoint only where the case got that far, and names the first failure") {
  // The untouched starter writes nothing, so the rows it must leave alone are untouched too:
  // that is not progress.
  const auto untouched = Workbook("list");
  CHECK(untouched.status == 0);
  const std::string starter = StageLine(untouched.out, 2);
  CHECK(starter.find(" 0 / 13 checkpoints") != std::string::npos);
  CHECK(starter.find("not started") != std::string::npos);

  // attnOut wrong in every prefill: everything before it passes, the first failure is
  // step1.attnOut.
  const std::string solution = ReadFile(Source("solutions/02-kv-cache/decode.cc"));
  const std::string causal = "const int visible = pos + t + 1;";
  const std::string wholeCall = "const int visible = pos + n;";
  const std::string attention = StagesTree("list-attention", Replaced(solution, causal, wholeCall));
  const std::string line = StageLine(Workbook("list --stages-dir " + Quote(attention)).out, 2);
  CHECK(line.find(" 7 / 13 checkpoints  [#######......]") != std::string::npos);
  CHECK(line.find("next: attnOut") != std::string::npos);

  // Both mistakes: q is wrong from the second call on, attnOut already in the first. The
  // first failure in report order is step1.attnOut, though q comes first in the table.
  const std::string both = StagesTree(
      "list-both", Replaced(ReadFile(wbtest::Env("WB_ROPE_WITHIN_CALL_SOURCE")), causal, wholeCall));
  const auto ran = Workbook("check 2 --format json --stages-dir " + Quote(both));
  REQUIRE(ran.status == 1);
  CHECK(json::parse(ran.out)["cases"][0]["first_failure"] == "step1.attnOut");
  const std::string bothLine = StageLine(Workbook("list --stages-dir " + Quote(both)).out, 2);
  CHECK(bothLine.find("next: attnOut") != std::string::npos);
  CHECK(bothLine.find("next: q") == std::string::npos);
  for (const auto& dir : {attention, both}) std::filesystem::remove_all(dir);
}

TEST_CASE("bench 2 times the student's own file by default, the worked answer with --solutions") {
  const std::string tree = StagesTree("bench-own", ReadFile(Source("solutions/02-kv-cache/decode.cc")));
  const auto own = Workbook("bench 2 --contexts 8 --budget 0.05 --stages-dir " + Quote(tree));
  CHECK(own.status == 0);
  CHECK(own.out.find("bench: " + tree + "/02-kv-cache/decode.cc passes stage 2's visible cases; timing it") !=
        std::string::npos);
  CHECK(own.out.find("solutions/02-kv-cache/decode.cc") == std::string::npos);
  const auto worked = Workbook("bench 2 --solutions --contexts 8 --budget 0.05 --stages-dir " + Quote(tree));
  CHECK(worked.status == 0);
  CHECK(worked.out.find("bench: solutions/02-kv-cache/decode.cc passes stage 2's visible cases; timing it") !=
        std::string::npos);
  std::filesystem::remove_all(tree);
}

TEST_CASE("the default check 2 runs the whole visible suite, quick pass first, and a bug only an edge case shows fails it") {
  // What the visible suite holds: the quick pass in file order, then the slow full pass.
  const json suite = json::parse(ReadFile(Source("data/stage02/visible.json")));
  std::vector<std::string> quick;
  std::vector<std::string> slow;
  for (const auto& c : suite["cases"]) (c.value("slow", false) ? slow : quick).push_back(c["name"].get<std::string>());
  REQUIRE(!slow.empty());
  std::vector<std::string> everything = quick;
  everything.insert(everything.end(), slow.begin(), slow.end());
  auto caseNames = [](const json& report) {
    std::vector<std::string> names;
    for (const auto& c : report["cases"]) names.push_back(c["name"].get<std::string>());
    return names;
  };
  const auto solved = Workbook("check 2 --solutions --format json");
  CHECK(solved.status == 0);
  CHECK(caseNames(json::parse(solved.out)) == everything);

  // No running maximum: right while scores are small, inf once they reach the hundreds.
  const std::string harness = Quote(wbtest::Env("WB_NO_RUNNING_MAXIMUM_HARNESS"));
  const auto ran = Workbook("check 2 --format json --harness " + harness);
  CHECK(ran.status == 1);
  const json report = json::parse(ran.out);
  CHECK(caseNames(report) == quick);  // the full pass waits for the quick one
  bool caught = false;
  for (const auto& c : report["cases"]) {
    CAPTURE(c["name"].get<std::string>());
    if (c["name"] != "large-scores") {
      CHECK(c["status"] == "pass");
      continue;
    }
    caught = true;
    CHECK(c["status"] == "fail");
    CHECK(c["first_failure"] == "step1.attnOut");
    for (const auto& cp : c["checkpoints"]) {
      if (cp["name"] == "step1.attnOut") CHECK(cp["misconception_id"] == "no-max-subtraction");
    }
  }
  CHECK(caught);
  const auto text = Workbook("check 2 --harness " + harness);
  CHECK(text.status == 1);
  CHECK(text.out.find("is done") == std::string::npos);
}

}  // namespace decode_cli_test
