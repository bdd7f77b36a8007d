// The stage table's parser: how a row names its checkpoints, and the exact message of each
// refusal. That the workbook's own table agrees with the tree is the course self-check's
// (tests/course/course_check.cc).
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "runner/stages/stage_table.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace stage_table_test {

namespace {

std::string Refusal(const std::string& stages) {
  auto parsed = wb::ParseStageTable(R"({"version": 1, "stages": [)" + stages + "]}", "t.json");
  REQUIRE(!parsed.ok());
  CHECK(parsed.error().kind == wb::ErrorKind::kBadData);
  return parsed.error().message;
}

const char* kRow = R"({"number": 2, "dir": "02-x", "title": "X", "lesson": "x.md", "available": true,
    "file": "x.cc", "function": "x", "visible": "v.json", "hidden_example": "h.json", "planted": "p",
    "case_length": "steps", "reported_as": "step{call}.{checkpoint}", "checkpoints": ["norm1", "attnOut"],
    "case_checkpoints": ["sameAsPrefill"], "hints": {"attnOut": ["look at the cache"]}})";

}  // namespace

TEST_CASE("a row names its checkpoints as reported, and maps a reported name back") {
  auto table = wb::ParseStageTable(std::string(R"({"version": 1, "stages": [)") + kRow + "]}", "t.json");
  REQUIRE(table.ok());
  const wb::StageInfo& stage = table->stages.at(0);
  CHECK(stage.caseLength == wb::CaseLength::kSteps);
  CHECK(stage.Reported("attnOut", 3) == "step3.attnOut");
  CHECK(stage.BaseName("step3.attnOut") == "attnOut");
  CHECK(stage.BaseName("step12.norm1") == "norm1");
  CHECK(stage.BaseName("sameAsPrefill") == "sameAsPrefill");
  CHECK(!stage.BaseName("attnOut").has_value());       // a per-call checkpoint is always numbered
  CHECK(!stage.BaseName("step0.attnOut").has_value());  // calls count from 1
  CHECK(!stage.BaseName("stepx.attnOut").has_value());
  CHECK(!stage.BaseName("step1.k").has_value());
  CHECK(stage.AllCheckpoints() == std::vector<std::string>{"norm1", "attnOut", "sameAsPrefill"});
  CHECK(table->Numbers() == "2 to 2");
}

TEST_CASE("the table's own refusals") {
  CHECK(wb::ParseStageTable(R"({"version": 2, "stages": []})", "t.json").error().message ==
        "t.json: field 'version' must be 1");
  CHECK(Refusal(R"({"number": 1, "dir": "x", "title": "y", "lesson": "l.md", "available": true})") ==
        "t.json: stages[0] is available but lacks 'file', 'function', 'visible', 'hidden_example', 'checkpoints' "
        "or 'planted'");
  CHECK(Refusal(R"({"number": 1, "dir": "x", "title": "y", "lesson": "l.md", "colour": "red"})") ==
        "t.json: stages[0]: unknown field 'colour'");
  CHECK(Refusal(R"({"number": 2, "dir": "x", "title": "y", "lesson": "l.md"},
                   {"number": 1, "dir": "x", "title": "y", "lesson": "l.md"})") ==
        "t.json: stages[1].number is 1: stages are listed in increasing order");
  CHECK(Refusal(R"({"number": 1, "dir": "x", "title": "y", "lesson": "l.md", "case_length": "tokens"})") ==
        "t.json: stages[0].case_length is 'tokens'; it must be \"T\" or \"steps\"");
  CHECK(Refusal(R"({"number": 1, "dir": "x", "title": "y", "lesson": "l.md", "reported_as": "step{call}"})") ==
        "t.json: stages[0].reported_as must contain {checkpoint}");
  CHECK(Refusal(R"({"number": 1, "dir": "x", "title": "y", "lesson": "l.md", "checkpoints": ["q"],
                    "hints": {"k": ["a hint"]}})") ==
        "t.json: stages[0].hints names 'k', which is not one of its checkpoints");
}

TEST_CASE("a row's guards name per-call checkpoints, never themselves") {
  const std::string row = R"({"number": 2, "dir": "02-x", "title": "X", "lesson": "x.md", "available": true,
      "file": "x.cc", "function": "x", "visible": "v.json", "hidden_example": "h.json", "planted": "p",
      "checkpoints": ["k", "otherRows", "kCache"], "case_checkpoints": ["same"], )";
  auto table = wb::ParseStageTable(R"({"version": 1, "stages": [)" + row + R"("guards": {"otherRows": ["kCache"]}}]})",
                                   "t.json");
  REQUIRE(table.ok());
  CHECK(table->stages.at(0).guards == std::map<std::string, std::vector<std::string>>{{"otherRows", {"kCache"}}});
  CHECK(Refusal(row + R"("guards": ["otherRows"]})") ==
        "t.json: stages[0].guards must map a checkpoint to the checkpoints whose writes it guards");
  CHECK(Refusal(row + R"("guards": {"same": ["kCache"]}})") ==
        "t.json: stages[0].guards names 'same', which is not one of its per-call checkpoints");
  CHECK(Refusal(row + R"("guards": {"otherRows": []}})") ==
        "t.json: stages[0].guards.otherRows must be a non-empty list of checkpoints");
  CHECK(Refusal(row + R"("guards": {"otherRows": ["vCache"]}})") ==
        "t.json: stages[0].guards.otherRows lists \"vCache\", which is not one of its per-call checkpoints");
  CHECK(Refusal(row + R"("guards": {"otherRows": ["otherRows"]}})") ==
        "t.json: stages[0].guards.otherRows lists itself: a checkpoint cannot count by its own writes");
}

