// The instructor guide's commands, taken from docs/instructors.md and run as written (with
// the placeholder paths filled in), so the guide cannot drift from the tool.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

using nlohmann::json;
using wbtest::Quote;
using wbtest::ReadFile;
using wbtest::Source;

namespace {

// The first fenced code block after the line that contains `marker`.
std::string CodeBlockAfter(const std::string& markdown, const std::string& marker) {
  const size_t at = markdown.find(marker);
  REQUIRE(at != std::string::npos);
  const size_t open = markdown.find("```\n", at);
  REQUIRE(open != std::string::npos);
  const size_t close = markdown.find("```\n", open + 4);
  return markdown.substr(open + 4, close - open - 4);
}

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// A folder standing in for a workbook checkout whose `workbook` is the runner under test.
std::string FakeCheckout(const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink(wbtest::Env("WB_RUNNER"), dir + "/workbook");
  std::filesystem::create_directory_symlink(Source("stages"), dir + "/stages");
  return dir;
}

}  // namespace

TEST_CASE("the guide's Gradescope trial run grades a solution to full marks and a starter to zero") {
  const std::string guide = ReadFile(Source("docs/instructors.md"));
  const std::string base = std::filesystem::temp_directory_path() / fmt::format("wb-guide-{}", getpid());
  const std::string checkout = FakeCheckout(base + "/checkout");
  std::string commands = CodeBlockAfter(guide, "You can try it without Gradescope");
  ReplaceAll(commands, "/tmp/ag", base + "/ag");
  ReplaceAll(commands, "WORKBOOK=$PWD", "WORKBOOK=" + Quote(checkout));
  const auto ran = wbtest::RunShell("cd " + Quote(Source("")) + " && " + commands);
  CHECK(ran.status == 0);
  const json results = json::parse(ran.out);
  double maxScore = 0;
  for (const auto& t : results["tests"]) maxScore += t["max_score"].get<double>();
  CHECK(results["tests"].size() == 45);  // 5 hidden cases x 9 checkpoints
  CHECK(results["score"] == maxScore);

  // The starter, submitted as a whole stages/ tree, scores nothing.
  std::filesystem::remove_all(base + "/ag/submission");
  std::filesystem::create_directories(base + "/ag/submission/stages/01-block");
  std::filesystem::copy_file(Source("stages/01-block/block.cc"), base + "/ag/submission/stages/01-block/block.cc");
  const auto starter = wbtest::RunShell("AUTOGRADER=" + Quote(base + "/ag") + " WORKBOOK=" + Quote(checkout) + " " +
                                        Quote(Source("docs/gradescope/run_autograder")));
  CHECK(starter.status == 0);
  CHECK(json::parse(ReadFile(base + "/ag/results/results.json"))["score"] == 0.0);

  // No stage file at all: a results.json that says what to upload.
  std::filesystem::remove_all(base + "/ag/submission");
  std::filesystem::create_directories(base + "/ag/submission");
  wbtest::RunShell("AUTOGRADER=" + Quote(base + "/ag") + " WORKBOOK=" + Quote(checkout) + " " +
                   Quote(Source("docs/gradescope/run_autograder")));
  const json empty = json::parse(ReadFile(base + "/ag/results/results.json"));
  CHECK(empty["score"] == 0);
  CHECK(empty["output"].get<std::string>().find("upload block.cc") != std::string::npos);

  // A runner the watchdog has to end (here after 0.05 s): score 0 and a message, never a
  // results.json of anyone else's making.
  std::filesystem::create_directories(base + "/ag/submission");
  std::filesystem::copy_file(Source("solutions/01-block/block.cc"), base + "/ag/submission/block.cc");
  const auto stopped = wbtest::RunShell("GRADE_SECONDS=0.05 AUTOGRADER=" + Quote(base + "/ag") +
                                        " WORKBOOK=" + Quote(checkout) + " " +
                                        Quote(Source("docs/gradescope/run_autograder")));
  CHECK(stopped.status == 0);
  const json killed = json::parse(ReadFile(base + "/ag/results/results.json"));
  CHECK(killed["score"] == 0);
  CHECK(killed["output"].get<std::string>().find("stopped before it finished") != std::string::npos);
  std::filesystem::remove_all(base);
}

TEST_CASE("the guide's grading loop writes one report per submission and a summary") {
  const std::string guide = ReadFile(Source("docs/instructors.md"));
  const std::string base = std::filesystem::temp_directory_path() / fmt::format("wb-loop-{}", getpid());
  for (const char* student : {"ada", "bob"}) {
    std::filesystem::create_directories(fmt::format("{}/submissions/{}/stages/01-block", base, student));
  }
  std::filesystem::copy_file(Source("solutions/01-block/block.cc"), base + "/submissions/ada/stages/01-block/block.cc");
  std::filesystem::copy_file(Source("stages/01-block/block.cc"), base + "/submissions/bob/stages/01-block/block.cc");
  std::string commands = CodeBlockAfter(guide, "With one folder per student");
  ReplaceAll(commands, "/path/to/hidden/stage01.json", Source("data/stage01/hidden-example.json"));
  ReplaceAll(commands, "./workbook", Quote(wbtest::Env("WB_RUNNER")));
  const auto ran = wbtest::RunShell("cd " + Quote(base) + " && " + commands);
  CHECK(ran.status == 0);
  CHECK(ReadFile(base + "/reports/summary.csv") == "ada,0\nbob,1\n");
  CHECK(json::parse(ReadFile(base + "/reports/ada.json"))["status"] == "pass");
  CHECK(json::parse(ReadFile(base + "/reports/bob.json"))["cases"][0]["first_failure"] == "norm1");
  std::filesystem::remove_all(base);
}
