// share_out (contracts/stage05_kernels.h, runner/stages/05-decoder/child/work_pool.cc): every
// task runs exactly once, whatever the thread count; the caller takes the tasks of a helper that
// does not come (the property that keeps a busy machine from stalling a decode step); a task
// that calls share_out, and two program threads calling it at once, are served on their own;
// after a thread count's first call nothing is allocated; while every thread must take its
// share (a decoder's first call), each helper runs its own run of tasks. No verdict here depends on speed: a
// pool that waited for a helper would not be slow in the stalled-helper case, it would never
// return, and meson's timeout fails the test.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "runner/harness/allocation_count.h"
#include "runner/stages/05-decoder/child/work_pool.h"
#include "stage05_kernels.h"

namespace {

// Runs share_out and returns how many times each task ran.
std::vector<int> RunCounts(int tasks, int threads) {
  std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
  share_out(tasks, threads, [&](int t) { runs[static_cast<size_t>(t)].fetch_add(1, std::memory_order_relaxed); });
  std::vector<int> counts;
  for (const auto& r : runs) counts.push_back(r.load());
  return counts;
}

}  // namespace

TEST_CASE("every task runs exactly once, for any number of tasks and threads") {
  uint64_t state = 12345;
  for (int call = 0; call < 5000; ++call) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    const int tasks = static_cast<int>((state >> 33) % 70);
    const int threads = 1 + static_cast<int>((state >> 20) % 5);
    const std::vector<int> counts = RunCounts(tasks, threads);
    int wrong = 0;
    for (int c : counts) wrong += c != 1;
    INFO("call ", call, ": ", tasks, " tasks on ", threads, " threads");
    REQUIRE(wrong == 0);
  }
}

TEST_CASE("a task's outputs are visible to the caller when share_out returns") {
  std::vector<uint64_t> out(4096);
  for (int round = 1; round <= 200; ++round) {
    share_out(64, 3, [&](int t) {
      for (int i = 0; i < 64; ++i) out[static_cast<size_t>(t * 64 + i)] = static_cast<uint64_t>(round) * 1000 + t;
    });
    int stale = 0;
    for (size_t i = 0; i < out.size(); ++i) stale += out[i] != static_cast<uint64_t>(round) * 1000 + i / 64;
    REQUIRE(stale == 0);
  }
}

TEST_CASE("the caller takes the tasks of a helper that does not come") {
  // The first task to run on a helper holds that helper until every other task has run. A pool
  // that left a helper's share to the helper (a static split), or waited for it to arrive
  // before going on, would wait for ever here; this one finishes the rest on the caller.
  for (int round = 0; round < 50; ++round) {
    const int tasks = 16;
    std::atomic<int> finished{0};
    std::atomic<bool> held{false};
    const std::thread::id caller = std::this_thread::get_id();
    share_out(tasks, 2, [&](int) {
      if (std::this_thread::get_id() != caller && !held.exchange(true)) {
        while (finished.load() < tasks - 1) std::this_thread::yield();
      }
      finished.fetch_add(1);
    });
    REQUIRE(finished.load() == tasks);
  }
}

TEST_CASE("share_out inside a task runs the inner tasks on that thread") {
  std::vector<std::atomic<int>> inner(8 * 8);
  std::atomic<int> offThread{0};
  share_out(8, 4, [&](int outer) {
    const std::thread::id self = std::this_thread::get_id();
    share_out(8, 4, [&](int t) {
      if (std::this_thread::get_id() != self) offThread.fetch_add(1);
      inner[static_cast<size_t>(outer * 8 + t)].fetch_add(1);
    });
  });
  int wrong = 0;
  for (const auto& c : inner) wrong += c.load() != 1;
  CHECK(wrong == 0);
  CHECK(offThread.load() == 0);
}

TEST_CASE("two program threads calling share_out at once are both served") {
  std::vector<int> failures(2, 0);
  auto caller = [&](int which) {
    for (int call = 0; call < 2000; ++call) {
      const std::vector<int> counts = RunCounts(1 + call % 37, 1 + call % 3);
      for (int c : counts) failures[static_cast<size_t>(which)] += c != 1;
    }
  };
  std::thread other(caller, 1);
  caller(0);
  other.join();
  CHECK(failures[0] == 0);
  CHECK(failures[1] == 0);
}

TEST_CASE("after the first call with a thread count, calls allocate nothing") {
  if (!wb::harness::AllocationsCounted()) return;  // a sanitized build counts nothing
  std::vector<int> out(1000);
  auto work = [&](int t) { out[static_cast<size_t>(t)] += t; };
  share_out(1, 6, work);  // one task: runs here, but starts the helpers 6 threads need
  const uint64_t before = wb::harness::AllocationsSoFar();
  for (int call = 0; call < 500; ++call) share_out(1 + call % 1000, 1 + call % 6, work);
  CHECK(wb::harness::AllocationsSoFar() - before == 0);
}

TEST_CASE("while every thread takes its share, each helper runs its own run of tasks") {
  // The harness turns this on for a decoder's first call, so that every helper meets every
  // product and grows its kernels' per-thread buffers there, not in a decode step. Thread i of
  // a call of 4 threads and 8 tasks owns tasks 2i and 2i + 1; none may be taken by another.
  SetEveryThreadTakesItsShare(true);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::thread::id> ranOn(8);
    share_out(8, 4, [&](int t) { ranOn[static_cast<size_t>(t)] = std::this_thread::get_id(); });
    const std::thread::id caller = std::this_thread::get_id();
    int wrong = 0;
    for (int i = 0; i < 4; ++i) {
      const std::thread::id a = ranOn[static_cast<size_t>(2 * i)], b = ranOn[static_cast<size_t>(2 * i + 1)];
      wrong += a != b || ((i == 0) != (a == caller));
    }
    for (int i = 0; i < 4; ++i) {
      for (int j = i + 1; j < 4; ++j) wrong += ranOn[static_cast<size_t>(2 * i)] == ranOn[static_cast<size_t>(2 * j)];
    }
    INFO("round ", round);
    REQUIRE(wrong == 0);
  }
  SetEveryThreadTakesItsShare(false);
}
