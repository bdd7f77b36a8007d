// The float64 reference of stage 2: decoding, one call at a time, over a KV cache.
//
// Contract. A case is a sequence of calls; call s runs n_s tokens at positions
// pos_s .. pos_s + n_s - 1, where pos_s is the sum of the earlier calls' n. Its nine
// buffers are rows pos_s .. pos_s + n_s - 1 of the stage-1 reference (block.h) run on the
// whole sequence: with a causal mask a token's buffers depend only on the tokens at or
// before it, so how a sequence is split into calls changes nothing. What this file adds is
// the cache: which rows a call writes and what they hold, and attention that reads its keys
// and values from those rows. Every function takes the DecodeRecipe's switches, so the
// runner can evaluate the mistaken variants; with the default recipe each one is the
// definition.
#pragma once

#include <span>
#include <vector>

#include "../block/block.h"
#include "../block/block_recipe.h"
#include "../block/block_shape.h"
#include "decode_recipe.h"

namespace ref {

struct DecodeCall {
  int pos = 0;  // absolute position of the call's first token
  int n = 0;    // tokens in the call
};

// The calls of a case whose steps are the token counts n_0, n_1, ...
std::vector<DecodeCall> CallsFor(std::span<const int> steps);

// Rows pos .. pos + n - 1 of a whole-sequence buffer `width` values wide.
std::span<const double> CallRows(std::span<const double> whole, int width, const DecodeCall& call);

// The row of the RoPE tables, and the cache row, that token t of a call uses. With
// RopePosition::kNone nothing is rotated; its tables are the absolute rows, unread.
int RopeRowFor(const DecodeCall& call, int t, const DecodeRecipe& recipe);
int CacheRowFor(const DecodeCall& call, int t, const DecodeRecipe& recipe);

// The call's inputs for ComputeCheckpoint: its n rows of x and the n rows of the RoPE
// tables it rotates with. `tableCos`/`tableSin` cover positions 0 .. tableRows - 1.
BlockInputs CallInputs(const DecodeCall& call, std::span<const double> x, std::span<const double> tableCos,
                       std::span<const double> tableSin, int ropePairs, const DecodeRecipe& recipe);

// The n key rows a call writes into the cache, in token order: its `k` rows (after RoPE),
// or, when the recipe caches keys before RoPE, norm1 . WK^T.
std::vector<double> CachedKeyRows(const BlockShape& shape, const BlockWeights& weights, const DecodeCall& call,
                                  std::span<const double> norm1, std::span<const double> rotatedKeys,
                                  const DecodeRecipe& recipe);

// Attention of the call's n query rows over the cache. kCache and vCache hold rows
// 0 .. pos + n - 1 (at least); out is n x qWidth. The block recipe's attention switches
// (head map, mask, softmax, scale) apply as in stage 1. With the default decode recipe this
// is exactly ref::Attend over positions pos .. pos + n - 1; the rescale switch evaluates
// the one-pass softmax in the order a loop over rows 0, 1, ..., p visits them.
void AttendCached(std::span<const double> q, std::span<const double> kCache, std::span<const double> vCache,
                  const DecodeCall& call, const BlockShape& shape, const BlockRecipe& block,
                  const DecodeRecipe& decode, std::span<double> out);

// One-pass attention with an online softmax (Milakov & Gimelshein 2018), for queries at
// positions firstPosition .. firstPosition + queries - 1, each over key rows 0 .. last,
// where last is its own position (or, with AttentionReach::kWholeCall, the last query's).
// With OnlineRescale::kBoth it equals Attend to rounding; the other values emulate code
// that forgets to rescale when the running maximum grows.
void AttendOnline(std::span<const double> q, std::span<const double> k, std::span<const double> v, int queries,
                  int firstPosition, const BlockShape& shape, const BlockRecipe& block, const DecodeRecipe& decode,
                  std::span<double> out);

}  // namespace ref
