#include "decode.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "../block/ops.h"

namespace ref {

std::vector<DecodeCall> CallsFor(std::span<const int> steps) {
  std::vector<DecodeCall> calls;
  int pos = 0;
  for (int n : steps) {
    calls.push_back({.pos = pos, .n = n});
    pos += n;
  }
  return calls;
}

std::span<const double> CallRows(std::span<const double> whole, int width, const DecodeCall& call) {
  return whole.subspan(static_cast<size_t>(call.pos) * width, static_cast<size_t>(call.n) * width);
}

int RopeRowFor(const DecodeCall& call, int t, const DecodeRecipe& recipe) {
  return recipe.ropePosition == RopePosition::kWithinCall ? t : call.pos + t;
}

int CacheRowFor(const DecodeCall& call, int t, const DecodeRecipe& recipe) {
  return recipe.cacheRow == CacheRow::kAbsolute ? call.pos + t : t;
}

BlockInputs CallInputs(const DecodeCall& call, std::span<const double> x, std::span<const double> tableCos,
                       std::span<const double> tableSin, int ropePairs, const DecodeRecipe& recipe) {
  // Both choices of row are n consecutive rows, so the call's tables are one slice.
  const size_t first = static_cast<size_t>(RopeRowFor(call, 0, recipe)) * ropePairs;
  const size_t count = static_cast<size_t>(call.n) * ropePairs;
  assert(first + count <= tableCos.size() && tableSin.size() == tableCos.size());
  return BlockInputs{.rows = call.n,
                     .x = x,
                     .ropeCos = tableCos.subspan(first, count),
                     .ropeSin = tableSin.subspan(first, count)};
}

std::vector<double> CachedKeyRows(const BlockShape& shape, const BlockWeights& weights, const DecodeCall& call,
                                  std::span<const double> norm1, std::span<const double> rotatedKeys,
                                  const DecodeRecipe& recipe) {
  if (recipe.cachedKeys == CachedKeys::kAfterRope) return {rotatedKeys.begin(), rotatedKeys.end()};
  std::vector<double> keys(static_cast<size_t>(call.n) * shape.kvWidth());
  Project(norm1, call.n, shape.model, weights.wk, shape.kvWidth(), keys);
  return keys;
}

void AttendCached(std::span<const double> q, std::span<const double> kCache, std::span<const double> vCache,
                  const DecodeCall& call, const BlockShape& shape, const BlockRecipe& block,
                  const DecodeRecipe& decode, std::span<double> out) {
  const size_t rows = static_cast<size_t>(call.pos + call.n) * shape.kvWidth();
  assert(kCache.size() >= rows && vCache.size() >= rows);
  const auto keys = kCache.first(rows);
  const auto values = vCache.first(rows);
  if (decode.rescale != OnlineRescale::kBoth) {
    AttendOnline(q, keys, values, call.n, call.pos, shape, block, decode, out);
    return;
  }
  // The definition: stage 1's attention, its queries at positions pos .. pos + n - 1. Reading
  // every row the call has written is the mask-free attention over those rows.
  BlockRecipe recipe = block;
  if (decode.reach == AttentionReach::kWholeCall) recipe.mask = Mask::kNone;
  const AttentionSpan span{.queries = call.n, .firstQueryPosition = call.pos, .keys = call.pos + call.n, .window = 0};
  Attend(q, keys, values, span, shape, recipe, out);
}

void AttendOnline(std::span<const double> q, std::span<const double> k, std::span<const double> v, int queries,
                  int firstPosition, const BlockShape& shape, const BlockRecipe& block, const DecodeRecipe& decode,
                  std::span<double> out) {
  const int dh = shape.headDim;
  const int keyCount = static_cast<int>(k.size() / shape.kvWidth());
  assert(q.size() == static_cast<size_t>(queries) * shape.qWidth() && out.size() == q.size());
  assert(v.size() == k.size() && firstPosition + queries <= keyCount);
  const double scale = block.scoreScale == ScoreScale::kApplied ? shape.attentionScale : 1.0;
  const bool rescaleNormaliser = decode.rescale != OnlineRescale::kNeither;
  const bool rescaleAccumulator = decode.rescale == OnlineRescale::kBoth;
  std::vector<double> accumulator(dh);
  for (int i = 0; i < queries; ++i) {
    const int position = firstPosition + i;
    int last = decode.reach == AttentionReach::kOwnPosition ? position : firstPosition + queries - 1;
    if (block.mask == Mask::kNone) last = keyCount - 1;
    if (block.mask == Mask::kExcludesSelf) last = position - 1;
    for (int h = 0; h < shape.qHeads; ++h) {
      const double* qh = q.data() + static_cast<size_t>(i) * shape.qWidth() + static_cast<size_t>(h) * dh;
      const int kvHead = KvHeadFor(h, shape, block.headMap);
      double* dst = out.data() + static_cast<size_t>(i) * shape.qWidth() + static_cast<size_t>(h) * dh;
      double runningMax = -std::numeric_limits<double>::infinity();
      double normaliser = 0;
      std::fill(accumulator.begin(), accumulator.end(), 0.0);
      for (int j = 0; j <= last; ++j) {
        const size_t row = static_cast<size_t>(j) * shape.kvWidth() + static_cast<size_t>(kvHead) * dh;
        double dot = 0;
        for (int c = 0; c < dh; ++c) dot += qh[c] * k[row + c];
        const double score = dot * scale;
        if (score > runningMax) {
          // Terms summed so far carry exp(s_i - m_old); exp(m_old - m_new) makes them exp(s_i - m_new).
          const double rescale = std::exp(runningMax - score);
          if (rescaleNormaliser) normaliser *= rescale;
          if (rescaleAccumulator) {
            for (double& a : accumulator) a *= rescale;
          }
          runningMax = score;
        }
        const double weight = std::exp(score - runningMax);
        normaliser += weight;
        for (int c = 0; c < dh; ++c) accumulator[c] += weight * v[row + c];
      }
      for (int c = 0; c < dh; ++c) {
        dst[c] = last < 0 ? std::numeric_limits<double>::quiet_NaN() : accumulator[c] / normaliser;
      }
    }
  }
}

}  // namespace ref
