// workbook-make-weights: writes a block stage's packed weight file (run by the build).
//   workbook-make-weights OUTPUT [SEED]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../../common/packed_weights.h"
#include "../block/block_shape.h"
#include "block_data.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: workbook-make-weights OUTPUT [SEED]\n");
    return 2;
  }
  const uint64_t seed = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : ref::kBlockWeightSeed;
  const auto weights = ref::GenerateBlockWeights(ref::Stage1Shape(), seed);
  const wb::Status written = wb::WritePackedWeights(argv[1], weights);
  if (!written.ok()) {
    std::fprintf(stderr, "workbook-make-weights: %s\n", written.error().message.c_str());
    return 2;
  }
  return 0;
}
