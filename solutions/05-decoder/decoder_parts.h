// The parts of stage 5's decoder, one file each, and what each part must do.
//
// decoder.cc (decoder_forward, the contract's stage function) is the decoder as a sequence of
// named steps; every step that is more than a matrix product or a loop of additions lives in
// one of the files below, declared here so decoder.cc and the parts share one list:
//   kv_cache.cc   where a row of the paged cache lives, and storing and reading rows;
//   rope.cc       each position's cos and sin, and the rotation of q and k heads;
//   norms.cc      RMSNorm of rows, and the QK-norm of q and k;
//   attention.cc  one-pass attention over the cache;
//   moe.cc        routing tokens to experts, and the experts' FFN.
// The contract (types, buffers, the cache's row layout) is contracts/stage05_decoder.h; the
// matrix kernels (weight_matmul, weight_matmul_same_input, weight_matmul_gated, weight_rows)
// are stage05_kernels.h.
// Sizes: n tokens in the call, H hidden, hd headDim, KVW = kvHeads · hd.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stage05_decoder.h"

namespace decoder_parts {

// ---- kv_cache.cc --------------------------------------------------------------------------------

// Which row of a (page, layer) pair: the keys (0) or the values (1), as the contract numbers them.
enum class KvPart : int { kKeys = 0, kValues = 1 };

// The first byte of the row that holds `part` of `layer` at `position`: slot position % pageSize
// of physical page pageTable[position / pageSize], at the contract's row index times
// CacheRowBytes. position < cache.geometry.capacity().
std::byte* RowAddress(const KvCache& cache, int layer, KvPart part, int position);

// Stores one position's keys or values, `row` (KVW floats), in the cache as its type says:
// f32 as they are, f16 as FloatToHalf of each, int8 as the group scales, then the codes, then
// zero bytes (the contract's rules, byte for byte). Writes that row's CacheRowBytes and
// nothing else.
void StoreRow(const KvCache& cache, int layer, KvPart part, int position, const float* row);

// Reads head `head` (values [head · hd, (head + 1) · hd)) of a stored row back to float into
// out (hd floats): each value as the cache holds it (a half widened, code · scale for int8).
void LoadHead(const KvCache& cache, int layer, KvPart part, int position, int head, float* out);

// ---- rope.cc ------------------------------------------------------------------------------------

// cos and sin (n x pairs each, pairs = rope.inverse.size()) of positions firstPosition ..
// firstPosition + n - 1: row i, pair f is the angle (firstPosition + i) · rope.inverse[f],
// computed in double, its cos and sin times rope.attentionFactor, stored as float.
void RopeAngles(const wb::model::RopeFrequencies& rope, int firstPosition, int n, float* cos, float* sin);

// Rotates, in place, every one of the `heads` heads (hd values each) of the n rows of x
// (n x heads·hd): in row i, pair f of a head, (a, b) -> (a·cos - b·sin, a·sin + b·cos) with
// cos[i · hd/2 + f] and sin[i · hd/2 + f]. The pair is values (f, f + hd/2) for kHalfSplit,
// (2f, 2f + 1) for kAdjacent.
void RotateHeads(float* x, int n, int heads, int headDim, const float* cos, const float* sin,
                 wb::model::RopePairing pairing);

// ---- norms.cc -----------------------------------------------------------------------------------

// out = in / sqrt(mean(in²) + eps) · weight, row by row, for `rows` rows of `width` values;
// weight has width values. out may be in (normalised in place).
void RmsNormRows(const float* in, int rows, int width, const float* weight, double eps, float* out);

// The QK-norm of q (heads = config.heads) or k (heads = config.kvHeads), in place, n rows of
// heads·hd: kPerHead normalises each head's hd values with a weight of hd, kWholeProjection
// each row's heads·hd values with a weight of heads·hd, kNone leaves x as it is.
void QkNormalise(float* x, int n, int heads, int headDim, wb::model::QkNorm kind, const float* weight, double eps);

// ---- attention.cc -------------------------------------------------------------------------------

// The largest head the attention keeps on the stack, and the query heads it serves per pass
// over one kv head's keys.
constexpr int kMaxHeadDim = 512;
constexpr int kMaxGroupHeads = 16;

// attnOut (n x heads·hd): row i is the query at position p = cache.size + i (the cache as the
// call found it; this call's rows already stored); its head h attends, through kv head
// h / (heads / kvHeads), to the keys and values of positions max(0, p - window + 1) .. p
// (0 .. p when window is 0) as LoadHead reads them back, with scores q·k times `scale` and a
// softmax over those positions. q is n x heads·hd. At most `threads` threads; each head of each
// row is computed by one thread in one fixed order, so the result is the same for any count.
void Attend(const KvCache& cache, int layer, int n, int heads, const float* q, int window, float scale,
            float* attnOut, int threads);

// ---- moe.cc -------------------------------------------------------------------------------------

// Routing of n rows among `experts` experts, topK each. router holds the n x experts router
// logits; it is left holding their softmax. Row r's choices go to expertIds and expertWeights
// [r · topK, (r + 1) · topK): the experts of largest probability first (of equal ones the
// lower id first), each with its probability, divided by the chosen ones' sum when
// `renormalise`.
void RouteTokens(int n, int experts, int topK, bool renormalise, float* router, int32_t* expertIds,
                 float* expertWeights);

// out (n x H) = for each row of x (n x H), Σ over its chosen experts of weight · the expert's
// gated FFN of the row: the router's logits (layer.router) into scratch.router, RouteTokens
// into expertIds and expertWeights (n x topK each), then the experts one token at a time
// through scratch.hidden and scratch.expertOut. Allocates nothing.
void MoeFfn(const wb::model::ModelConfig& config, const wb::model::LayerWeights& layer, int n, const float* x,
            int32_t* expertIds, float* expertWeights, const Scratch& scratch, float* out, int threads);

}  // namespace decoder_parts
