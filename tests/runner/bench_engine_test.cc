// The bench engine's outside timing (runner/stages/bench_engine.h), on simulated children: each
// child's time is a start-up plus its calls, as a real one's is, and the engine must take the
// start-up off, size the batch to the budget, and stop at the first child whose figures cannot
// be used. That real children are timed this way is the bench tests' (fused_cli_test,
// quant_bench_test, bench_cheats_test).
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "runner/isolation/shared_layout.h"
#include "runner/stages/bench_engine.h"
#include "runner/stages/bench_support.h"
#include "runner/stages/timed_inputs.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace bench_engine_test {

namespace {

struct Child {
  int calls;
  bool skipped;
};

// A simulated child: `startup` seconds, plus `perCall` a call unless the calls are skipped;
// every child it was asked for is kept, in order.
struct Simulation {
  double startup = 0.010;
  double perCall = 0.001;
  std::vector<Child> asked;
  int failOnChild = -1;  // this child (0-based) reports a failure
  wb::RunBatch Runner() {
    return [this](int calls, bool skipped) -> wb::Expected<wb::BatchRun> {
      const int index = static_cast<int>(asked.size());
      asked.push_back({calls, skipped});
      wb::BatchRun run{.seconds = startup + (skipped ? 0.0 : calls * perCall), .failure = ""};
      if (index == failOnChild) run.failure = "planted: this child's output is wrong";
      return run;
    };
  }
};

}  // namespace

TEST_CASE("a call's time is the batch's less the start-up, over its calls") {
  Simulation sim;
  auto timed = wb::TimeCallsFromOutside(sim.Runner(), 0.2);
  REQUIRE(timed.ok());
  REQUIRE(timed->failure.empty());
  CHECK(timed->timing.median == doctest::Approx(0.001).epsilon(1e-9));
  CHECK(timed->timing.fastest == doctest::Approx(0.001).epsilon(1e-9));
  CHECK(timed->timing.slowest == doctest::Approx(0.001).epsilon(1e-9));
  // The last children: kBatchesTimed batches of the final size, then as many skipped.
  const int calls = sim.asked.back().calls;
  CHECK(timed->timing.runs == calls * wb::kBatchesTimed);
  // The batch was grown until it fills at least half its share of the budget.
  CHECK(sim.startup + calls * sim.perCall >= 0.2 / wb::kBatchesTimed / 2);
  int skipped = 0;
  for (const Child& c : sim.asked) skipped += c.skipped ? 1 : 0;
  CHECK(skipped == wb::kBatchesTimed + 1);  // the first child, then one beside each batch
  REQUIRE(sim.asked.size() >= 2);
  CHECK(sim.asked[0].calls == 1);
  CHECK(sim.asked[0].skipped);
  CHECK(sim.asked[1].calls == 1);
  CHECK_FALSE(sim.asked[1].skipped);
}

TEST_CASE("growth is at most a hundredfold a round, and stops at the most calls a batch") {
  Simulation sim;
  sim.perCall = 1e-9;  // a call far below the start-up's noise
  sim.startup = 0;
  auto timed = wb::TimeCallsFromOutside(sim.Runner(), 0.5);
  REQUIRE(timed.ok());
  REQUIRE(timed->failure.empty());
  for (size_t i = 1; i < sim.asked.size(); ++i) {
    if (!sim.asked[i].skipped && !sim.asked[i - 1].skipped) CHECK(sim.asked[i].calls <= 100 * sim.asked[i - 1].calls);
  }
  CHECK(sim.asked.back().calls <= wb::kMostCallsInBatch);
}

TEST_CASE("a child whose figures cannot be used ends the measurement, with its words and no figure") {
  for (int failing : {0, 1, 4}) {
    CAPTURE(failing);
    Simulation sim;
    sim.failOnChild = failing;
    auto timed = wb::TimeCallsFromOutside(sim.Runner(), 0.05);
    REQUIRE(timed.ok());
    CHECK(timed->failure == "planted: this child's output is wrong");
    CHECK(timed->timing.runs == 0);
    CHECK(static_cast<int>(sim.asked.size()) == failing + 1);
  }
}

