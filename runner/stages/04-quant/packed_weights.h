// The optional pack_q step of stage 4's contract, on the child's side (stage04_quant.h): when
// the student's file defines pack_q_bytes and pack_q, each weight matrix is packed once, into
// memory this object owns for the rest of the child's life, before the calls that use it and
// outside any timing. Included by the stage's harness and bench children only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "quant_call.h"
#include "runner/harness/harness.h"
#include "stage04_quant.h"

namespace wb::harness {

class PackedWeights {
 public:
  // Whether the student's file takes the optional step. Defining one of the two functions and
  // not the other is a mistake the child stops on, before any call.
  static bool Defined() {
    const bool bytes = &pack_q_bytes != nullptr;
    const bool pack = &pack_q != nullptr;
    if (bytes != pack) {
      FailYourFile(bytes ? "your file defines pack_q_bytes but not pack_q: define both, or neither (stage04_quant.h)"
                 : "your file defines pack_q but not pack_q_bytes: define both, or neither (stage04_quant.h)");
    }
    return bytes;
  }

  // W with W.packed set, when the step is taken; W itself otherwise.
  QuantMatrix Pack(QuantMatrix W) {
    if (!Defined()) return W;
    const uint64_t own = static_cast<uint64_t>(W.rows) * static_cast<uint64_t>(W.cols / QK) *
                         (W.type == WeightType::kQ4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0));
    const size_t asked = pack_q_bytes(W);
    if (asked > stage04::MostPackedBytes(own)) {
      char message[256];
      std::snprintf(message, sizeof message,
                    "your file's pack_q_bytes asked for %zu bytes for a %d x %d %s matrix of %llu bytes: at most "
                    "twice its bytes plus 1 MiB (%llu) may be asked for (stage04_quant.h)",
                    asked, W.rows, W.cols, W.type == WeightType::kQ4_0 ? "Q4_0" : "Q8_0",
                    static_cast<unsigned long long>(own), static_cast<unsigned long long>(stage04::MostPackedBytes(own)));
      FailYourFile(message);
    }
    const size_t rounded = (asked + 63) / 64 * 64 + 64;  // never zero bytes: aligned_alloc may refuse those
    void* memory = std::aligned_alloc(64, rounded);
    if (memory == nullptr) FailYourFile("your file's packed weights did not fit in the memory the case allows");
    std::memset(memory, 0, rounded);
    buffers_.emplace_back(memory);
    pack_q(W, memory);
    W.packed = memory;
    return W;
  }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<void, Free>> buffers_;
};

}  // namespace wb::harness
