// The stage-1 weight file as the runner loads it: the contract's shape and offsets only.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "common/packed_weights.h"
#include "reference/block/block_shape.h"
#include "reference/gen/block_data.h"
#include "runner/blocks/block_weights.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace weights_test {

namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("wb-weights-" + std::to_string(getpid()) + "-" + name)).string();
}

}  // namespace

TEST_CASE("the generated file loads") {
  const std::string path = TempPath("good.wbk");
  REQUIRE(wb::WritePackedWeights(path, ref::GenerateBlockWeights(ref::Stage1Shape(), ref::kBlockWeightSeed)).ok());
  CHECK(wb::LoadBlockWeights(path).ok());
  std::remove(path.c_str());
}

TEST_CASE("a file of another shape is refused, naming the field and both shapes") {
  ref::BlockShape other = ref::Stage1Shape();
  other.ffn = 1024;
  const std::string path = TempPath("shape.wbk");
  REQUIRE(wb::WritePackedWeights(path, ref::GenerateBlockWeights(other, 1)).ok());
  const auto loaded = wb::LoadBlockWeights(path);
  REQUIRE(!loaded.ok());
  CHECK(loaded.error().kind == wb::ErrorKind::kBadData);
  CHECK(loaded.error().message.rfind(path + ": field 'shape' is 512x8x2x64x1024 (model, q heads, kv heads, head dim, "
                                            "ffn); the stage-1 contract is 512x8x2x64x1408.",
                                     0) == 0);
  std::remove(path.c_str());
}

TEST_CASE("a file with the right shape but moved offsets is refused") {
  auto weights = ref::GenerateBlockWeights(ref::Stage1Shape(), 1);
  weights.offsets[3] += 1;
  const std::string path = TempPath("offsets.wbk");
  REQUIRE(wb::WritePackedWeights(path, weights).ok());
  const auto loaded = wb::LoadBlockWeights(path);
  REQUIRE(!loaded.ok());
  CHECK(loaded.error().message.find("field 'offsets[3]' is 328193; the contract's offset is 328192") !=
        std::string::npos);
  std::remove(path.c_str());
}

}  // namespace weights_test