TEST_CASE("one call longer than the whole budget is timed once, beside one start-up") {
  Simulation sim;
  sim.perCall = 2.0;
  auto timed = wb::TimeCallsFromOutside(sim.Runner(), 1.0);
  REQUIRE(timed.ok());
  REQUIRE(timed->failure.empty());
  REQUIRE(sim.asked.size() == 2);  // the first child, calls skipped, is the start-up beside it
  CHECK(sim.asked[0].skipped);
  CHECK(sim.asked[1].calls == 1);
  CHECK_FALSE(sim.asked[1].skipped);
  CHECK(timed->timing.runs == 1);
  CHECK(timed->timing.median == doctest::Approx(2.0));
}

TEST_CASE("a batch has at least two calls unless one outlasts the budget") {
  Simulation sim;
  sim.startup = 0.001;
  sim.perCall = 0.3;  // half a batch's share of 1.2 s in one call, but less than the budget
  auto timed = wb::TimeCallsFromOutside(sim.Runner(), 1.2);
  REQUIRE(timed.ok());
  REQUIRE(timed->failure.empty());
  CHECK(sim.asked.back().calls == wb::kLeastCallsInBatch);
  CHECK(timed->timing.runs == wb::kLeastCallsInBatch * wb::kBatchesTimed);
}

TEST_CASE("a batch no longer than the fastest start-up counts a nanosecond a call, never less") {
  Simulation sim;
  sim.perCall = 0;
  auto timed = wb::TimeCallsFromOutside(sim.Runner(), 0.001);
  REQUIRE(timed.ok());
  REQUIRE(timed->failure.empty());
  CHECK(timed->timing.median == doctest::Approx(1e-9));
  CHECK(timed->timing.fastest > 0);
}

TEST_CASE("output slots: as many as the slots' bytes hold, never fewer than a batch's least calls") {
  CHECK(wb::OutputSlots(wb::kOutputSlotBytes / 100) == 100);
  CHECK(wb::OutputSlots(wb::kOutputSlotBytes) == wb::kLeastCallsInBatch);
  CHECK(wb::OutputSlots(10 * wb::kOutputSlotBytes) == wb::kLeastCallsInBatch);
  CHECK(wb::OutputSlots(1) == wb::kMostCallsInBatch);
}

TEST_CASE("the output slots keep the last calls, and a kept slot still holding the poison names its call") {
  const float poison = std::bit_cast<float>(wb::shm::kPoisonWord);
  std::vector<float> floats(3 * 4, 1.0f);
  // Seven calls in three slots: calls 4, 5 and 6 are kept, in slots 1, 2 and 0.
  wb::OutputSlotRing ring{.floats = floats, .count = 3, .perCall = 4, .calls = 7};
  CHECK(ring.Kept() == 3);
  CHECK(ring.FirstKept() == 4);
  CHECK(ring.Of(6).data() == floats.data());
  CHECK(ring.Of(4).data() == floats.data() + 4);
  for (int i = 0; i < 200; ++i) {
    const int drawn = ring.DrawKept();
    CHECK((drawn >= 4 && drawn <= 6));
  }
  CHECK_FALSE(wb::FindUnwritten(ring).has_value());
  floats[2 * 4 + 3] = poison;  // slot 2: call 5
  floats[0 * 4 + 2] = poison;  // slot 0: call 6
  auto found = wb::FindUnwritten(ring);
  REQUIRE(found.has_value());
  CHECK(found->call == 5);
  CHECK(found->element == 3);
  CHECK(wb::UnwrittenOutputText(ring, 2).starts_with("timed call 6 of 7: its output at row 1, column 1 was never "
                                                    "written"));
  // Fewer calls than slots: only those calls' slots are read (a batch of one call is not
  // blamed for slot 2).
  wb::OutputSlotRing one{.floats = floats, .count = 3, .perCall = 4, .calls = 1};
  floats[0 * 4 + 2] = 1.0f;
  CHECK(one.Kept() == 1);
  CHECK_FALSE(wb::FindUnwritten(one).has_value());
  // A NaN computed from an unwritten element is written (the check against the reference says
  // what is wrong with it), as is any other NaN.
  std::vector<float> quiet(4, std::bit_cast<float>(wb::shm::kPoisonQuietedWord));
  CHECK_FALSE(wb::FindUnwritten({.floats = quiet, .count = 1, .perCall = 4, .calls = 1}).has_value());
}

