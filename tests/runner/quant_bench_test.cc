// Stage 4's bench end to end: `bench 4 --solutions` prints every figure the issue asks for (the
// probe, matmul_q at T = 1 against the probe and against stage 3's float matmul, at T = 128 in
// GOP/s, quant_block on each weight set), draws them whole, and refuses an unwritable --plot
// and another stage's options before measuring anything. Nothing here is timed: the figures are
// checked for being there, finite, positive and consistent, not fast. The suite sets
// WB_BENCH_LLC_BYTES (tests/runner/meson.build) to shrink every buffer the cache's size decides.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_test_support.h"
#include "run_command.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace quant_bench_test {

using nlohmann::json;
using wbtest::Env;
using wbtest::Parse;
using wbtest::Positive;
using wbtest::Quote;
using wbtest::ReadFile;
using wbtest::Workbook;

namespace {

std::filesystem::path Scratch(const std::string& name) { return wbtest::Scratch("quant-bench", name); }

// A timing as the bench reports it: a median between its fastest and its slowest, of at least 3
// runs (the yardstick's Measure; the bench engine's batches, runner/stages/bench_engine.h), or
// of one call that outlasted the whole budget (this test's budget is tiny), timed once.
void CheckTiming(const json& time) {
  CAPTURE(time.dump());
  if (time["runs"].get<int>() == 1) {
    CHECK(time["fastest_seconds"].get<double>() == time["slowest_seconds"].get<double>());
  } else {
    CHECK(time["runs"].get<int>() >= 3);
  }
  CHECK(Positive(time["fastest_seconds"]));
  CHECK(time["fastest_seconds"].get<double>() <= time["median_seconds"].get<double>());
  CHECK(time["median_seconds"].get<double>() <= time["slowest_seconds"].get<double>());
}

}  // namespace

// The yardstick's probe reads a buffer in the memory it is asked for: shared (stage 4's bench)
// or private with huge pages asked for (stage 5's, as the model's weights), says which and how
// much of it is on huge pages, and refuses any other kind before measuring.
TEST_CASE("the probe says where its buffer lives, and refuses an unknown kind of memory") {
  const std::string yardstick = Quote(Env("WB_STAGE04_YARDSTICK"));
  for (const std::string memory : {"shared", "huge"}) {
    CAPTURE(memory);
    const auto ran = wbtest::RunShell(yardstick + " probe 4194304 0.01 " + memory);
    REQUIRE(ran.status == 0);
    const json printed = Parse(ran.out);
    CHECK(printed["memory"] == memory);
    CHECK(printed["bytes"].get<uint64_t>() >= 4194304);
    CHECK(printed["huge_page_bytes"].get<uint64_t>() <= printed["bytes"].get<uint64_t>());
    CHECK(printed["huge_page_bytes"].get<uint64_t>() % 4096 == 0);
    REQUIRE(printed["seconds"].size() == 2);
  }
  const auto refused = wbtest::RunShell(yardstick + " probe 4194304 0.01 gigantic");
  CHECK(refused.status == 2);
  CHECK(refused.out.empty());
  CHECK(refused.err.find("shared|huge") != std::string::npos);
}

