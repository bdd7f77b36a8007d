// Stage 3's commands end to end: `bench 3` (every figure the lesson promises, OpenBLAS at its
// best, the SVG written whole), its usage errors, and the Gradescope leaderboard of `check 3`.
// Nothing here is timed: the figures are checked for being there and consistent, not fast.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_test_support.h"
#include "run_command.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace fused_cli_test {

using nlohmann::json;
using wbtest::Parse;
using wbtest::Positive;
using wbtest::Quote;
using wbtest::ReadFile;
using wbtest::Workbook;

namespace {

std::filesystem::path Scratch(const std::string& name) { return wbtest::Scratch("fused", name); }

}  // namespace

TEST_CASE("bench 3 --solutions prints every figure, against OpenBLAS at its best, and draws them") {
  const auto dir = Scratch("bench");
  const std::string svg = (dir / "roofline.svg").string();
  const auto ran = Workbook("bench 3 --solutions --tokens 1,16 --budget 0.01 --format json --plot " + Quote(svg));
  REQUIRE(ran.status == 0);
  const json report = Parse(ran.out);  // stdout is the JSON alone
  for (int t = 0; t < 2; ++t) {
    CHECK(Positive(report["probe"]["fma_peak_gflops"][t]));
    CHECK(Positive(report["probe"]["read_bandwidth_gbs"][t]));
  }
  // The bandwidth is read over twice the last-level cache, here the size the test sets
  // (WB_BENCH_LLC_BYTES, tests/runner/meson.build), and the report says where it came from.
  const uint64_t cache = std::stoull(wbtest::Env("WB_BENCH_LLC_BYTES"));
  CHECK(report["cache"]["bytes"] == cache);
  CHECK(report["cache"]["source"].get<std::string>().find("WB_BENCH_LLC_BYTES") != std::string::npos);
  // Where and when it ran, for a table's caption: the CPU, the compiler, a UTC minute.
  CHECK(!report["machine"]["cpu"].get<std::string>().empty());
  CHECK(report["machine"]["online_cpus"].get<int>() >= 1);
  CHECK(report["machine"]["compiler"].get<std::string>().find(' ') != std::string::npos);
  CHECK(report["machine"]["utc"].get<std::string>().size() == std::string("2026-12-06T03:12Z").size());
  CHECK(report["probe"]["read_bytes"] == 2 * cache);
  // The core type used is the fastest of those tried, and named as OpenBLAS names it.
  const auto& blas = report["openblas"];
  REQUIRE(!blas["candidates"].empty());
  double best = 0;
  std::string bestType;
  for (const auto& c : blas["candidates"]) {
    if (c["sgemm_gflops"].get<double>() > best) {
      best = c["sgemm_gflops"].get<double>();
      bestType = c["coretype"].get<std::string>();
    }
  }
  CHECK(blas["coretype"] == bestType);
  CHECK(!blas["corename"].get<std::string>().empty());
  // Every T x threads x kernel, each with its time, rate and both ratios.
  std::set<std::string> seen;
  for (const auto& row : report["rows"]) {
    CAPTURE(row.dump());
    seen.insert(fmt::format("{} {} {}", row["T"].get<int>(), row["threads"].get<int>(), row["kernel"].get<std::string>()));
    CHECK(Positive(row["gflops"]));
    CHECK(Positive(row["percent_of_peak"]));
    CHECK(Positive(row["ratio_to_openblas"]));
    CHECK(Positive(row["ratio_to_stage1"]));
    // At least 3 calls (three batches), or one call that outlasted the tiny budget, timed once.
    if (row["time"]["runs"].get<int>() == 1) {
      CHECK(row["time"]["fastest_seconds"].get<double>() == row["time"]["slowest_seconds"].get<double>());
    } else {
      CHECK(row["time"]["runs"].get<int>() >= 3);
    }
    CHECK(row["time"]["fastest_seconds"].get<double>() <= row["time"]["median_seconds"].get<double>());
    CHECK(row["time"]["median_seconds"].get<double>() <= row["time"]["slowest_seconds"].get<double>());
  }
  for (int T : {1, 16}) {
    for (int threads : {1, 2}) {
      for (const char* kernel : {"matmul qkv", "matmul wo", "matmul gate/up", "matmul down", "fused_block"}) {
        CHECK(seen.count(fmt::format("{} {} {}", T, threads, kernel)) == 1);
      }
    }
  }
  CHECK(seen.size() == 20);
  // The solution's five matmul versions, each validated, then timed at every T.
  REQUIRE(report["versions"].size() == 5);
  for (const auto& v : report["versions"]) {
    CAPTURE(v.dump());
    CHECK(v["valid"] == true);
    CHECK(v["qkv"].size() == 2);
  }
  // The speed goals are stated at T = 512 alone, which this run does not time: none is judged.
  REQUIRE(report["goals"].is_array());
  CHECK(report["goals"].empty());
  // The figure: written whole, one point per row, nothing left beside it.
  const std::string drawn = ReadFile(svg);
  CHECK(drawn.rfind("<svg", 0) == 0);
  CHECK(drawn.find("</svg>") != std::string::npos);
  size_t points = 0;
  for (size_t at = drawn.find("<circle cx"); at != std::string::npos; at = drawn.find("<circle cx", at + 1)) ++points;
  CHECK(points >= 20);
  CHECK(!std::filesystem::exists(svg + ".partial"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("bench refuses another stage's options, naming them") {
  const auto contexts = Workbook("bench 3 --solutions --contexts 512");
  CHECK(contexts.status == 2);
  CHECK(contexts.err.find("--contexts is stage 2's; stage 3 takes --tokens") != std::string::npos);
  // Refused before the validation's check runs, not after it.
  CHECK(contexts.out.find("passes stage 3's visible cases") == std::string::npos);
  const auto tooLong = Workbook("bench 3 --solutions --tokens 600");
  CHECK(tooLong.status == 2);
  CHECK(tooLong.err.find("--tokens: 600 is not a T from 1 to 512") != std::string::npos);
  const auto plot = Workbook("bench 2 --solutions --plot /tmp/x.svg");
  CHECK(plot.status == 2);
  CHECK(plot.err.find("--tokens, --plot and --format are stage 3's") != std::string::npos);
  CHECK(plot.out.find("passes stage 2's visible cases") == std::string::npos);
  const auto nowhere = Workbook("bench 3 --solutions --plot /nonexistent/folder/x.svg");
  CHECK(nowhere.status == 2);
  CHECK(nowhere.err.find("--plot /nonexistent/folder/x.svg: cannot write there") != std::string::npos);
}

TEST_CASE("bench 3 does not time a file that fails the check") {
  const auto ran = Workbook("bench 3");  // the starter
  CHECK(ran.status == 1);
  CHECK(ran.out.find("bench: not timed.") != std::string::npos);
}

TEST_CASE("check 3 --leaderboard ranks a passing block by its speed, a failing one at 0") {
  const auto dir = Scratch("leaderboard");
  const std::string cases = (dir / "one.json").string();
  std::ofstream(cases) << R"({"stage": 3, "cases": [{"name": "one", "kernel": "matmul", "T": 3, "out": 7, "in": 5, "seed": 1}]})";
  const auto solved = Workbook("check 3 --solutions --format gradescope --leaderboard --cases " + Quote(cases));
  REQUIRE(solved.status == 0);
  const json board = Parse(solved.out)["leaderboard"];
  REQUIRE(board.size() == 1);
  CHECK(board[0]["name"] == "fused_block GFLOP/s (T=512, 1 thread)");
  CHECK(Positive(board[0]["value"]));
  CHECK(!board[0].contains("order"));  // larger is better, Gradescope's default
  const auto starter = Workbook("check 3 --format gradescope --leaderboard --cases " + Quote(cases));
  CHECK(starter.status == 1);
  CHECK(Parse(starter.out)["leaderboard"][0]["value"] == 0.0);
  const auto none = Workbook("check 1 --solutions --leaderboard");
  CHECK(none.status == 2);
  CHECK(none.err.find("--leaderboard: stage 1 ranks nothing") != std::string::npos);
  // Without the flag, no leaderboard and no time spent on one.
  CHECK(!Parse(Workbook("check 3 --solutions --format gradescope --cases " + Quote(cases)).out).contains("leaderboard"));
  std::filesystem::remove_all(dir);
}

}  // namespace fused_cli_test
