#include "decode_case.h"

#include <bit>

#include "reference/gen/block_data.h"
#include "runner/isolation/shared_layout.h"

namespace wb::stage02 {

std::span<const float> DecodeCase::X(const ref::DecodeCall& call) const {
  return std::span(x).subspan(static_cast<size_t>(call.pos) * shape.model, static_cast<size_t>(call.n) * shape.model);
}

std::span<const double> DecodeCase::Xd(const ref::DecodeCall& call) const {
  return ref::CallRows(xd, shape.model, call);
}

std::span<const double> DecodeCase::Expected(ref::Checkpoint c, const ref::DecodeCall& call) const {
  return ref::CallRows(reference[ref::Index(c)], ref::CheckpointWidth(c, shape), call);
}

DecodeCase PrepareDecodeCase(const CaseSpec& spec, const PackedWeights& packed) {
  DecodeCase c;
  c.shape = ref::Stage1Shape();
  c.calls = ref::CallsFor(spec.steps);
  c.tokens = spec.Tokens();
  c.weights = packed.values;
  ref::ScaleBlockMatrices(c.shape, c.weights, spec.wScale);
  c.x = ref::GenerateInputRows(spec.seed, c.tokens, c.shape.model, spec.xScale);
  ref::MakeFloatRopeTables(kCacheRows, c.shape.headDim, ref::kRopeBase, c.ropeCos, c.ropeSin);
  c.xd.assign(c.x.begin(), c.x.end());
  c.cosd.assign(c.ropeCos.begin(), c.ropeCos.end());
  c.sind.assign(c.ropeSin.begin(), c.ropeSin.end());
  const size_t pairs = static_cast<size_t>(c.shape.ropePairs());
  const ref::BlockInputs whole{.rows = c.tokens,
                               .x = c.xd,
                               .ropeCos = std::span<const double>(c.cosd).first(c.tokens * pairs),
                               .ropeSin = std::span<const double>(c.sind).first(c.tokens * pairs)};
  c.reference = ref::RunBlock(c.shape, ref::BlockRecipe{}, c.Weights(), whole);
  return c;
}

CacheState CacheState::Poisoned() {
  const float poison = std::bit_cast<float>(shm::kPoisonWord);
  const size_t size = static_cast<size_t>(kCacheRows) * kCacheWidth;
  return CacheState{std::vector<float>(size, poison), std::vector<float>(size, poison)};
}

}  // namespace wb::stage02
