// The case-file parser: what it accepts, and the exact message for each thing it refuses.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "runner/cases/case_file.h"
#include "test_stage_table.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace case_file_test {

namespace {


std::string Refusal(const std::string& text) {
  auto parsed = wb::ParseCaseFile(text, "suite.json", wbtest::Stages());
  REQUIRE(!parsed.ok());
  CHECK(parsed.error().kind == wb::ErrorKind::kBadData);
  return parsed.error().message;
}

}  // namespace

TEST_CASE("a stage-1 case file with defaults") {
  auto parsed = wb::ParseCaseFile(R"({"stage": 1, "cases": [{"name": "a", "T": 4, "seed": 1},
      {"name": "b", "T": 1, "seed": 2, "x_scale": 0.5, "w_scale": 8, "hidden": true, "points": 2}]})",
                                  "suite.json", wbtest::Stages());
  REQUIRE(parsed.ok());
  CHECK(parsed->stage == 1);
  REQUIRE(parsed->cases.size() == 2);
  CHECK(parsed->cases[0].xScale == 1.0);
  CHECK(parsed->cases[0].wScale == 1.0);
  CHECK(!parsed->cases[0].hidden);
  CHECK(parsed->cases[0].points == 1.0);
  CHECK(parsed->cases[1].xScale == 0.5);
  CHECK(parsed->cases[1].wScale == 8.0);
  CHECK(parsed->cases[1].hidden);
  CHECK(parsed->cases[1].points == 2.0);
}

TEST_CASE("a stage-2 case gives steps") {
  auto parsed = wb::ParseCaseFile(R"({"stage": 2, "cases": [{"name": "p", "steps": [5, 1, 1], "seed": 3}]})", "s.json", wbtest::Stages());
  REQUIRE(parsed.ok());
  CHECK(parsed->cases[0].steps == std::vector<int>{5, 1, 1});
  CHECK(parsed->cases[0].Tokens() == 7);
}

TEST_CASE("refusals name the file and the field") {
  CHECK(Refusal("{\"stage\": 1, ") .rfind("suite.json: not valid JSON", 0) == 0);
  CHECK(Refusal("[]") == "suite.json: the top level must be an object {\"stage\": N, \"cases\": [...]}");
  CHECK(Refusal(R"({"stage": 1})") == "suite.json: field 'cases' is missing or not an array");
  CHECK(Refusal(R"({"stage": 9, "cases": []})") == "suite.json: field 'stage' is 9; stages are 1 to 5");
  CHECK(Refusal(R"({"stage": 1, "cases": []})") == "suite.json: field 'cases' is empty: a case file needs at least one case");
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "T": 4, "seed": 1, "x_sclae": 2}]})") ==
        "suite.json: cases[0]: unknown field 'x_sclae' (expected name, T or steps, seed, x_scale, w_scale, hidden, "
        "slow, points, description)");
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "T": 0, "seed": 1}]})") ==
        "suite.json: cases[0] ('a').T is 0; it must be 1 to 4096");
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "T": 4}]})") ==
        "suite.json: cases[0] ('a').seed is missing or not a non-negative integer");
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "T": 4, "seed": 1, "w_scale": -1}]})") ==
        "suite.json: cases[0] ('a').w_scale is -1; it must be a finite positive number");
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "T": 4, "seed": 1}, {"name": "a", "T": 4, "seed": 2}]})") ==
        "suite.json: cases[1].name 'a' is used twice");
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "steps": [1], "seed": 1}]})") ==
        "suite.json: cases[0] ('a'): stage 1 cases give 'T', not 'steps'");
  CHECK(Refusal(R"({"stage": 2, "cases": [{"name": "a", "steps": [4, 0], "seed": 1}]})") ==
        "suite.json: cases[0] ('a').steps[1] must be a positive integer");
  CHECK(Refusal(R"({"stage": 2, "cases": [{"name": "a", "steps": [4000, 100], "seed": 1}]})") ==
        "suite.json: cases[0] ('a'): 4100 tokens in all; at most 4096");
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "T": 4, "seed": 1, "hidden": "yes"}]})") ==
        "suite.json: cases[0] ('a').hidden must be true or false");
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "T": 4, "seed": 1, "slow": 1}]})") ==
        "suite.json: cases[0] ('a').slow must be true or false");
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "T": 4, "seed": 1, "description": 7}]})") ==
        "suite.json: cases[0] ('a').description must be text");
}

TEST_CASE("a slow case belongs to the full pass; cases are quick unless they say so") {
  auto parsed = wb::ParseCaseFile(R"({"stage": 2, "cases": [{"name": "q", "steps": [5, 1], "seed": 1},
      {"name": "s", "steps": [512, 1], "seed": 2, "slow": true, "description": "a long prefill"},
      {"name": "t", "steps": [3], "seed": 3, "slow": false}]})", "s.json", wbtest::Stages());
  REQUIRE(parsed.ok());
  REQUIRE(parsed->cases.size() == 3);
  CHECK(!parsed->cases[0].slow);
  CHECK(parsed->cases[1].slow);
  CHECK(!parsed->cases[2].slow);
}

