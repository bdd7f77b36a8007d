// share_out (contracts/stage05_kernels.h): the workbook's own pool of helper threads, built
// for a machine that other programs keep busy.
//
// An OpenMP parallel region ends at a barrier: the calling thread goes on only when every
// thread of the team has arrived, so one helper the system has not scheduled holds up the whole
// step for as long as it waits for a core (milliseconds, on a machine with more runnable threads
// than cores; a decode step of a small model takes a fraction of one). Here the calling thread
// waits only for the work: the tasks of a call are claimed one at a time, by the caller and by
// whichever helpers are running, and the caller returns once every task claimed has finished.
// A helper that has not been given a core claims nothing and is not waited for; the worst a
// busy machine can do is a helper descheduled in the middle of one task, and once the caller
// has seen that happen it runs the calls that follow alone for a while (NoteWait).
//
// Each thread owns a contiguous range of the tasks and claims from its front, so on a quiet
// machine every thread streams through one region of the weights, as a static split would; a
// thread whose range is used up claims from the others' (so the caller takes the tasks of a
// helper that has not arrived). A range is one 64-bit word, so that a task and the call it belongs to are
// claimed in one atomic step: bits 0-27 the next task, bits 28-55 the end of the range, bits
// 56-63 how many threads the call may use. A call stores its description, then the ranges
// (release), then bumps a call counter; any claim below a range's end (an acquire
// read-modify-write of that word) therefore reads the description of the call it claimed from,
// and that description cannot change until the task is done, because the caller waits for it.
// A helper behind by any number of calls does no harm: a claim at or past the end claims nothing.
//
// Idle helpers spin on the call counter (with the CPU's pause hint) for a bounded time, then
// sleep on it (std::atomic::wait, a futex); a call wakes sleepers only when there are any, so a
// decode step on a quiet machine pays no system call, and a waiting helper on a busy one does
// not keep a core.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <sched.h>

#include "stage05_kernels.h"
#include "work_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxThreads = 255;                   // fits a range word's 8 bits
constexpr uint64_t kMaxCallTasks = (1u << 26) - 1;  // leaves room above it for late claims
constexpr int kEndShift = 28;
constexpr int kThreadsShift = 56;
constexpr uint64_t kFieldMask = (uint64_t{1} << kEndShift) - 1;

// How long an idle helper spins before it sleeps, and the caller before it yields its core
// while a helper finishes a task. Long enough to cover the gap between two calls of a decode
// step (a norm, a rope); short against a scheduler's time slice (milliseconds).
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(100);
constexpr auto kSpinBeforeYield = std::chrono::microseconds(50);

// A wait for a helper's last task this much longer than twice the caller's own share of the
// call means the helper lost its core (NoteWait); the calls that follow then run on the caller
// alone for kAloneFirst, doubling while the machine stays busy, up to kAloneLongest.
constexpr auto kStalled = std::chrono::microseconds(200);
constexpr Clock::duration kAloneFirst = std::chrono::milliseconds(20);
constexpr Clock::duration kAloneLongest = std::chrono::seconds(1);

