// The child side of the runner: a thin main() that maps the shared region, protects it,
// watches for crashes, and calls the stage function through CallStage.
//
// Contract: the child is linked from the student's stage file, this harness and one
// stage's CallStage, nothing else (no reference, no solutions, no case definitions).
// CallStage binds the region to its stage's call layout (call_layout.h), which checks that
// the runner laid it out the same way, takes its buffers by enumerator, and brackets each
// call of the stage function with BeginCall/EndCall, so the runner knows which call was
// running when something went wrong. A region that does not match is a harness failure:
// the child stops before any student code runs and the runner reports a workbook bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../isolation/call_layout.h"

namespace wb::harness {

// Stops the child as a harness failure (phase kHarnessFailed, exit kHarnessFailedExit).
[[noreturn]] void Fail(const char* what);
// Stops the child for a rule the student's file broke outside the stage function (stage 4's
// optional pack_q step): an abort whose note, which must begin "your file", the runner shows
// as the case's failure.
[[noreturn]] void FailYourFile(const char* what);

class Region {
 public:
  Region(shm::Header* header, unsigned char* base) : header_(header), base_(base) {}

  // The region as layout L: fails the harness unless the runner laid it out as L.
  template <CallLayout L>
  void Bind() {
    if (header_->layoutId != L::kId || header_->bufferCount != L::kBufferCount) {
      Fail("the runner laid out the region for another call layout: rebuild the workbook");
    }
  }
  // Whether the runner laid the region out as L: for a stage whose cases use several layouts
  // (stage 3's kernel cases and block cases), which one this call is.
  template <CallLayout L>
  bool Holds() const {
    return header_->layoutId == L::kId && header_->bufferCount == L::kBufferCount;
  }
  template <CallLayout L>
  typename L::Params Params() const {
    typename L::Params params;
    std::memcpy(&params, header_->params, sizeof(params));
    return params;
  }
  template <CallLayout L>
  float* Floats(typename L::Buffer buffer) {
    return reinterpret_cast<float*>(base_ + header_->buffers[static_cast<uint32_t>(buffer)].dataOffset);
  }

  // A buffer of anything but floats (stage 4's blocks), as T.
  template <CallLayout L, typename T>
  T* As(typename L::Buffer buffer) {
    return reinterpret_cast<T*>(base_ + header_->buffers[static_cast<uint32_t>(buffer)].dataOffset);
  }

  void BeginCall(unsigned index);
  void EndCall();
  // A bench child's timed calls begin: the child stops itself (SIGSTOP), and the runner, which
  // asked for this (ChildLimits::resumeStops), writes the seed of the timed calls' inputs,
  // starts its clock and resumes it. Returns that seed (runner/stages/timed_inputs.h). The
  // runner's clock, from here to the child's end, is the batch's time
  // (runner/stages/bench_engine.h).
  uint64_t StartTimedCalls();
  // A bench child's calls, as runner/stages/bench_engine.h lays them out: makeInputs(0, 0) (seed
  // 0 is never a timed call's) and the untimed call into slot `slots`, the stop, then `calls`
  // timed calls, call c after makeInputs(seed, c), into slot c % slots; with `skipped`, the
  // inputs alone. call(slot) makes one call, writing into output slot `slot`.
  template <typename MakeInputs, typename Call>
  void RunBenchCalls(int calls, int slots, bool skipped, const MakeInputs& makeInputs, const Call& call) {
    makeInputs(uint64_t{0}, 0u);
    call(slots);  // untimed: pages, caches, thread pools
    const uint64_t seed = StartTimedCalls();
    for (int c = 0; c < calls; ++c) {
      makeInputs(seed, static_cast<unsigned>(c));
      if (!skipped) call(c % slots);
    }
  }

 private:
  shm::Header* header_;
  unsigned char* base_;
  unsigned long long callStart_ = 0;
};

// Implemented once per stage, in the stage's runner folder (runner/stages/NN-name/).
void CallStage(Region& region);

}  // namespace wb::harness
