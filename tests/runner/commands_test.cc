// The student conveniences: watch (inotify, polling, manual), hint and list.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace commands_test {

using wbtest::Quote;
using wbtest::ReadFile;
using wbtest::Source;
using wbtest::Workbook;

namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A stages/ tree holding stage 1's starter, or the solution with one text replaced.
std::string StagesTree(const std::string& name, const std::string& from, const std::string& find = "",
                       const std::string& replace = "") {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("wb-commands-{}-{}", getpid(), name);
  std::filesystem::create_directories(dir / "01-block");
  std::string text = ReadFile(Source(from));
  if (!find.empty()) {
    const size_t at = text.find(find);
    REQUIRE(at != std::string::npos);
    text.replace(at, find.size(), replace);
  }
  std::ofstream(dir / "01-block" / "block.cc") << text;
  return dir.string();
}

// Starts `workbook ARGS` with stdout to a file and stdin from `input` (if any).
pid_t Start(const std::vector<std::string>& args, const std::string& outputPath, const std::string& input = "") {
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(outputPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    if (!input.empty()) {
      int fds[2];
      if (pipe(fds) == 0) {
        if (write(fds[1], input.data(), input.size()) < 0) _exit(90);
        close(fds[1]);
        dup2(fds[0], STDIN_FILENO);
      }
    }
    std::vector<char*> argv;
    const std::string runner = wbtest::Env("WB_RUNNER");
    argv.push_back(const_cast<char*>(runner.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(runner.c_str(), argv.data());
    _exit(91);
  }
  return pid;
}

bool WaitFor(const std::function<bool()>& condition, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int Join(pid_t pid, int seconds) {
  int status = 0;
  const bool done = WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; }, seconds);
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void CheckWatchSeesASave(const std::string& mode) {
  CAPTURE(mode);
  const std::string tree = StagesTree("watch" + mode, "stages/01-block/block.cc");
  const std::string output = tree + "/watch.out";
  std::vector<std::string> args = {"watch", "1", "--stages-dir", tree, "--max-runs", "2"};
  if (mode == "poll") args.push_back("--poll");
  const pid_t pid = Start(args, output);
  REQUIRE(WaitFor([&] { return ReadFile(output).find("Watching") != std::string::npos; }, 60));
  CHECK(ReadFile(output).find(mode == "poll" ? "(polling)" : "(inotify)") != std::string::npos);
  // Save the solution over the starter, the way an editor does: a new file, then a rename.
  const std::string file = tree + "/01-block/block.cc";
  std::ofstream(file + ".tmp") << ReadFile(Source("solutions/01-block/block.cc"));
  std::filesystem::rename(file + ".tmp", file);
  CHECK(Join(pid, 60) == 0);
  const std::string text = ReadFile(output);
  CHECK(Count(text, "Stage 1: One decoder block") == 2);
  // Every case of the visible suite, the quick pass and then the full pass.
  const size_t cases = nlohmann::json::parse(ReadFile(Source("data/stage01/visible.json")))["cases"].size();
  CHECK(text.find(fmt::format("Every checkpoint passes: {} in {} cases.", 9 * cases, cases)) != std::string::npos);
  CHECK(text.find("norm1 is not implemented yet") < text.find("Every checkpoint passes"));
  std::filesystem::remove_all(tree);
}

}  // namespace

TEST_CASE("watch checks again when the file is saved (inotify)") { CheckWatchSeesASave("inotify"); }

TEST_CASE("watch checks again when the file is saved (polling fallback)") { CheckWatchSeesASave("poll"); }

TEST_CASE("watch --manual checks again on Enter and stops on q") {
  const std::string tree = StagesTree("manual", "stages/01-block/block.cc");
  const std::string output = tree + "/manual.out";
  const pid_t pid = Start({"watch", "1", "--stages-dir", tree, "--manual"}, output, "\n\nq\n");
  CHECK(Join(pid, 60) == 0);
  CHECK(Count(ReadFile(output), "Stage 1: One decoder block") == 3);
  std::filesystem::remove_all(tree);
}

TEST_CASE("hint gives one more hint per call, for the first failing checkpoint by default") {
  const std::string state = std::filesystem::temp_directory_path() / fmt::format("wb-hints-{}.json", getpid());
  const std::string env = "WORKBOOK_HINT_STATE=" + Quote(state) + " ";
  auto hint = [&](const std::string& args) { return wbtest::RunShell(env + Quote(wbtest::Env("WB_RUNNER")) + " hint " + args); };
  std::filesystem::remove(state);
  const std::string starter = StagesTree("hint-starter", "stages/01-block/block.cc");
  auto first = hint("1 --stages-dir " + Quote(starter));
  CHECK(first.status == 0);
  CHECK(first.out.find("Hints for norm1 (stage 1), 1 of 3:") != std::string::npos);
  auto q1 = hint("1 q");
  CHECK(q1.out.find("1 of 3") != std::string::npos);
  auto q2 = hint("1 q");
  CHECK(q2.out.find("2 of 3") != std::string::npos);
  CHECK(q2.out.find("1. ") != std::string::npos);
  CHECK(q2.out.find("2. ") != std::string::npos);
  CHECK(q2.out.find("3. ") == std::string::npos);
  hint("1 q");
  auto after = hint("1 q");
  CHECK(after.out.find("That is every hint for q") != std::string::npos);
  CHECK(hint("1 --reset").status == 0);
  CHECK(hint("1 q").out.find("1 of 3") != std::string::npos);
  auto unknown = hint("1 qq");
  CHECK(unknown.status == 2);
  CHECK(unknown.err.find("stage 1 has no checkpoint 'qq'") != std::string::npos);
  const std::string solved = StagesTree("hint-solved", "solutions/01-block/block.cc");
  CHECK(hint("1 --stages-dir " + Quote(solved)).out.find("no hint needed") != std::string::npos);
  std::filesystem::remove_all(starter);
  std::filesystem::remove_all(solved);
  std::filesystem::remove(state);
}

TEST_CASE("hint follows the diagnosed mistake, kept apart from the checkpoint's hints and per stage") {
  const std::string state = std::filesystem::temp_directory_path() / fmt::format("wb-mistake-hints-{}.json", getpid());
  const std::string env = "WORKBOOK_HINT_STATE=" + Quote(state) + " ";
  auto hint = [&](const std::string& args) { return wbtest::RunShell(env + Quote(wbtest::Env("WB_RUNNER")) + " hint " + args); };
  std::filesystem::remove(state);
  // RMSNorm without its epsilon: only the visible suite's tiny-inputs case shows it, and the
  // runner names it there.
  const std::string tree = StagesTree("hint-mistake", "solutions/01-block/block.cc", "sumSquares / D + RMS_EPS",
                                      "sumSquares / D");
  const auto first = hint("1 --stages-dir " + Quote(tree));
  CHECK(first.status == 0);
  CHECK(first.out.find("The first wrong buffer is norm1, and the runner recognises the mistake (missing-epsilon): "
                       "Your norm1 matches RMSNorm without RMS_EPS") != std::string::npos);
  CHECK(first.out.find("Hints for missing-epsilon (stage 1), 1 of 3:") != std::string::npos);
  CHECK(first.out.find("Hints for norm1") == std::string::npos);
  const auto second = hint("1 --stages-dir " + Quote(tree));
  CHECK(second.out.find("Hints for missing-epsilon (stage 1), 2 of 3:") != std::string::npos);
  // The checkpoint's own hints keep their own count, and so does each stage.
  CHECK(hint("1 norm1").out.find("Hints for norm1 (stage 1), 1 of 3:") != std::string::npos);
  CHECK(hint("2 missing-epsilon").out.find("Hints for missing-epsilon (stage 2), 1 of 3:") != std::string::npos);
  const auto third = hint("1 missing-epsilon");
  CHECK(third.out.find("Hints for missing-epsilon (stage 1), 3 of 3:") != std::string::npos);
  const auto after = hint("1 --stages-dir " + Quote(tree));
  CHECK(after.out.find("That is every hint for missing-epsilon. The lesson explains it step by step: "
                       "docs/stages/01-block.md#rmsnorm") != std::string::npos);
  const auto record = nlohmann::json::parse(ReadFile(state));
  CHECK(record["1"]["missing-epsilon"] == 3);
  CHECK(record["1"]["norm1"] == 1);
  CHECK(record["2"]["missing-epsilon"] == 1);
  std::filesystem::remove_all(tree);
  std::filesystem::remove(state);
}

TEST_CASE("hints explain, they never show code") {
  const auto table = nlohmann::json::parse(ReadFile(Source("data/stages.json")));
  size_t hints = 0;
  auto check = [&hints](const nlohmann::json& list) {
    CHECK(list.size() >= 2);  // graded: more than one step
    CHECK(list.size() <= 3);
    for (const auto& hint : list) {
      const std::string text = hint.get<std::string>();
      CAPTURE(text);
      ++hints;
      for (const char* code : {"{", "}", "for (", "+=", "std::", "float ", "return ", "[i]", "->"}) {
        CHECK(text.find(code) == std::string::npos);
      }
    }
  };
  for (const auto& stage : table["stages"]) {
    if (!stage.contains("hints")) continue;
    for (const auto& [checkpoint, list] : stage["hints"].items()) check(list);
  }
  CHECK(hints >= 27);  // three per stage-1 checkpoint
  REQUIRE(table.contains("misconception_hints"));
  for (const auto& [id, list] : table["misconception_hints"].items()) {
    CAPTURE(id);
    check(list);
  }
}

TEST_CASE("list shows each stage's progress on one screen") {
  const std::string starter = StagesTree("list-starter", "stages/01-block/block.cc");
  const std::string halfway = StagesTree("list-halfway", "solutions/01-block/block.cc",
                                         "MatVec(w + OFF_WK, KV, D", "MatVec(w + OFF_WQ, KV, D");
  const std::string solved = StagesTree("list-solved", "solutions/01-block/block.cc");
  auto line = [](const std::string& out) { return out.substr(out.find("  1  "), out.find('\n', out.find("  1  ")) - out.find("  1  ")); };
  const auto a = Workbook("list --stages-dir " + Quote(starter));
  CHECK(a.status == 0);
  CHECK(line(a.out).find("0 / 9") != std::string::npos);
  CHECK(line(a.out).find("not started") != std::string::npos);
  const auto b = Workbook("list --stages-dir " + Quote(halfway));
  CHECK(line(b.out).find("8 / 9") == std::string::npos);
  CHECK(line(b.out).find("3 / 9") != std::string::npos);  // norm1, q and v
  CHECK(line(b.out).find("next: k") != std::string::npos);
  const auto c = Workbook("list --stages-dir " + Quote(solved));
  CHECK(line(c.out).find("9 / 9") != std::string::npos);
  CHECK(line(c.out).find("done") != std::string::npos);
  CHECK(std::count(c.out.begin(), c.out.end(), '\n') < 24);  // one screen
  for (const auto& dir : {starter, halfway, solved}) std::filesystem::remove_all(dir);
}

}  // namespace commands_test