TEST_CASE("a kept call is one of the batch's kept calls, with what it wrote, and the one checked is one of those") {
  std::vector<float> floats = {0, 1, 2, 3, 4, 5};  // three slots of two floats
  wb::KeptCalls kept;
  CHECK(kept.empty());
  kept.KeepDrawn({.floats = floats, .count = 3, .perCall = 2, .calls = 5}, 7);  // calls 2, 3, 4 kept
  kept.KeepDrawn({.floats = floats, .count = 3, .perCall = 2, .calls = 1}, 9);  // call 0 alone
  REQUIRE_FALSE(kept.empty());
  for (int i = 0; i < 100; ++i) {
    const wb::KeptCall& one = kept.DrawOne();
    REQUIRE(one.output.size() == 2);
    // What it wrote is its own slot's: slot c % 3 holds 2 * (c % 3) and 2 * (c % 3) + 1.
    CHECK(one.output[0] == float(2 * (one.call % 3)));
    if (one.seed == 7) {
      CHECK((one.call >= 2 && one.call <= 4));
      CHECK(one.calls == 5);
    } else {
      CHECK(one.seed == 9);
      CHECK(one.call == 0);
      CHECK(one.calls == 1);
    }
  }
}

TEST_CASE("a call's timed inputs depend on its seed, stream and call, and on nothing else") {
  const wb::TimedInputs a(42, 1, 0), same(42, 1, 0), otherCall(42, 1, 1), otherSeed(43, 1, 0), otherStream(42, 2, 0);
  std::vector<float> first(1000), again(1000), tail(10);
  a.Fill(first.data(), first.size());
  same.Fill(again.data(), again.size());
  CHECK(first == again);
  // Any stretch can be made alone: elements 500 .. 509 are those of the whole.
  a.Fill(tail.data(), tail.size(), 500);
  CHECK(std::equal(tail.begin(), tail.end(), first.begin() + 500));
  int differing[3] = {0, 0, 0};
  float least = 1, most = -1;
  for (size_t i = 0; i < first.size(); ++i) {
    differing[0] += otherCall.Value(i) != first[i];
    differing[1] += otherSeed.Value(i) != first[i];
    differing[2] += otherStream.Value(i) != first[i];
    least = std::min(least, first[i]);
    most = std::max(most, first[i]);
  }
  for (int d : differing) CHECK(d > 990);
  CHECK(least >= -1.0f);
  CHECK(most < 1.0f);
  CHECK(least < -0.9f);  // spread over the whole range, not bunched
  CHECK(most > 0.9f);
}

}  // namespace bench_engine_test

// A goal's table never shows a figure that reads as the other side of the goal.
TEST_CASE("a figure beside its goal reads on the side of the goal it is on") {
  CHECK(wb::FigureBesideGoal({"ratio", 1.6997, 1.7, "x"}) == "1.6997x");
  CHECK(wb::FigureBesideGoal({"ratio", 1.698, 1.7, "x"}) == "1.698x");
  CHECK(wb::FigureBesideGoal({"ratio", 1.75, 1.7, "x"}) == "1.75x");
  CHECK(wb::FigureBesideGoal({"ratio", 1.7, 1.7, "x"}) == "1.70x");
  CHECK(wb::FigureBesideGoal({"share", 79.6, 80, "%"}) == "79.6 %");
  CHECK(wb::FigureBesideGoal({"share", 80.4, 80, "%"}) == "80 %");
}

// Every bench refuses a figure beyond ten times its machine's roof, saying what and why, and
// prints any figure below that (a busy machine's probe can read low).
TEST_CASE("a figure ten times beyond the roof is refused, in words; one below it is printed") {
  CHECK(wb::BeyondRoofText("matmul qkv", 2499, "GFLOP/s", 250, "the peak").empty());
  CHECK(wb::BeyondRoofText("matmul qkv", 300, "GFLOP/s", 250, "the peak").empty());
  const std::string refused = wb::BeyondRoofText("matmul qkv, T = 512, 1 thread", 433893, "GFLOP/s", 250,
                                                 "this machine's FMA peak of 250.0 GFLOP/s");
  CHECK(refused == "matmul qkv, T = 512, 1 thread: 433893.0 GFLOP/s would be 1736 times this machine's FMA peak of "
                   "250.0 GFLOP/s, which no code reaches: the timing is not to be trusted, and no figure is printed.");
  // A figure that is not a number (a zero time) is no figure either.
  CHECK(!wb::BeyondRoofText("decode", INFINITY, "GB/s", 10, "the probe").empty());
}