uint64_t NextOf(uint64_t word) { return word & kFieldMask; }
uint64_t EndOf(uint64_t word) { return (word >> kEndShift) & kFieldMask; }
int ThreadsOf(uint64_t word) { return static_cast<int>(word >> kThreadsShift); }

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class WorkPool {
 public:
  WorkPool() { helpers_.reserve(kMaxThreads); }

  // Runs one call; false if the pool is already running one (a task that calls share_out, or
  // a second thread of the program), which the caller then runs on its own. The helpers a
  // thread count needs are started even for a call of one task, so that a program's first call
  // with that count starts them (starting a thread allocates), not a later one whose work has
  // grown past one task: a decode step must not allocate.
  bool Run(int tasks, int threads, void (*task)(void*, int), void* context) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    Grow(threads - 1);
    const Clock::time_point start = Clock::now();
    const bool ownShares = ownShares_.load(std::memory_order_relaxed);
    if (tasks == 1 || (start < aloneUntil_ && !ownShares)) {
      for (int t = 0; t < tasks; ++t) task(context, t);
      busy_.store(false, std::memory_order_release);
      return true;
    }
    threads = std::min(threads, tasks);  // no more threads than tasks are woken
    task_ = task;
    context_ = context;
    callOwnShares_.store(ownShares, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    // Thread i's range: tasks [i * tasks / threads, (i + 1) * tasks / threads).
    for (int i = 0; i < threads; ++i) {
      const uint64_t begin = static_cast<uint64_t>(i) * tasks / threads;
      const uint64_t end = static_cast<uint64_t>(i + 1) * tasks / threads;
      ranges_[i].word.store(static_cast<uint64_t>(threads) << kThreadsShift | end << kEndShift | begin,
                            std::memory_order_release);
    }
    // Then the call counter and the wake-up: see Sleep for why these are sequentially consistent.
    posted_.fetch_add(1);
    if (sleepers_.load() > 0) posted_.notify_all();
    ClaimAndRun(kCaller, threads);
    const Clock::time_point ownDone = Clock::now();
    WaitForDone(static_cast<uint64_t>(tasks));
    if (!ownShares) NoteWait(ownDone - start, Clock::now() - ownDone, ownDone);
    busy_.store(false, std::memory_order_release);
    return true;
  }

 private:
  static constexpr int kCaller = 0;

  // Helpers 1 .. wanted exist afterwards.
  void Grow(int wanted) {
    while (static_cast<int>(helpers_.size()) < wanted) {
      const int index = static_cast<int>(helpers_.size()) + 1;
      helpers_.emplace_back([this, index] { HelperLoop(index); });
      helpers_.back().detach();
    }
  }

  // Runs tasks of range `owner` while any is left; false if none was.
  bool ClaimFrom(int owner, int index) {
    std::atomic<uint64_t>& word = ranges_[owner].word;
    bool ran = false;
    for (;;) {
      const uint64_t seen = word.load(std::memory_order_relaxed);
      if (NextOf(seen) >= EndOf(seen) || index >= ThreadsOf(seen)) return ran;
      const uint64_t claimed = word.fetch_add(1, std::memory_order_acq_rel);
      if (NextOf(claimed) >= EndOf(claimed)) return ran;
      task_(context_, static_cast<int>(NextOf(claimed)));
      done_.fetch_add(1, std::memory_order_release);
      ran = true;
    }
  }

  // Thread `index`'s own range, then the others' in turn, until no task is left to claim.
  // `threads` is the call's thread count as this thread read it; a late helper may read a newer
  // call's, and then claims from that call's ranges, which is as good.
  void ClaimAndRun(int index, int threads) {
    ClaimFrom(index, index);
    if (callOwnShares_.load(std::memory_order_relaxed)) return;  // SetEveryThreadTakesItsShare
    for (int i = 1; i < threads; ++i) ClaimFrom((index + i) % threads, index);
  }

  // After a call: how long the caller ran tasks, and then waited for a helper's last task. A
  // helper still on its task long after the caller ran out of tasks has lost its core: the
  // machine has more threads that want to run than CPUs. Until that passes, every call is run
  // on the calling thread alone (a helper that loses its core in the middle of a task costs
  // the caller a scheduler's time slice, milliseconds, which a small model's step is a fraction
  // of); the pool tries its helpers again after kAloneFirst, and after twice as long each time
  // it finds the machine still busy, up to kAloneLongest.
  void NoteWait(Clock::duration own, Clock::duration waited, Clock::time_point now) {
    if (waited > kStalled + 2 * own) {
      aloneUntil_ = now + alone_;
      alone_ = std::min<Clock::duration>(2 * alone_, kAloneLongest);
    } else {
      alone_ = kAloneFirst;
    }
  }

  void WaitForDone(uint64_t tasks) {
    const Clock::time_point start = Clock::now();
    for (int spins = 0; done_.load(std::memory_order_acquire) < tasks; ++spins) {
      Pause();
      // A helper still on a task has been descheduled, most likely: give the core away.
      if (spins % 64 == 63 && Clock::now() - start > kSpinBeforeYield) sched_yield();
    }
  }

  void HelperLoop(int index) {
    uint32_t handled = 0;  // the last call this helper looked at
    for (;;) {
      uint32_t posted = posted_.load();
      if (posted == handled) posted = SpinForCall(handled);
      if (posted == handled) posted = Sleep(handled);
      handled = posted;
      // The call's thread count is in every range word it stored; a helper it does not ask for
      // finds its own range (and every other) closed to it.
      const int threads = ThreadsOf(ranges_[0].word.load(std::memory_order_acquire));
      if (index < threads) ClaimAndRun(index, threads);
    }
  }

  // Spins until a call after `handled` is posted or the time is up; returns the call counter.
  uint32_t SpinForCall(uint32_t handled) {
    const Clock::time_point start = Clock::now();
    for (int spins = 1;; ++spins) {
      const uint32_t posted = posted_.load(std::memory_order_acquire);
      if (posted != handled) return posted;
      Pause();
      if (spins % 64 == 0 && Clock::now() - start > kSpinBeforeSleep) return posted;
    }
  }

  // Sleeps until a call after `handled` is posted. The helper counts itself a sleeper before it
  // reads the call counter a last time, and the caller bumps the counter before it reads the
  // count of sleepers (all sequentially consistent): either the caller sees the sleeper and
  // wakes it, or the helper sees the call and does not sleep.
  uint32_t Sleep(uint32_t handled) {
    sleepers_.fetch_add(1);
    posted_.wait(handled);
    sleepers_.fetch_sub(1);
    return posted_.load();
  }

  struct alignas(64) Range {
    std::atomic<uint64_t> word{0};
  };

  std::atomic<bool> busy_{false};
 public:
  std::atomic<bool> ownShares_{false};  // SetEveryThreadTakesItsShare
 private:
  std::atomic<bool> callOwnShares_{false};  // the current call's, published with its ranges
  // While the machine looks busy (NoteWait): calls before aloneUntil_ run on the caller alone.
  Clock::time_point aloneUntil_{};
  Clock::duration alone_ = kAloneFirst;
  void (*task_)(void*, int) = nullptr;
  void* context_ = nullptr;
  Range ranges_[kMaxThreads];
  alignas(64) std::atomic<uint64_t> done_{0};
  alignas(64) std::atomic<uint32_t> posted_{0};
  std::atomic<int> sleepers_{0};
  std::vector<std::thread> helpers_;
};

// The process's pool, never destroyed: its helpers sleep or spin until the process ends, and a
// pool destroyed at exit would have to stop threads that may be in the middle of a task.
WorkPool& Pool() {
  static WorkPool* pool = new WorkPool;
  return *pool;
}

}  // namespace

void SetEveryThreadTakesItsShare(bool on) { Pool().ownShares_.store(on, std::memory_order_relaxed); }

void share_out(int tasks, int threads, void (*task)(void* context, int t), void* context) {
  if (tasks <= 0) return;
  threads = std::clamp(threads, 1, kMaxThreads);
  for (int first = 0; first < tasks; first += static_cast<int>(kMaxCallTasks)) {
    const int count = static_cast<int>(std::min<uint64_t>(kMaxCallTasks, static_cast<uint64_t>(tasks - first)));
    struct Slice {
      void (*task)(void*, int);
      void* context;
      int first;
    } slice{task, context, first};
    auto runSlice = [](void* s, int t) {
      const Slice& part = *static_cast<const Slice*>(s);
      part.task(part.context, part.first + t);
    };
    if (threads == 1 || !Pool().Run(count, threads, runSlice, &slice)) {
      for (int t = 0; t < count; ++t) runSlice(&slice, t);
    }
  }
}
