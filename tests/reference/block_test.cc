// The block reference as nine checkpoints: the packed layout is the contract's, and each
// switch of the recipe changes exactly the checkpoint where its mistake first shows.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "contracts/stage01_block.h"
#include "reference/block/block.h"
#include "reference/block/ops.h"
#include "reference/gen/block_data.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace block_test {

namespace {

using ref::Checkpoint;

struct Fixture {
  ref::BlockShape shape = ref::Stage1Shape();
  std::vector<float> weights;
  std::vector<double> x, cos, sin;
  ref::BlockInputs inputs;

  Fixture(int T, double xScale, double wScale) {
    weights = ref::GenerateBlockWeights(shape, ref::kBlockWeightSeed).values;
    ref::ScaleBlockMatrices(shape, weights, wScale);
    const auto xf = ref::GenerateInputRows(3, T, shape.model, xScale);
    x.assign(xf.begin(), xf.end());
    std::vector<float> c, s;
    ref::MakeFloatRopeTables(T, shape.headDim, ref::kRopeBase, c, s);
    cos.assign(c.begin(), c.end());
    sin.assign(s.begin(), s.end());
    inputs = {.rows = T, .x = x, .ropeCos = cos, .ropeSin = sin};
  }
  ref::BlockState Run(const ref::BlockRecipe& recipe) const {
    return ref::RunBlock(shape, recipe, ref::ViewPacked(shape, weights), inputs);
  }
};

double MaxDifference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(a[i] - b[i]);
    if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d;
  }
  return worst;
}

}  // namespace

TEST_CASE("the reference's packed offsets are the contract's constants") {
  const auto offsets = ref::PackedOffsets(ref::Stage1Shape());
  const int contract[9] = {OFF_RMS1, OFF_WQ, OFF_WK, OFF_WV, OFF_WO, OFF_RMS2, OFF_WGATE, OFF_WUP, OFF_WDOWN};
  for (int i = 0; i < 9; ++i) CHECK(offsets[i] == static_cast<size_t>(contract[i]));
  CHECK(ref::PackedFloats(ref::Stage1Shape()) == static_cast<size_t>(PACKED_FLOATS));
  CHECK(ref::Stage1Shape().rmsEps == static_cast<double>(RMS_EPS));
}

TEST_CASE("RMSNorm with unit weights and no epsilon gives rows of mean square 1") {
  std::vector<double> x = {3.0, -4.0, 12.0, 0.5, 1e-3, 7.0};
  std::vector<float> ones(3, 1.0f);
  std::vector<double> out(6);
  ref::RmsNorm(x, 2, 3, ones, 0.0, ref::NormEpsilon::kInside, ref::NormWeight::kApplied, out);
  for (int r = 0; r < 2; ++r) {
    double ms = 0;
    for (int c = 0; c < 3; ++c) ms += out[r * 3 + c] * out[r * 3 + c];
    CHECK(ms / 3 == doctest::Approx(1.0).epsilon(1e-14));
  }
}

TEST_CASE("each switch changes the checkpoint where its mistake first shows, and nothing before it") {
  struct Flip {
    std::string name;
    std::function<void(ref::BlockRecipe&)> apply;
    Checkpoint firstChanged;
    double xScale = 1.0, wScale = 1.0;
  };
  const std::vector<Flip> flips = {
      {"residual from normalised", [](auto& r) { r.residualSource = ref::ResidualSource::kNormalised; }, Checkpoint::kResidual1},
      {"missing epsilon", [](auto& r) { r.normEpsilon = ref::NormEpsilon::kMissing; }, Checkpoint::kNorm1, 1e-3},
      {"missing norm weight", [](auto& r) { r.normWeight = ref::NormWeight::kMissing; }, Checkpoint::kNorm1},
      {"adjacent pairs", [](auto& r) { r.ropePairing = ref::RopePairing::kAdjacent; }, Checkpoint::kQ},
      {"reversed rotation", [](auto& r) { r.ropeDirection = ref::RopeDirection::kReversed; }, Checkpoint::kQ},
      {"RoPE on v", [](auto& r) { r.ropeTargets = ref::RopeTargets::kQueryKeyValue; }, Checkpoint::kV},
      {"interleaved heads", [](auto& r) { r.headMap = ref::HeadMap::kInterleaved; }, Checkpoint::kAttnOut},
      {"no mask", [](auto& r) { r.mask = ref::Mask::kNone; }, Checkpoint::kAttnOut},
      {"mask excludes self", [](auto& r) { r.mask = ref::Mask::kExcludesSelf; }, Checkpoint::kAttnOut},
      {"naive softmax", [](auto& r) { r.softmax = ref::Softmax::kNaiveFloat; }, Checkpoint::kAttnOut, 1.0, 16.0},
      {"no scale", [](auto& r) { r.scoreScale = ref::ScoreScale::kMissing; }, Checkpoint::kAttnOut},
      {"GELU", [](auto& r) { r.activation = ref::Activation::kGeluTanh; }, Checkpoint::kFfnOut},
      {"SiLU on up", [](auto& r) { r.gatedBranch = ref::GatedBranch::kUp; }, Checkpoint::kFfnOut},
      {"output from input", [](auto& r) { r.outputResidual = ref::OutputResidual::kInput; }, Checkpoint::kOutput},
  };
  for (const Flip& flip : flips) {
    CAPTURE(flip.name);
    const Fixture f(4, flip.xScale, flip.wScale);
    const auto right = f.Run({});
    ref::BlockRecipe recipe;
    flip.apply(recipe);
    const auto mistaken = f.Run(recipe);
    for (Checkpoint c : ref::kCheckpointOrder) {
      CAPTURE(ref::CheckpointName(c));
      const double diff = MaxDifference(right[ref::Index(c)], mistaken[ref::Index(c)]);
      if (ref::Index(c) < ref::Index(flip.firstChanged)) {
        CHECK(diff == 0.0);
      } else if (c == flip.firstChanged) {
        CHECK(diff > 1e-2);
      }
    }
  }
}

TEST_CASE("a checkpoint computed from the reference's own upstream reproduces the chain") {
  const Fixture f(3, 1.0, 1.0);
  const auto chain = f.Run({});
  const auto w = ref::ViewPacked(f.shape, f.weights);
  for (Checkpoint c : ref::kCheckpointOrder) {
    CHECK(ref::ComputeCheckpoint(c, f.shape, {}, w, f.inputs, chain) == chain[ref::Index(c)]);
  }
}

TEST_CASE("the stage-1 buffers stay near unit scale for unit-scale cases") {
  const Fixture f(8, 1.0, 1.0);
  const auto chain = f.Run({});
  for (Checkpoint c : ref::kCheckpointOrder) {
    double ss = 0;
    for (double v : chain[ref::Index(c)]) ss += v * v;
    const double rms = std::sqrt(ss / chain[ref::Index(c)].size());
    CAPTURE(ref::CheckpointName(c));
    CHECK(rms > 0.05);
    CHECK(rms < 5.0);
  }
}

}  // namespace block_test