TEST_CASE("a missing case file is a usage error naming it") {
  auto loaded = wb::LoadCaseFile("/nonexistent/suite.json", wbtest::Stages());
  REQUIRE(!loaded.ok());
  CHECK(loaded.error().kind == wb::ErrorKind::kBadUsage);
  CHECK(loaded.error().message == "/nonexistent/suite.json: cannot open the case file");
}

TEST_CASE("a folder given as the case file is a usage error that says so") {
  const std::string folder = std::filesystem::temp_directory_path().string();
  auto loaded = wb::LoadCaseFile(folder, wbtest::Stages());
  REQUIRE(!loaded.ok());
  CHECK(loaded.error().kind == wb::ErrorKind::kBadUsage);
  CHECK(loaded.error().message.rfind(folder + ": is a folder; --cases takes one case file, such as ", 0) == 0);
}

TEST_CASE("points are bounded") {
  auto parse = [](const std::string& points) {
    return wb::ParseCaseFile(R"({"stage": 1, "cases": [{"name": "a", "T": 2, "seed": 1, "points": )" + points + "}]}",
                             "s.json", wbtest::Stages());
  };
  CHECK(parse("1000").ok());
  auto tooMany = parse("1e9");
  REQUIRE(!tooMany.ok());
  CHECK(tooMany.error().message.find("s.json: cases[0] ('a').points is 1000000000; at most 1000 points a case") != std::string::npos);
}

TEST_CASE("a stage with kernels takes kernel cases and threads") {
  auto parsed = wb::ParseCaseFile(R"({"stage": 3, "cases": [
      {"name": "m", "kernel": "matmul", "T": 17, "out": 77, "in": 515, "accumulate": true, "threads": 3, "seed": 1},
      {"name": "a", "kernel": "causal_attention", "T": 33, "seed": 2},
      {"name": "b", "T": 4, "threads": 2, "seed": 3}]})", "s.json", wbtest::Stages());
  REQUIRE(parsed.ok());
  const auto& c = parsed->cases;
  CHECK(c[0].kernel == "matmul");
  CHECK(c[0].out == 77);
  CHECK(c[0].in == 515);
  CHECK(c[0].accumulate);
  CHECK(c[0].threads == 3);
  CHECK(c[1].kernel == "causal_attention");
  CHECK(c[1].threads == 1);
  CHECK(!c[1].accumulate);
  CHECK(c[2].kernel.empty());
  CHECK(c[2].threads == 2);
}

TEST_CASE("kernel fields are refused where the stage or the kernel takes none") {
  auto refusal3 = [](const std::string& c) { return Refusal(R"({"stage": 3, "cases": [)" + c + "]}"); };
  CHECK(Refusal(R"({"stage": 1, "cases": [{"name": "a", "T": 4, "seed": 1, "threads": 2}]})") ==
        "suite.json: cases[0]: unknown field 'threads' (expected name, T or steps, seed, x_scale, w_scale, hidden, "
        "slow, points, description)");
  CHECK(refusal3(R"({"name": "a", "kernel": "gemm", "T": 4, "seed": 1})") ==
        "suite.json: cases[0] ('a').kernel must be one of matmul, matmul_swiglu, causal_attention");
  CHECK(refusal3(R"({"name": "a", "kernel": "matmul", "T": 4, "in": 5, "seed": 1})") ==
        "suite.json: cases[0] ('a'): a matmul case needs 'out'");
  CHECK(refusal3(R"({"name": "a", "kernel": "causal_attention", "T": 4, "out": 5, "seed": 1})") ==
        "suite.json: cases[0] ('a'): a causal_attention case takes no 'out'");
  CHECK(refusal3(R"({"name": "a", "kernel": "matmul_swiglu", "T": 4, "out": 5, "in": 5, "accumulate": true,
                    "seed": 1})") == "suite.json: cases[0] ('a'): a matmul_swiglu case takes no 'accumulate'");
  CHECK(refusal3(R"({"name": "a", "T": 4, "out": 5, "seed": 1})") ==
        "suite.json: cases[0] ('a'): 'out' belongs to a kernel case, and this case names no 'kernel'");
  CHECK(refusal3(R"({"name": "a", "T": 4, "threads": 0, "seed": 1})") ==
        "suite.json: cases[0] ('a').threads must be an integer from 1 to 64");
  CHECK(refusal3(R"({"name": "a", "kernel": "matmul", "T": 4, "out": 8193, "in": 5, "seed": 1})") ==
        "suite.json: cases[0] ('a').out must be an integer from 1 to 8192");
  CHECK(refusal3(R"({"name": "a", "kernel": "matmul", "T": 4096, "out": 8192, "in": 8, "seed": 1})") ==
        "suite.json: cases[0] ('a'): T=4096, out=8192, in=8 makes a matrix of more than 16777216 floats");
  CHECK(refusal3(R"({"name": "a", "kernel": "matmul", "T": 4, "out": 5, "in": 5, "accumulate": 1, "seed": 1})") ==
        "suite.json: cases[0] ('a').accumulate must be true or false");
}

}  // namespace case_file_test
