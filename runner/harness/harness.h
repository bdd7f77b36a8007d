// The child side of the runner: a thin main() that maps the shared region, protects it,
// watches for crashes, and calls the stage function through CallStage.
//
// Contract: the child is linked from the student's stage file, this harness and one
// stage's CallStage, nothing else (no reference, no solutions, no case definitions).
// CallStage finds its buffers by name and brackets each call of the stage function with
// BeginCall/EndCall, so the runner knows which call was running when something went wrong.
#pragma once

#include <cstddef>

#include "../isolation/shared_layout.h"

namespace wb::harness {

class Region {
 public:
  Region(shm::Header* header, unsigned char* base) : header_(header), base_(base) {}

  shm::Header& header() { return *header_; }
  int64_t Param(int i) const { return header_->params[i]; }

  // The data of a named buffer; aborts the child (a runner bug) if it is missing.
  float* Floats(const char* name);
  const float* ConstFloats(const char* name) { return Floats(name); }
  void* Bytes(const char* name);

  void BeginCall(unsigned index);
  void EndCall();

 private:
  shm::Header* header_;
  unsigned char* base_;
  unsigned long long callStart_ = 0;
};

// Implemented once per stage (stage01_call.cc, ...).
void CallStage(Region& region);

}  // namespace wb::harness
