#include "quant_reference.h"

#include "runner/compare/block_tolerances.h"

#include "quant_checks.h"
#include "runner/blocks/block_buffers.h"
#include "reference/block/ops.h"

namespace wb::stage04 {

std::vector<double> QuantizedView(std::span<const double> values) {
  const std::vector<float> rounded(values.begin(), values.end());
  const auto blocks = ReferenceQ8_0(rounded);
  if (!blocks) return {};
  const std::vector<float> exact = DequantizeQ8_0(*blocks);
  return {exact.begin(), exact.end()};
}

QuantizedBlockReference RunQuantizedBlock(const ref::BlockShape& shape, const ref::BlockWeights& w,
                                          const ref::BlockInputs& inputs) {
  using ref::Checkpoint;
  QuantizedBlockReference r;
  auto& e = r.buffers;
  const ref::BlockRecipe recipe{};
  auto step = [&](Checkpoint c) { return ref::ComputeCheckpoint(c, shape, recipe, w, inputs, r.chain); };
  e[At(Step::kNorm1)] = step(Checkpoint::kNorm1);
  e[At(Step::kNorm1q)] = QuantizedView(e[At(Step::kNorm1)]);
  if (e[At(Step::kNorm1q)].empty()) return r;
  r.chain[ref::Index(Checkpoint::kNorm1)] = e[At(Step::kNorm1q)];
  for (auto [s, c] : {std::pair{Step::kQ, Checkpoint::kQ}, {Step::kK, Checkpoint::kK}, {Step::kV, Checkpoint::kV}}) {
    e[At(s)] = step(c);
    r.chain[ref::Index(c)] = e[At(s)];
  }
  e[At(Step::kAttnOut)] = step(Checkpoint::kAttnOut);
  e[At(Step::kAttnOutq)] = QuantizedView(e[At(Step::kAttnOut)]);
  if (e[At(Step::kAttnOutq)].empty()) return r;
  r.chain[ref::Index(Checkpoint::kAttnOut)] = e[At(Step::kAttnOutq)];
  e[At(Step::kResidual1)] = step(Checkpoint::kResidual1);
  r.chain[ref::Index(Checkpoint::kResidual1)] = e[At(Step::kResidual1)];
  e[At(Step::kNorm2)] = step(Checkpoint::kNorm2);
  e[At(Step::kNorm2q)] = QuantizedView(e[At(Step::kNorm2)]);
  if (e[At(Step::kNorm2q)].empty()) return r;
  e[At(Step::kHidden)] = GatedHidden(e[At(Step::kNorm2q)], inputs.rows, shape, w, ref::GatedBranch::kGate);
  e[At(Step::kHiddenq)] = QuantizedView(e[At(Step::kHidden)]);
  if (e[At(Step::kHiddenq)].empty()) return r;
  e[At(Step::kFfnOut)] = DownProjection(e[At(Step::kHiddenq)], inputs.rows, shape, w);
  e[At(Step::kOutput)].resize(e[At(Step::kFfnOut)].size());
  ref::Add(e[At(Step::kResidual1)], e[At(Step::kFfnOut)], e[At(Step::kOutput)]);
  return r;
}

Tolerance ChainTolerance(ref::Checkpoint c) {
  using ref::Checkpoint;
  if (c == Checkpoint::kNorm1) return BlockTolerance(c);
  if (c == Checkpoint::kQ || c == Checkpoint::kK || c == Checkpoint::kV) return {.absoluteOfRms = 1e-2, .relative = 1e-3};
  if (c == Checkpoint::kAttnOut || c == Checkpoint::kResidual1 || c == Checkpoint::kNorm2) {
    return {.absoluteOfRms = 2e-2, .relative = 2e-3};
  }
  return {.absoluteOfRms = 0.25, .relative = 2e-2};
}

}  // namespace wb::stage04