TEST_CASE("bench 4 --solutions prints every figure from one run, and draws them") {
  const uint64_t cache = std::stoull(Env("WB_BENCH_LLC_BYTES"));
  const auto dir = Scratch("bench");
  const std::string svg = (dir / "decode.svg").string();
  const auto ran = Workbook("bench 4 --solutions --budget 0.01 --format json --plot " + Quote(svg));
  REQUIRE_MESSAGE(ran.status == 0, ran.err);
  const json report = Parse(ran.out);  // stdout is the JSON alone
  CHECK(report["stage"] == 4);
  // The cache's size, and where it came from: here the test's override.
  CHECK(report["cache"]["bytes"].get<uint64_t>() == cache);
  CHECK(report["cache"]["source"].get<std::string>().find("WB_BENCH_LLC_BYTES") != std::string::npos);
  // Where and when it ran, for a table's caption: the CPU, the compiler, a UTC minute.
  CHECK(!report["machine"]["cpu"].get<std::string>().empty());
  CHECK(report["machine"]["online_cpus"].get<int>() >= 1);
  CHECK(report["machine"]["compiler"].get<std::string>().find(' ') != std::string::npos);
  CHECK(report["machine"]["utc"].get<std::string>().size() == std::string("2026-12-06T03:12Z").size());
  // --solutions: each of the solution's kernel versions (data/stages.json's kernel_versions)
  // checked and timed at T = 1 on both thread counts, or said to be beyond this CPU.
  const std::vector<std::string> versions = {"portable", "avx2", "avx512vnni"};
  REQUIRE(report["versions"].size() == versions.size());
  for (size_t i = 0; i < versions.size(); ++i) {
    const json& v = report["versions"][i];
    CHECK(v["name"] == versions[i]);
    if (v["ran"].get<bool>()) {
      CHECK(v["decode"].size() == 4);
      for (const json& d : v["decode"]) CHECK(d["gbs"].get<double>() > 0);
    } else {
      CHECK(v["note"].get<std::string>().find("this CPU lacks") != std::string::npos);
    }
  }
  CHECK(report["versions"][0]["ran"] == true);  // portable runs anywhere

  // The probe, on 1 and 2 threads, over at least twice the cache.
  REQUIRE(report["probe"].size() == 2);
  for (int t = 0; t < 2; ++t) {
    const json& probe = report["probe"][t];
    CAPTURE(probe.dump());
    CHECK(probe["threads"] == t + 1);
    CHECK(probe["buffer_bytes"].get<uint64_t>() >= 2 * cache);
    // In shared memory, as the bench region holding the kernels' weights is.
    CHECK(probe["memory"] == "shared");
    CHECK(probe["huge_page_bytes"].get<uint64_t>() <= probe["buffer_bytes"].get<uint64_t>());
    CHECK(Positive(probe["read_bandwidth_gbs"]));
    CheckTiming(probe["time"]);
    // Measured again after the kernels: the share is of the mean of the two.
    CheckTiming(probe["time_after"]);
    const double before = probe["read_bandwidth_gbs_before"].get<double>();
    const double after = probe["read_bandwidth_gbs_after"].get<double>();
    CHECK(before == doctest::Approx(static_cast<double>(probe["buffer_bytes"].get<uint64_t>()) /
                                    probe["time"]["median_seconds"].get<double>() / 1e9));
    CHECK(after == doctest::Approx(static_cast<double>(probe["buffer_bytes"].get<uint64_t>()) /
                                   probe["time_after"]["median_seconds"].get<double>() / 1e9));
    CHECK(probe["read_bandwidth_gbs"].get<double>() == doctest::Approx((before + after) / 2));
  }

  // Decode: Q8_0, Q4_0 and stage 3's f32 on 1 and 2 threads, each over at least twice the cache.
  const json& decode = report["decode"];
  CHECK(decode["T"] == 1);
  CHECK(decode["rows"] == 14336);
  CHECK(decode["cols"] == 4096);
  std::set<std::string> seen;
  for (const json& k : decode["kernels"]) {
    CAPTURE(k.dump());
    seen.insert(fmt::format("{} {}", k["type"].get<std::string>(), k["threads"].get<int>()));
    CHECK(k["copies"].get<uint64_t>() * k["matrix_bytes"].get<uint64_t>() >= 2 * cache);
    CHECK(Positive(k["gbs"]));
    CHECK(Positive(k["percent_of_probe"]));
    const int t = k["threads"].get<int>() - 1;
    REQUIRE((t == 0 || t == 1));
    CHECK(k["percent_of_probe"].get<double>() ==
          doctest::Approx(100 * k["gbs"].get<double>() / report["probe"][t]["read_bandwidth_gbs"].get<double>()));
    CHECK(Positive(k["speed_over_f32"]));
    CheckTiming(k["time"]);
    if (k["type"] == "f32") CHECK(k["speed_over_f32"].get<double>() == 1.0);
  }
  CHECK(seen == std::set<std::string>{"q8_0 1", "q8_0 2", "q4_0 1", "q4_0 2", "f32 1", "f32 2"});
  REQUIRE(decode["q4_0_speed_over_q8_0"].size() == 2);
  for (const json& ratio : decode["q4_0_speed_over_q8_0"]) CHECK(Positive(ratio));

  // Prefill: both types, both thread counts, in GOP/s.
  const json& prefill = report["prefill"];
  CHECK(prefill["T"] == 128);
  seen.clear();
  for (const json& k : prefill["kernels"]) {
    CAPTURE(k.dump());
    seen.insert(fmt::format("{} {}", k["type"].get<std::string>(), k["threads"].get<int>()));
    CHECK(Positive(k["gops"]));
    CheckTiming(k["time"]);
  }
  CHECK(seen == std::set<std::string>{"q8_0 1", "q8_0 2", "q4_0 1", "q4_0 2"});

  // quant_block: each weight set at T = 1 and 128, on 1 and 2 threads, in ms and tokens/s.
  seen.clear();
  for (const json& b : report["block"]) {
    CAPTURE(b.dump());
    seen.insert(fmt::format("{} {} {}", b["set"].get<std::string>(), b["T"].get<int>(), b["threads"].get<int>()));
    CHECK(Positive(b["ms"]));
    CHECK(Positive(b["tokens_per_second"]));
    CheckTiming(b["time"]);
  }
  CHECK(seen.size() == 12);
  for (const char* set : {"q8_0", "q4_0", "mixed"}) {
    for (int T : {1, 128}) {
      for (int threads : {1, 2}) CHECK(seen.count(fmt::format("{} {} {}", set, T, threads)) == 1);
    }
  }

  // The figure: written whole, one bar per decode kernel and thread count, nothing beside it.
  const std::string drawn = ReadFile(svg);
  CHECK(drawn.rfind("<svg", 0) == 0);
  CHECK(drawn.find("</svg>") != std::string::npos);
  size_t bars = 0;
  for (size_t at = drawn.find("<rect x="); at != std::string::npos; at = drawn.find("<rect x=", at + 1)) ++bars;
  CHECK(bars == 6);
  CHECK(!std::filesystem::exists(svg + ".partial"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("bench 4 refuses an unwritable --plot and stage 3's --tokens before measuring") {
  const auto nowhere = Workbook("bench 4 --solutions --plot /nonexistent/folder/x.svg");
  CHECK(nowhere.status == 2);
  CHECK(nowhere.err.find("--plot /nonexistent/folder/x.svg: cannot write there") != std::string::npos);
  CHECK(nowhere.out.find("probing") == std::string::npos);  // no measurement began
  const auto tokens = Workbook("bench 4 --solutions --tokens 16");
  CHECK(tokens.status == 2);
  CHECK(tokens.err.find("stage 4 measures T = 1 and T = 128") != std::string::npos);
  CHECK(tokens.out.find("probing") == std::string::npos);
}

TEST_CASE("check 4 --solutions runs the visible suite through every kernel version this CPU has") {
  const auto ran = Workbook("check 4 --solutions --format json");
  REQUIRE(ran.status == 0);
  const json report = Parse(ran.out);
  REQUIRE(report["kernel_versions"].size() == 3);
  for (const json& v : report["kernel_versions"]) {
    if (v["ran"].get<bool>()) {
      CHECK(v["passed"] == v["cases"]);
      CHECK(v["cases"].get<int>() == static_cast<int>(report["cases"].size()));
    } else {
      CHECK(v["note"].get<std::string>().find("this CPU lacks") != std::string::npos);
    }
  }
  // A version nobody knows is refused before anything runs.
  const auto unknown = Workbook("check 4 --solutions --kernel-version nonesuch");
  CHECK(unknown.status == 2);
  CHECK(unknown.err.find("kernel version 'nonesuch'") != std::string::npos);
}

}  // namespace quant_bench_test
