#include "block_data.h"

#include "../../common/splitmix64.h"
#include "../block/block.h"
#include "../block/ops.h"

namespace ref {
namespace {

constexpr bool IsNormTensor(int tensor) { return tensor == 0 || tensor == 5; }  // rms1, rms2

}  // namespace

wb::PackedWeights GenerateBlockWeights(const BlockShape& shape, uint64_t seed) {
  wb::PackedWeights w;
  w.shape = {static_cast<uint32_t>(shape.model), static_cast<uint32_t>(shape.qHeads),
             static_cast<uint32_t>(shape.kvHeads), static_cast<uint32_t>(shape.headDim),
             static_cast<uint32_t>(shape.ffn)};
  w.seed = seed;
  const auto offsets = PackedOffsets(shape);
  w.offsets.assign(offsets.begin(), offsets.end());
  w.values.resize(PackedFloats(shape));
  wb::SplitMix64 rng(seed);
  for (int t = 0; t < 9; ++t) {
    const size_t end = t + 1 < 9 ? offsets[t + 1] : w.values.size();
    for (size_t i = offsets[t]; i < end; ++i) {
      const double u = rng.NextSigned();
      w.values[i] = static_cast<float>(IsNormTensor(t) ? 1.0 + u / 4 : u / 16);
    }
  }
  return w;
}

void ScaleBlockMatrices(const BlockShape& shape, std::vector<float>& packed, double scale) {
  if (scale == 1.0) return;
  const auto offsets = PackedOffsets(shape);
  for (int t = 0; t < 9; ++t) {
    if (IsNormTensor(t)) continue;
    const size_t end = t + 1 < 9 ? offsets[t + 1] : packed.size();
    for (size_t i = offsets[t]; i < end; ++i) packed[i] = static_cast<float>(packed[i] * scale);
  }
}

std::vector<float> GenerateInputRows(uint64_t seed, int rows, int width, double scale) {
  std::vector<float> x(static_cast<size_t>(rows) * width);
  wb::SplitMix64 rng(seed);
  for (float& value : x) value = static_cast<float>(rng.NextSigned() * scale);
  return x;
}

void MakeFloatRopeTables(int rows, int headDim, double base, std::vector<float>& cos, std::vector<float>& sin) {
  const auto inverse = DefaultInverseFrequencies(headDim, base);
  const RopeTable table = MakeRopeTable(0, rows, inverse);
  cos.assign(table.cos.begin(), table.cos.end());
  sin.assign(table.sin.begin(), table.sin.end());
}

}  // namespace ref
