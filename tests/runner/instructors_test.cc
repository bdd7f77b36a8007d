// The instructor guide's commands, taken from docs/instructors.md and run as written (with
// the placeholder paths filled in), so the guide cannot drift from the tool.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace instructors_test {

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
  std::filesystem::create_directory_symlink(Source("data"), dir + "/data");
  return dir;
}

// The files of a stage's folder, copied into `into` (a submission as a student uploads it).
void CopyStage(const std::string& from, const std::string& into) {
  std::filesystem::create_directories(into);
  for (const auto& entry : std::filesystem::directory_iterator(from)) {
    std::filesystem::copy_file(entry.path(), into + "/" + entry.path().filename().string());
  }
}

// An autograder unpacked from make_autograder's zip into `base`/ag/source, graded against a
// fake checkout (the runner under test), and run on whatever `base`/ag/submission holds.
struct Autograder {
  std::string base;
  std::string checkout;
  json Grade(const std::string& environment = "") const {
    const auto ran = wbtest::RunShell(environment + " AUTOGRADER=" + Quote(base + "/ag") + " WORKBOOK=" +
                                      Quote(checkout) + " " + Quote(base + "/ag/source/run_autograder"));
    CHECK_MESSAGE(ran.status == 0, ran.err);
    const std::string text = ReadFile(base + "/ag/results/results.json");
    // Every other character escaped, so whatever the student printed is valid JSON.
    CHECK(std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
    return json::parse(text);
  }
  void Submit(const std::function<void(const std::string&)>& fill) const {
    std::filesystem::remove_all(base + "/ag/submission");
    std::filesystem::create_directories(base + "/ag/submission");
    fill(base + "/ag/submission");
  }
};

// Unpacks a zip into the current folder with each file's mode, as unzip(1) and Gradescope do
// (python3 -m zipfile drops the modes).
constexpr const char* kUnzip =
    "import os, sys, zipfile\n"
    "with zipfile.ZipFile(sys.argv[1]) as z:\n"
    "    for i in z.infolist():\n"
    "        z.extract(i)\n"
    "        os.chmod(i.filename, (i.external_attr >> 16) & 0o777)\n";

Autograder MakeAutograder(const std::string& base, const std::string& suites) {
  std::filesystem::create_directories(base + "/ag/source");
  const auto made = wbtest::RunShell("cd " + Quote(Source("")) + " && docs/gradescope/make_autograder " +
                                     Quote(base + "/autograder.zip") + " " + suites + " && cd " +
                                     Quote(base + "/ag/source") + " && python3 -c " + Quote(kUnzip) + " " +
                                     Quote(base + "/autograder.zip"));
  REQUIRE_MESSAGE(made.status == 0, made.err);
  return {base, FakeCheckout(base + "/checkout")};
}

// Points and most points per case, from the tests of a Gradescope results.json (one test a
// case, named after it, after "stage N: " in a multi-stage autograder).
std::map<std::string, std::pair<double, double>> PointsPerCase(const json& results, const std::string& prefix = "") {
  std::map<std::string, std::pair<double, double>> cases;
  for (const auto& t : results["tests"]) {
    const std::string name = t["name"].get<std::string>();
    if (name.rfind(prefix, 0) != 0) continue;
    auto& points = cases[name.substr(prefix.size())];
    points.first += t["score"].get<double>();
    points.second += t["max_score"].get<double>();
  }
  return cases;
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
  CHECK(results["tests"].size() == 5);  // one test per hidden case
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

TEST_CASE("the guide's grade command grades 5 submissions, one of which kills, one hangs and one forks") {
  const std::string guide = ReadFile(Source("docs/instructors.md"));
  const std::string base = std::filesystem::temp_directory_path() / fmt::format("wb-grade-{}", getpid());
  const std::string solution = ReadFile(Source("solutions/01-block/block.cc"));
  // The solution under another name, and a decoder_block that calls it, then does `after`.
  const auto wrapped = [&](const std::string& top, const std::string& after) {
    return top + "#define decoder_block decoder_block_solution\n" + solution + "\n#undef decoder_block\n" +
           "void decoder_block(int T, const float* w, const float* x, const float* ropeCos, const float* ropeSin, "
           "float* norm1, float* q, float* k, float* v, float* attnOut, float* residual1, float* norm2, "
           "float* ffnOut, float* output) {\n  decoder_block_solution(T, w, x, ropeCos, ropeSin, norm1, q, k, v, "
           "attnOut, residual1, norm2, ffnOut, output);\n" + after + "\n}\n";
  };
  const auto write = [&](const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  };
  write(base + "/submissions/ada/block.cc", solution);
  write(base + "/submissions/bob/stages/01-block/block.cc", ReadFile(Source("stages/01-block/block.cc")));
  // cat kills what it can reach: its runner, the runner's group, then joins it and kills that.
  write(base + "/submissions/cat/01-block/block.cc",
        wrapped("#include <csignal>\n#include <unistd.h>\n",
                "  kill(getppid(), SIGKILL);\n  kill(-getpgid(getppid()), SIGKILL);\n"
                "  setpgid(0, getpgid(getppid()));\n  kill(0, SIGKILL);"));
  write(base + "/submissions/dan/block.cc", wrapped("", "  for (volatile int spin = 0;; ) spin = spin + 1;"));
  write(base + "/submissions/eve/block.cc",
        wrapped("#include <unistd.h>\n", "  for (int i = 0; i < 4; ++i) if (fork() == 0) { setsid(); for (;;) pause(); }"));
  std::string commands = CodeBlockAfter(guide, "With one folder per student");
  ReplaceAll(commands, "/path/to/hidden/stage01.json", Source("data/stage01/hidden-example.json"));
  ReplaceAll(commands, "./workbook", Quote(wbtest::Env("WB_RUNNER")));
  // dan spins in each of the 5 cases until its limit: 2 s each instead of check's 10.
  REQUIRE(commands.find("--jobs 2") != std::string::npos);
  ReplaceAll(commands, "--jobs 2", "--jobs 2 --time-limit 2");
  const auto ran = wbtest::RunShell("cd " + Quote(base) + " && " + commands);
  CHECK_MESSAGE(ran.status == 0, ran.err);
  std::map<std::string, std::vector<std::string>> rows;
  std::istringstream csv(ReadFile(base + "/grades/gradebook.csv"));
  std::string line;
  std::getline(csv, line);
  CHECK(line.rfind("student,score,max,status,first_failure,one-token,", 0) == 0);
  while (std::getline(csv, line)) {
    std::vector<std::string> fields;
    std::istringstream split(line);
    for (std::string field; std::getline(split, field, ',');) fields.push_back(field);
    rows[fields.at(0)] = fields;
  }
  REQUIRE(rows.size() == 5);
  CHECK(rows["ada"][3] == "pass");
  CHECK(rows["ada"][1] == rows["ada"][2]);
  CHECK(rows["ada"][1] != "0");
  CHECK(rows["bob"][1] == "0");
  CHECK(rows["bob"][4] == "one-token: norm1");
  CHECK(rows["cat"][1] == "0");
  CHECK(rows["cat"][4] == "one-token: crash");
  CHECK(rows["dan"][1] == "0");
  CHECK(rows["dan"][4] == "one-token: timeout");
  CHECK(rows["eve"][3] == "pass");  // its daemons are killed after each case
  for (const char* student : {"ada", "bob", "cat", "dan", "eve"}) {
    CHECK(json::parse(ReadFile(base + "/grades/" + student + ".json"))["cases"].size() == 5);
  }
  std::filesystem::remove_all(base);
}

TEST_CASE("make_autograder builds a stage-5 autograder: the solution scores full marks, the starter 0, a planted bug loses exactly its cases") {
  if (wbtest::RunShell("git -C " + Quote(Source("")) + " rev-parse HEAD").status != 0) {
    MESSAGE("skipped: the source tree is not a git clone, which make_autograder archives");
    return;
  }
  const std::string base = std::filesystem::temp_directory_path() / fmt::format("wb-ag5-{}", getpid());
  const Autograder grader = MakeAutograder(base, "5=" + Quote(Source("data/stage05/hidden-example.json")));
  // The zip: the scripts, the plan, the suite, and the tree without its history.
  const json plan = json::parse(ReadFile(base + "/ag/source/autograder.json"));
  CHECK(plan["stages"].size() == 1);
  CHECK(plan["stages"][0]["stage"] == 5);
  CHECK(std::filesystem::exists(base + "/ag/source/hidden-05.json"));
  CHECK(std::filesystem::exists(base + "/ag/source/workbook/data/stages.json"));
  CHECK(std::filesystem::exists(base + "/ag/source/workbook/stages/05-decoder/moe.cc"));
  CHECK_FALSE(std::filesystem::exists(base + "/ag/source/workbook/.git"));
  CHECK_FALSE(std::filesystem::exists(base + "/ag/source/workbook/build"));

  // The solution's seven files, as a 05-decoder/ folder.
  grader.Submit([](const std::string& into) { CopyStage(Source("solutions/05-decoder"), into + "/05-decoder"); });
  const json full = grader.Grade();
  const auto solution = PointsPerCase(full);
  CHECK(solution.size() == json::parse(ReadFile(Source("data/stage05/hidden-example.json")))["cases"].size());
  double maxScore = 0;
  for (const auto& t : full["tests"]) maxScore += t["max_score"].get<double>();
  CHECK(maxScore > 0);
  CHECK(full["score"] == maxScore);

  // The starter, as a whole stages/ tree: 0.
  grader.Submit([](const std::string& into) { CopyStage(Source("stages/05-decoder"), into + "/stages/05-decoder"); });
  CHECK(grader.Grade()["score"] == 0.0);

  // A planted bug (q, k and v biases never added; only qwen2 has them) loses exactly the
  // qwen2 case's points, bare files this time.
  grader.Submit([](const std::string& into) {
    CopyStage(Source("solutions/05-decoder"), into);
    std::filesystem::copy_file(wbtest::Env("WB_QKV_BIAS_BUG_SOURCE"), into + "/decoder.cc",
                               std::filesystem::copy_options::overwrite_existing);
  });
  const auto planted = PointsPerCase(grader.Grade());
  REQUIRE(planted.size() == solution.size());
  for (const auto& [name, points] : planted) {
    CHECK_MESSAGE((name == "qwen2-hf-f16-2threads" ? points.first < points.second : points.first == points.second),
                  name);
  }

  // One of the seven missing: not graded, and the output names it.
  grader.Submit([](const std::string& into) {
    CopyStage(Source("solutions/05-decoder"), into + "/05-decoder");
    std::filesystem::remove(into + "/05-decoder/moe.cc");
  });
  const json partial = grader.Grade();
  CHECK(partial["score"] == 0.0);
  CHECK(partial["output"].get<std::string>().find("lacks moe.cc") != std::string::npos);
  std::filesystem::remove_all(base);
}

TEST_CASE("a stages 1-5 autograder grades each stage of one submission, with its weight") {
  if (wbtest::RunShell("git -C " + Quote(Source("")) + " rev-parse HEAD").status != 0) return;
  const std::string base = std::filesystem::temp_directory_path() / fmt::format("wb-ag15-{}", getpid());
  std::string suites;
  for (int stage = 1; stage <= 5; ++stage) {
    suites += fmt::format(" {}={}", stage, Quote(Source(fmt::format("data/stage{:02}/hidden-example.json", stage))));
  }
  const Autograder grader = MakeAutograder(base, suites + " --weight 5=2");
  // Stages 1 to 4 solved, stage 5 the starter.
  grader.Submit([](const std::string& into) {
    for (const char* dir : {"01-block", "02-kv-cache", "03-fused", "04-quant"}) {
      CopyStage(Source(std::string("solutions/") + dir), into + "/stages/" + dir);
    }
    CopyStage(Source("stages/05-decoder"), into + "/stages/05-decoder");
  });
  const json results = grader.Grade();
  double score = 0;
  for (int stage = 1; stage <= 5; ++stage) {
    const auto cases = PointsPerCase(results, fmt::format("stage {}: ", stage));
    CHECK_MESSAGE(!cases.empty(), stage);
    for (const auto& [name, points] : cases) {
      CHECK_MESSAGE((stage < 5 ? points.first == points.second : points.first == 0), stage, " ", name);
      score += points.first;
    }
  }
  CHECK(results["score"] == doctest::Approx(score));
  // Stage 5's points count twice: each case's max_score is twice the sum of its checkpoints'
  // points in a plain check of the same suite (1 point a checkpoint).
  const auto plain = wbtest::Workbook("check 5 --solutions --cases " +
                                      Quote(Source("data/stage05/hidden-example.json")) + " --format json");
  const json checked = json::parse(plain.out);
  const auto weighted = PointsPerCase(results, "stage 5: ");
  for (const auto& c : checked["cases"]) {
    double most = 0;
    for (const auto& cp : c["checkpoints"]) most += cp["max_points"].get<double>();
    REQUIRE(weighted.count(c["name"].get<std::string>()) == 1);
    CHECK(weighted.at(c["name"].get<std::string>()).second == doctest::Approx(2 * most));
  }
  std::filesystem::remove_all(base);
}

TEST_CASE("the autograder refuses links, and its results.json parses whatever bytes the student's code printed") {
  if (wbtest::RunShell("git -C " + Quote(Source("")) + " rev-parse HEAD").status != 0) return;
  const std::string base = std::filesystem::temp_directory_path() / fmt::format("wb-agh-{}", getpid());
  const Autograder grader = MakeAutograder(base, "1=" + Quote(Source("data/stage01/hidden-example.json")));
  // A symbolic link to the solution, then a hard link to a copy outside the submission.
  grader.Submit([](const std::string& into) {
    std::filesystem::create_symlink(Source("solutions/01-block/block.cc"), into + "/block.cc");
  });
  json refused = grader.Grade();
  CHECK(refused["score"] == 0.0);
  CHECK(refused["output"].get<std::string>().find("symbolic link") != std::string::npos);
  std::filesystem::copy_file(Source("solutions/01-block/block.cc"), base + "/outside.cc");
  grader.Submit([&](const std::string& into) { std::filesystem::create_hard_link(base + "/outside.cc", into + "/block.cc"); });
  refused = grader.Grade();
  CHECK(refused["score"] == 0.0);
  CHECK(refused["output"].get<std::string>().find("hard link") != std::string::npos);

  // Hostile bytes: a compile error quoting NUL, invalid UTF-8, quotes, backslashes and
  // newlines in a string; and a solution that prints them and then crashes.
  const std::string hostile = std::string("\"\\\n\x01\xff\xfe\xc3\x28", 9) + std::string(1, '\0') + "\x80 \xe2\x82";
  grader.Submit([&](const std::string& into) {
    std::ofstream(into + "/block.cc", std::ios::binary) << "const char* s = \"" << hostile << "\";\nint x = y" << hostile;
  });
  CHECK(grader.Grade()["score"] == 0.0);
  grader.Submit([&](const std::string& into) {
    std::ofstream file(into + "/block.cc", std::ios::binary);
    file << ReadFile(Source("solutions/01-block/block.cc"))
         << "\n#include <cstdio>\n#include <cstdlib>\nnamespace { struct Noise { Noise() { std::fwrite(\"";
    for (const unsigned char c : hostile) file << fmt::format("\\x{:02x}", c);
    file << "\", 1, " << hostile.size() << ", stdout); std::fwrite(\"";
    for (const unsigned char c : hostile) file << fmt::format("\\x{:02x}", c);
    file << "\", 1, " << hostile.size() << ", stderr); std::fflush(nullptr); } } noise; }\n";
  });
  const json noisy = grader.Grade();
  CHECK(noisy["tests"].size() > 0);
  std::filesystem::remove_all(base);
}

}  // namespace instructors_test
