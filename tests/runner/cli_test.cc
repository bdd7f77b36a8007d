// The runner end to end, as a student, an instructor and a script see it: exit codes,
// report contents, hidden-case redaction, and clear errors for bad data.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace cli_test {

using nlohmann::json;
using wbtest::Quote;
using wbtest::Source;
using wbtest::Workbook;

namespace {


std::string TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("wb-cli-{}-{}", getpid(), name);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::set<std::string> Keys(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

}  // namespace

TEST_CASE("a hidden case reports names, pass/fail and error sizes only, in every format") {
  const std::string harness = Quote(wbtest::Env("WB_FAILING_HARNESS"));
  const std::string cases = Quote(Source("data/stage01/hidden-example.json"));
  // What the instructor sees with --show-hidden: the values that must not leak.
  const auto revealed = Workbook("check 1 --format json --show-hidden --harness " + harness + " --cases " + cases);
  REQUIRE(revealed.status == 1);
  std::vector<std::string> secrets;
  const json revealedReport = json::parse(revealed.out);
  for (const auto& c : revealedReport["cases"]) {
    secrets.push_back(c["parameters"].get<std::string>());
    for (const auto& cp : c["checkpoints"]) {
      for (const auto& e : cp["samples"]) secrets.push_back(fmt::format("{:.6g}", e["expected"].get<double>()));
      if (cp["worst"].is_object()) {
        secrets.push_back(fmt::format("{:.6g}", cp["worst"]["expected"].get<double>()));
        secrets.push_back(cp["worst"]["where"].get<std::string>());
      }
    }
  }
  REQUIRE(secrets.size() > 10);
  const auto hiddenJson = Workbook("check 1 --format json --harness " + harness + " --cases " + cases);
  const auto hiddenText = Workbook("check 1 --harness " + harness + " --cases " + cases);
  CHECK(hiddenJson.status == 1);
  CHECK(hiddenText.status == 1);
  for (const char* format : {"text", "json", "junit", "gradescope"}) {
    const auto hidden = Workbook(fmt::format("check 1 --format {} --harness {} --cases {}", format, harness, cases));
    CAPTURE(format);
    CHECK(hidden.status == 1);
    CHECK(hidden.out.find("expected") == std::string::npos);
    CHECK(hidden.out.find("worst") == std::string::npos);
    CHECK(hidden.out.find("elements") == std::string::npos);  // counts would give the shape away
    for (const auto& secret : secrets) {
      CAPTURE(secret);
      CHECK(hidden.out.find(secret) == std::string::npos);
    }
  }
  const json hiddenReport = json::parse(hiddenJson.out);
  for (const auto& c : hiddenReport["cases"]) {
    CHECK(Keys(c) == std::set<std::string>{"name", "hidden", "status", "first_failure", "headline", "zeroed_because",
                                           "checkpoints"});
    for (const auto& cp : c["checkpoints"]) {
      CHECK(Keys(cp) == std::set<std::string>{"name", "status", "max_abs_error", "points", "max_points", "misconception",
                                              "never_written", "gated_by"});
      CHECK(cp["misconception"].is_null());
    }
  }
  CHECK(hiddenText.out.find("expected") == std::string::npos);
  CHECK(hiddenText.out.find("worst") == std::string::npos);
}

TEST_CASE("a truncated or corrupted weight file exits 2 naming the file and how to regenerate it") {
  const std::string dir = TempDir("weights");
  const std::string good = wbtest::Env("WB_WEIGHTS");
  const std::string cut = dir + "/cut.wbk";
  const std::string flipped = dir + "/flipped.wbk";
  const auto size = std::filesystem::file_size(good);
  std::filesystem::copy_file(good, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, size - 1000);
  std::filesystem::copy_file(good, flipped, std::filesystem::copy_options::overwrite_existing);
  {
    std::fstream f(flipped, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    f.put('\x7f');
  }
  const auto truncated = Workbook("check 1 --solutions --weights " + Quote(cut));
  CHECK(truncated.status == 2);
  CHECK(truncated.err.find(cut) != std::string::npos);
  CHECK(truncated.err.find("(truncated)") != std::string::npos);
  CHECK(truncated.err.find("run ./workbook again to regenerate it") != std::string::npos);
  const auto corrupted = Workbook("check 1 --solutions --weights " + Quote(flipped));
  CHECK(corrupted.status == 2);
  CHECK(corrupted.err.find("checksum") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("bad case files and bad invocations exit 2 with a message naming what is wrong") {
  const std::string dir = TempDir("cases");
  const std::string typo = dir + "/typo.json";
  std::ofstream(typo) << R"({"stage": 1, "cases": [{"name": "a", "T": 4, "sed": 1}]})";
  auto ran = Workbook("check 1 --solutions --cases " + Quote(typo));
  CHECK(ran.status == 2);
  CHECK(ran.err == "workbook: " + typo + ": cases[0]: unknown field 'sed' (expected name, T or steps, seed, x_scale, "
                                         "w_scale, hidden, slow, points, description)\n");
  const std::string other = dir + "/other-stage.json";
  std::ofstream(other) << R"({"stage": 3, "cases": [{"name": "a", "T": 4, "seed": 1}]})";
  ran = Workbook("check 1 --solutions --cases " + Quote(other));
  CHECK(ran.status == 2);
  CHECK(ran.err == "workbook: " + other + ": field 'stage' is 3, but this is a check of stage 1\n");
  ran = Workbook("check 9");
  CHECK(ran.status == 2);
  CHECK(ran.err == "workbook: there is no stage 9; the stages are 1 to 5\n");
  ran = Workbook("check 1 --format yaml");
  CHECK(ran.status == 2);
  ran = Workbook("check 1 --cases " + Quote(dir + "/missing.json"));
  CHECK(ran.status == 2);
  CHECK(ran.err.find("missing.json: cannot open the case file") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a child whose harness refuses the region is the workbook's failure (exit 3), never the student's") {
  // Another stage's child: its harness finds another call layout in the region and stops
  // before calling any stage code.
  const auto ran = Workbook("check 1 --harness " + Quote(wbtest::Env("WB_OTHER_STAGE_HARNESS")));
  CHECK(ran.status == 3);
  CHECK(ran.out.empty());
  CHECK(ran.err.find("stopped before calling the stage function: the runner laid out the region for another call "
                     "layout: rebuild the workbook. This is a bug in the workbook, not in your code") !=
        std::string::npos);
}

TEST_CASE("a stage file that does not compile is a failure (exit 1) that shows the compiler's message") {
  const std::string dir = TempDir("broken");
  std::filesystem::create_directories(dir + "/01-block");
  std::ofstream(dir + "/01-block/block.cc") << "#include \"stage01_block.h\"\nvoid decoder_block(int T) { oops }\n";
  const auto ran = Workbook("check 1 --format json --stages-dir " + Quote(dir));
  CHECK(ran.status == 1);
  const json report = json::parse(ran.out);
  CHECK(report["status"] == "compile_error");
  CHECK(report["compiler_output"].get<std::string>().find("block.cc") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("--output writes the report to a file and nothing to stdout") {
  const std::string dir = TempDir("output");
  const std::string path = dir + "/report.json";
  const auto ran = Workbook("check 1 --solutions --format json --output " + Quote(path));
  CHECK(ran.status == 0);
  CHECK(ran.out.empty());
  std::ifstream in(path);
  CHECK(json::parse(in)["status"] == "pass");
  CHECK(!std::filesystem::exists(path + ".partial"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("--format junit is well-formed XML with one test per case and checkpoint") {
  const std::string dir = TempDir("junit");
  const std::string path = dir + "/report.xml";
  const std::string common = " --show-hidden --harness " + Quote(wbtest::Env("WB_FAILING_HARNESS")) + " --cases " +
                             Quote(Source("data/stage01/hidden-example.json"));
  const auto ran = Workbook("check 1 --format junit --output " + Quote(path) + common);
  CHECK(ran.status == 1);
  // The same run as JSON says how many checkpoints fail.
  const json report = json::parse(Workbook("check 1 --format json" + common).out);
  size_t checkpoints = 0, failing = 0;
  for (const auto& c : report["cases"]) {
    for (const auto& cp : c["checkpoints"]) {
      ++checkpoints;
      failing += cp["status"] == "fail" ? 1 : 0;
    }
  }
  REQUIRE(failing > 0);
  // Python's XML parser (meson brings python3 wherever the workbook builds) reads it back.
  const auto parsed = wbtest::RunShell(
      "python3 -c 'import sys, xml.etree.ElementTree as E\n"
      "r = E.parse(sys.argv[1]).getroot()\n"
      "cases = r.findall(\"testsuite/testcase\")\n"
      "print(r.tag, r.get(\"tests\"), len(cases), len([c for c in cases if c.find(\"failure\") is not None]))' " +
      Quote(path));
  CHECK(parsed.status == 0);
  CHECK(parsed.out == fmt::format("testsuites {} {} {}\n", checkpoints, checkpoints, failing));
  std::filesystem::remove_all(dir);
}

TEST_CASE("--format gradescope writes results.json with the points of the case file") {
  const std::string dir = TempDir("gradescope");
  const std::string cases = dir + "/points.json";
  std::ofstream(cases) << R"({"stage": 1, "cases": [{"name": "a", "T": 3, "seed": 5, "points": 2},
                                                   {"name": "b", "T": 2, "seed": 6, "hidden": true}]})";
  const auto ran = Workbook("check 1 --format gradescope --cases " + Quote(cases) + " --harness " +
                            Quote(wbtest::Env("WB_FAILING_HARNESS")));
  CHECK(ran.status == 1);
  const json results = json::parse(ran.out);
  REQUIRE(results["tests"].size() == 2);  // one test per case
  double sum = 0;
  for (const auto& t : results["tests"]) {
    CHECK(t["name"].is_string());
    CHECK((t["status"] == "passed" || t["status"] == "failed"));
    CHECK(t["output"].is_string());
    CHECK(t["visibility"] == "visible");
    CHECK(t["score"].get<double>() <= t["max_score"].get<double>());
    sum += t["score"].get<double>();
  }
  CHECK(results["tests"][0]["name"] == "a");
  CHECK(results["tests"][0]["max_score"] == 9 * 2.0);  // 2 points for each of the 9 checkpoints
  CHECK(results["tests"][0]["score"] == 4.0);          // norm1 and v are right in this variant (v has no RoPE)
  CHECK(results["tests"][0]["status"] == "failed");
  // Its output names the first failure (q), a hidden case's as "never written" or a power of ten.
  CHECK(results["tests"][0]["output"].get<std::string>().find("First failure: q: ") != std::string::npos);
  CHECK(results["tests"][1]["max_score"] == 9 * 1.0);
  CHECK(results["tests"][1]["output"].get<std::string>().find("First failure: q: max error about ") !=
        std::string::npos);
  CHECK(results["score"].get<double>() == sum);
  // The score is the points of the passing checkpoints, as the JSON report counts them.
  const auto asJson = Workbook("check 1 --format json --cases " + Quote(cases) + " --harness " +
                               Quote(wbtest::Env("WB_FAILING_HARNESS")));
  double expectedScore = 0;
  const json report = json::parse(asJson.out);
  for (const auto& c : report["cases"]) {
    for (const auto& cp : c["checkpoints"]) expectedScore += cp["points"].get<double>();
  }
  CHECK(sum == expectedScore);
  CHECK(sum < 9 * 2.0 + 9 * 1.0);
  // A solution scores everything.
  const auto full = Workbook("check 1 --solutions --format gradescope --cases " + Quote(cases));
  CHECK(full.status == 0);
  CHECK(json::parse(full.out)["score"] == 9 * 2.0 + 9 * 1.0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the default check 1 meets every edge case the lesson teaches: without epsilon, stage 1 is not done") {
  // RMSNorm without RMS_EPS is right on unit-scale rows and wrong on tiny ones; the visible
  // suite has tiny ones, so the default check (no --cases) fails and names the mistake.
  const std::string harness = Quote(wbtest::Env("WB_MISSING_EPSILON_HARNESS"));
  const auto checked = Workbook("check 1 --format json --harness " + harness);
  CHECK(checked.status == 1);
  const json report = json::parse(checked.out);
  // The quick pass ran in full (every case not marked slow); the slow ones wait for it.
  std::vector<std::string> quick;
  const json suite = json::parse(wbtest::ReadFile(Source("data/stage01/visible.json")));
  for (const auto& c : suite["cases"]) {
    if (!c.value("slow", false)) quick.push_back(c["name"].get<std::string>());
  }
  std::vector<std::string> ran;
  for (const auto& c : report["cases"]) ran.push_back(c["name"].get<std::string>());
  CHECK(ran == quick);
  bool caught = false;
  for (const auto& c : report["cases"]) {
    CAPTURE(c["name"].get<std::string>());
    if (c["status"] == "pass") continue;
    caught = true;
    CHECK(c["name"] == "tiny-inputs");
    CHECK(c["first_failure"] == "norm1");
    CHECK(c["checkpoints"][0]["misconception_id"] == "missing-epsilon");
  }
  CHECK(caught);
  const auto text = Workbook("check 1 --harness " + harness);
  CHECK(text.status == 1);
  CHECK(text.out.find("Stage 1 is done") == std::string::npos);
  CHECK(text.out.find("Every checkpoint passes") == std::string::npos);
  // "1 of 5 cases failed" must not read as the whole suite: the slow case is named as not run.
  CHECK(text.out.find("Not run yet: 1 slow case (long-sequence), the full pass") != std::string::npos);
}

}  // namespace cli_test
