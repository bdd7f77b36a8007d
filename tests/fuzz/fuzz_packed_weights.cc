// Fuzz target: the packed-weight parser must turn any bytes into weights or an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/packed_weights.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = wb::ParsePackedWeights(data, size, "fuzz.wbk", "HINT");
  if (parsed.ok()) {
    // A parsed file keeps the parser's promises: offsets increase inside the payload.
    if (parsed->offsets.empty() || parsed->values.size() * sizeof(float) + wb::kPackedHeaderBytes != size) {
      __builtin_trap();
    }
    for (size_t i = 0; i < parsed->offsets.size(); ++i) {
      if (parsed->offsets[i] >= parsed->values.size()) __builtin_trap();
      if (i > 0 && parsed->offsets[i] <= parsed->offsets[i - 1]) __builtin_trap();
    }
  } else if (parsed.error().message.rfind("fuzz.wbk: ", 0) != 0) {
    __builtin_trap();
  }
  return 0;
}