TEST_CASE("misconception hints are keyed by ids that no checkpoint shares") {
  const std::string stages = R"({"version": 1, "stages": [{"number": 1, "dir": "01-x", "title": "X",
      "lesson": "x.md", "checkpoints": ["norm1", "q"]}], "misconception_hints": )";
  auto table = wb::ParseStageTable(stages + R"({"missing-epsilon": ["one", "two"]}})", "t.json");
  REQUIRE(table.ok());
  CHECK(table->misconceptionHints.at("missing-epsilon") == std::vector<std::string>{"one", "two"});
  auto refusal = [&](const std::string& hints) {
    auto parsed = wb::ParseStageTable(stages + hints + "}", "t.json");
    REQUIRE(!parsed.ok());
    CHECK(parsed.error().kind == wb::ErrorKind::kBadData);
    return parsed.error().message;
  };
  CHECK(refusal(R"(["missing-epsilon"])") ==
        "t.json: field 'misconception_hints' must map misconception ids to lists of hints");
  CHECK(refusal(R"({"Missing_Epsilon": ["a"]})") ==
        "t.json: misconception_hints: 'Missing_Epsilon' is not a misconception id (lowercase words joined by '-')");
  CHECK(refusal(R"({"missing--epsilon": ["a"]})") ==
        "t.json: misconception_hints: 'missing--epsilon' is not a misconception id (lowercase words joined by '-')");
  CHECK(refusal(R"({"q": ["a"]})") ==
        "t.json: misconception_hints: 'q' is also a checkpoint of stage 1; a misconception id must differ from every "
        "checkpoint name");
  CHECK(refusal(R"({"missing-epsilon": []})") ==
        "t.json: misconception_hints.missing-epsilon must be a non-empty list of hints");
  CHECK(refusal(R"({"missing-epsilon": [3]})") == "t.json: misconception_hints.missing-epsilon must hold text");
}

TEST_CASE("a row's kernels are checkpoints of their own, before the calls'") {
  auto table = wb::ParseStageTable(R"({"version": 1, "stages": [{"number": 3, "dir": "03-x", "title": "X",
      "lesson": "x.md", "available": true, "file": "x.cc", "function": "x", "visible": "v.json",
      "hidden_example": "h.json", "planted": "p", "checkpoints": ["norm1", "output"],
      "kernels": [{"name": "matmul", "fields": ["out", "in", "accumulate"]}, {"name": "attend", "fields": []}]}]})",
                                   "t.json");
  REQUIRE(table.ok());
  const wb::StageInfo& stage = table->stages.at(0);
  CHECK(stage.AllCheckpoints() == std::vector<std::string>{"matmul", "attend", "norm1", "output"});
  CHECK(stage.BaseName("matmul") == "matmul");
  // A kernel's run on weights the file packed (stage 4's pack_q) is the kernel's checkpoint.
  CHECK(stage.BaseName("matmul, packed weights") == "matmul");
  CHECK(!stage.BaseName("norm1, packed weights").has_value());
  CHECK(!stage.BaseName(", packed weights").has_value());
  REQUIRE(stage.FindKernel("matmul") != nullptr);
  CHECK(stage.FindKernel("matmul")->Takes("accumulate"));
  CHECK(!stage.FindKernel("attend")->Takes("out"));
  CHECK(stage.FindKernel("norm1") == nullptr);
  const std::string shape = "t.json: stages[0].kernels must be a list of {\"name\": ..., \"fields\": [...]}: each "
                            "kernel and the case fields its cases give (out, in, accumulate, weights)";
  CHECK(Refusal(R"({"number": 1, "dir": "x", "title": "y", "lesson": "l.md", "kernels": {"matmul": []}})") == shape);
  CHECK(Refusal(R"({"number": 1, "dir": "x", "title": "y", "lesson": "l.md",
                   "kernels": [{"name": "m", "fields": ["rows"]}]})") == shape);
  CHECK(Refusal(R"({"number": 1, "dir": "x", "title": "y", "lesson": "l.md",
                   "kernels": [{"name": "m", "fields": []}, {"name": "m", "fields": []}]})") ==
        "t.json: stages[0].kernels: 'm' is empty or listed twice");
  CHECK(Refusal(R"({"number": 1, "dir": "x", "title": "y", "lesson": "l.md", "case_length": "steps",
                   "kernels": [{"name": "m", "fields": []}]})") ==
        "t.json: stages[0]: a stage with kernels has case_length \"T\"");
}

}  // namespace stage_table_test
