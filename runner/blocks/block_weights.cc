#include "block_weights.h"

#include <filesystem>

#include <fmt/format.h>

namespace wb {
namespace {

bool SplitIntoHeads(ref::Checkpoint c) {
  using ref::Checkpoint;
  return c == Checkpoint::kQ || c == Checkpoint::kK || c == Checkpoint::kV || c == Checkpoint::kAttnOut;
}

}  // namespace

std::string DefaultBlockWeightsPath(const std::string& buildRoot) {
  return (std::filesystem::path(buildRoot) / "block-weights.wbk").string();
}

Expected<PackedWeights> LoadBlockWeights(const std::string& path) {
  const std::string hint = "The build makes this file: run ./workbook again to regenerate it "
                           "(delete it first if it keeps failing).";
  auto loaded = ReadPackedWeights(path, hint);
  if (!loaded.ok()) return loaded.error();
  const ref::BlockShape shape = ref::Stage1Shape();
  const PackedShape expected{static_cast<uint32_t>(shape.model), static_cast<uint32_t>(shape.qHeads),
                             static_cast<uint32_t>(shape.kvHeads), static_cast<uint32_t>(shape.headDim),
                             static_cast<uint32_t>(shape.ffn)};
  if (!(loaded->shape == expected)) {
    return BadData(fmt::format("{}: field 'shape' is {}x{}x{}x{}x{} (model, q heads, kv heads, head dim, ffn); "
                               "the stage-1 contract is 512x8x2x64x1408. {}",
                               path, loaded->shape.model, loaded->shape.qHeads, loaded->shape.kvHeads,
                               loaded->shape.headDim, loaded->shape.ffn, hint));
  }
  const auto offsets = ref::PackedOffsets(shape);
  if (loaded->offsets.size() != offsets.size() || loaded->values.size() != ref::PackedFloats(shape)) {
    return BadData(fmt::format("{}: it holds {} tensors in {} floats; the contract has 9 tensors in {}. {}", path,
                               loaded->offsets.size(), loaded->values.size(), ref::PackedFloats(shape), hint));
  }
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (loaded->offsets[i] != offsets[i]) {
      return BadData(fmt::format("{}: field 'offsets[{}]' is {}; the contract's offset is {}. {}", path, i,
                                 loaded->offsets[i], offsets[i], hint));
    }
  }
  return loaded;
}

Status BlockWeightsDriver::Prepare(const StageContext& context) {
  auto loaded = LoadBlockWeights(context.weightsPath.empty() ? DefaultBlockWeightsPath(context.paths.buildRoot)
                                                             : context.weightsPath);
  if (!loaded.ok()) return loaded.error();
  weights_ = std::move(*loaded);
  return Status::Ok();
}

std::string BlockElement(ref::Checkpoint c, size_t index, const ref::BlockShape& s, int firstRow) {
  const int width = ref::CheckpointWidth(c, s);
  const size_t row = firstRow + index / width;
  const int col = static_cast<int>(index % width);
  if (!SplitIntoHeads(c)) return fmt::format("token {}, channel {}", row, col);
  const bool kv = c == ref::Checkpoint::kK || c == ref::Checkpoint::kV;
  return fmt::format("token {}, {} {}, channel {}", row, kv ? "KV head" : "head", col / s.headDim, col % s.headDim);
}

BufferGeometry BlockGeometry(ref::Checkpoint c, int rows, const ref::BlockShape& s, int firstRow) {
  return BufferGeometry{.rows = rows,
                        .width = ref::CheckpointWidth(c, s),
                        .headDim = SplitIntoHeads(c) ? s.headDim : 0,
                        .rowName = "token",
                        .firstRow = firstRow};
}

}  // namespace wb
