// Stage 4's weight files and the reference of its block: the three GGUF files the build
// writes are the stage-1 weights quantized by ggml's rules, in stage 1's row order once read;
// a damaged file is refused by name; and the quantized block's float64 reference differs from
// the float block's by what quantization costs, in the order the formats' bits say.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/packed_weights.h"
#include "reference/block/block.h"
#include "reference/gen/block_data.h"
#include "runner/blocks/block_weights.h"
#include "runner/stages/04-quant/quant_reference.h"
#include "runner/stages/04-quant/quant_weights.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace quant_weights_test {

namespace {

namespace fsys = std::filesystem;
using ref::quant::WeightSet;

std::string BuildFile(const std::string& name) {
  return (fsys::path(std::getenv("WB_WEIGHTS")).parent_path() / name).string();
}

const wb::PackedWeights& FloatWeights() {
  static const wb::PackedWeights weights = [] {
    auto loaded = wb::LoadBlockWeights(std::getenv("WB_WEIGHTS"));
    REQUIRE(loaded.ok());
    return *loaded;
  }();
  return weights;
}

wb::stage04::QuantWeightSet Load(WeightSet set) {
  auto loaded = wb::stage04::LoadQuantWeightSet(BuildFile(ref::quant::FileName(set)), set);
  REQUIRE_MESSAGE(loaded.ok(), (loaded.ok() ? "" : loaded.error().message));
  return *loaded;
}

double RelativeRmsError(const std::vector<double>& got, const std::vector<double>& want) {
  double error = 0, size = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    error += (got[i] - want[i]) * (got[i] - want[i]);
    size += want[i] * want[i];
  }
  return std::sqrt(error / size);
}

}  // namespace

TEST_CASE("each weight file holds the stage-1 weights, each within half a step of its block") {
  const ref::BlockShape shape = ref::Stage1Shape();
  const auto floats = FloatWeights().values;
  const auto offsets = ref::PackedOffsets(shape);
  for (WeightSet set : ref::quant::kWeightSets) {
    CAPTURE(ref::quant::SetName(set));
    const auto q = Load(set);
    REQUIRE(q.values.size() == floats.size());
    // Norm weights are stored as they are; matrix values within a block's step of the float
    // weight (Q8_0's step is amax / 127, Q4_0's |extreme| / 8; a value is at most half a step
    // off, and Q4_0's clamp at 15 one step, give or take the half scale's own rounding), so a
    // row in the wrong place would be far off.
    for (size_t i = 0; i < offsets[1]; ++i) CHECK(q.values[i] == floats[i]);
    size_t far = 0;
    for (size_t i = offsets[1]; i < floats.size(); i += 32) {
      if (i >= offsets[5] && i < offsets[6]) continue;  // rms2
      float amax = 0;
      for (size_t j = i; j < i + 32; ++j) amax = std::max(amax, std::fabs(floats[j]));
      for (size_t j = i; j < i + 32; ++j) {
        if (std::fabs(q.values[j] - floats[j]) > amax / 8.0f * 1.01f) ++far;
      }
    }
    CHECK(far == 0);
    CHECK(q.matrices[0].rows == 768);
    CHECK(q.matrices[4].cols == 1408);
  }
}

TEST_CASE("a damaged or truncated weight file is refused, naming the file") {
  const std::string original = BuildFile(ref::quant::FileName(WeightSet::kQ4_0));
  const fsys::path folder = fsys::temp_directory_path() / fmt::format("wb-quant-weights-{}", ::getpid());
  fsys::create_directories(folder);
  const fsys::path copy = folder / "damaged.gguf";
  fsys::copy_file(original, copy, fsys::copy_options::overwrite_existing);
  {
    // One byte near the end: inside ffn_down's blocks.
    std::fstream file(copy, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-100, std::ios::end);
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(-100, std::ios::end);
    byte = static_cast<char>(byte ^ 0x10);
    file.write(&byte, 1);
  }
  auto damaged = wb::stage04::LoadQuantWeightSet(copy.string(), WeightSet::kQ4_0);
  REQUIRE_FALSE(damaged.ok());
  CHECK(damaged.error().message.find(copy.string()) != std::string::npos);
  CHECK(damaged.error().message.find("checksum") != std::string::npos);

  fsys::resize_file(copy, fsys::file_size(copy) / 2);
  auto truncated = wb::stage04::LoadQuantWeightSet(copy.string(), WeightSet::kQ4_0);
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.error().message.find(copy.string()) != std::string::npos);

  // The right file read as another set: its tensor types say which it is.
  auto wrongSet = wb::stage04::LoadQuantWeightSet(original, WeightSet::kQ8_0);
  REQUIRE_FALSE(wrongSet.ok());
  CHECK(wrongSet.error().message.find("Q4_0") != std::string::npos);
  fsys::remove_all(folder);
}

TEST_CASE("quantization costs Q8_0 least and Q4_0 most, against the float block") {
  const ref::BlockShape shape = ref::Stage1Shape();
  constexpr int kT = 64;
  const std::vector<float> x = ref::GenerateInputRows(2026, kT, shape.model, 1.0);
  std::vector<float> cos, sin;
  ref::MakeFloatRopeTables(kT, shape.headDim, ref::kRopeBase, cos, sin);
  const std::vector<double> xd(x.begin(), x.end()), cosd(cos.begin(), cos.end()), sind(sin.begin(), sin.end());
  const ref::BlockInputs inputs{.rows = kT, .x = xd, .ropeCos = cosd, .ropeSin = sind};
  const ref::BlockState exact =
      ref::RunBlock(shape, ref::BlockRecipe{}, ref::ViewPacked(shape, FloatWeights().values), inputs);
  // The FFN's contribution is what quantization moves; output adds x back, which it does not.
  const auto& exactFfn = exact[ref::Index(ref::Checkpoint::kFfnOut)];
  const auto& exactQ = exact[ref::Index(ref::Checkpoint::kQ)];
  double errors[3] = {};
  for (WeightSet set : ref::quant::kWeightSets) {
    const auto q = Load(set);
    const auto reference = wb::stage04::RunQuantizedBlock(shape, ref::ViewPacked(shape, q.values), inputs);
    using wb::stage04::At;
    using wb::stage04::Step;
    const double qError = RelativeRmsError(reference.buffers[At(Step::kQ)], exactQ);
    const double ffnError = RelativeRmsError(reference.buffers[At(Step::kFfnOut)], exactFfn);
    errors[static_cast<int>(set)] = ffnError;
    MESSAGE(fmt::format("{}: q off by {:.2e} of its RMS, ffnOut by {:.2e}", ref::quant::SetName(set), qError,
                        ffnError));
    CHECK(qError < 0.2);
    CHECK(ffnError < 0.3);
  }
  CHECK(errors[0] < errors[2]);  // q8_0 < mixed
  CHECK(errors[2] < errors[1]);  // mixed < q4_0
  CHECK(errors[0] < 0.05);
}

}  // namespace quant_weights_test
