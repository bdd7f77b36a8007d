// Stage 5 contract: the full decoder. One recipe with switches runs every supported family
// (llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, gemma3_text, olmoe) from a GGUF file or a
// Hugging Face folder, over a paged KV cache.
//
// Shared, unchanged, by stages/05-decoder/ (your files) and solutions/05-decoder/; the
// runner's harness is compiled against it too. Read it, use its names, never edit it.
//
// Provided, as a library your code links against (documented in the lesson):
//   - ModelConfig (model/config/config.h): the sizes and the switches of the model, read
//     from config.json or the GGUF metadata. Nothing in your code asks which family a model
//     is; it asks which switches it has.
//   - ModelWeights (model/config/model_weights.h): every tensor the switches imply, as
//     WeightMatrix views into the mapped file (any stored type) and f32 norm weights and
//     biases (an HF Gemma's norm weights already hold 1 + w: the model library adds the 1).
//   - RopeFrequencies (model/config/rope_frequencies.h): each rotary pair's frequency with
//     the model's scaling applied (linear, llama3, YaRN), and the factor cos and sin take.
//   - The matrix kernels of stage05_kernels.h: products with a WeightMatrix of any stored
//     type (stages 3 and 4's kernels where the type is theirs).
//
// Sizes below: n tokens in this call, H = hidden, Q = heads·headDim, KVW = kvHeads·headDim,
// L layers, K = expertsPerToken, E experts, V vocab. Every buffer is row-major, one row per
// token of the call (row i is position cache.size + i, as the call found it).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include "half.h"
#include "model/config/config.h"
#include "model/config/model_weights.h"
#include "model/config/rope_frequencies.h"
#include "stage05_kernels.h"

// ---- The KV cache: pages of rows in one arena ------------------------------------------------
//
// A row is one position's keys (or values) of one layer, all kv heads: KVW values, stored as
//   kF32   KVW floats;
//   kF16   KVW halves, each FloatToHalf(x) (half.h: round to nearest, ties to even);
//   kInt8  G = KVW / g float scales, then KVW int8 codes, then zero bytes up to a multiple of
//          4, where g = Int8GroupSize(headDim). Group j covers values [j·g, (j + 1)·g), so no
//          group straddles two heads: s_j = amax_j / 127 (a float division; amax_j the
//          largest |x| of the group), code = std::round(x / s_j) (a float division,
//          halfway cases away from zero), and 0 for every value of a group whose s_j is 0.
//          A code reads back as code · s_j.
// The arena is `pages` pages; a page holds pageSize positions of every layer's keys and
// values. Physical page P, layer l, keys (0) or values (1), slot s in [0, pageSize) is row
//   ((P · layers + l) · 2 + which) · pageSize + s        at byte row · CacheRowBytes(geometry)
// so one layer's keys of a page are pageSize consecutive rows. Position p lives in slot
// p % pageSize of physical page pageTable[p / pageSize]: the page table is the only way
// from a position to its page, and consecutive positions need not share neighbouring pages.
enum class CacheType : int32_t { kF32 = 0, kF16 = 1, kInt8 = 2 };

struct CacheGeometry {
  int layers = 0;
  int kvHeads = 0;
  int headDim = 0;
  int pageSize = 0;  // positions per page, at least 1
  int pages = 0;     // physical pages in the arena (and entries of the page table)
  CacheType type = CacheType::kF32;

  int kvWidth() const { return kvHeads * headDim; }
  int capacity() const { return pages * pageSize; }  // positions the cache can hold
};

// The int8 group: the largest power of two dividing headDim, at most 32.
inline int Int8GroupSize(int headDim) {
  int group = 1;
  while (group < 32 && headDim % (group * 2) == 0) group *= 2;
  return group;
}

inline size_t CacheRowBytes(const CacheGeometry& g) {
  const size_t width = static_cast<size_t>(g.kvWidth());
  switch (g.type) {
    case CacheType::kF32: return width * 4;
    case CacheType::kF16: return width * 2;
    case CacheType::kInt8: return width / Int8GroupSize(g.headDim) * 4 + (width + 3) / 4 * 4;
  }
  return 0;
}

inline size_t CacheArenaBytes(const CacheGeometry& g) {
  return static_cast<size_t>(g.pages) * g.layers * 2 * g.pageSize * CacheRowBytes(g);
}

// The cache a call reads and extends. The arena (CacheArenaBytes) and the page table are
// reserved before the first call and never grow: a call stores its n positions' rows
// (cache.size onward) and then advances size by n. Rows of other positions are not touched.
struct KvCache {
  CacheGeometry geometry;
  std::byte* arena = nullptr;
  const int32_t* pageTable = nullptr;  // `pages` entries, each a physical page in [0, pages)
  int size = 0;                        // positions 0 .. size - 1 are held
};

// ---- The model ---------------------------------------------------------------------------------
struct Model {
  const wb::model::ModelConfig& config;
  const wb::model::ModelWeights& weights;
  wb::model::RopeFrequencies rope;       // every layer, or the global ones when localRope is used
  wb::model::RopeFrequencies localRope;  // sliding layers when config.hasLocalRope
};

// ---- The buffers a call writes: what the runner checks -----------------------------------------
// One layer's buffers, n rows each, the stage-1 block's nine read for a whole model:
//   norm1      RMSNorm(x) · attnNorm (x: the layer's input: the embedding row or the
//              previous layer's output)                                             n x H
//   q, k, v    norm1 · W^T + bias; q and k then QK-normed (per head, or over the whole
//              projection) and rotated by RoPE, in that order                  n x Q, n x KVW
//   attnOut    attention of q over the cache's rows 0 .. cache.size + i (the keys and
//              values as the cache stores them, read back), within the sliding window
//              p - W < j <= p on sliding layers, query head h on kv head h / (heads/kvHeads),
//              scores times config.attentionScale                                   n x Q
//   residual1  x + o, o = attnOut · Wo^T (+ bias), RMSNorm'd by postAttnNorm on sandwich
//              layers first                                                          n x H
//   norm2      RMSNorm(residual1) · ffnNorm                                         n x H
//   ffnOut     the dense gated FFN of norm2, or Σ over the chosen experts of weight · expert
//              FFN; RMSNorm'd by postFfnNorm on sandwich layers                      n x H
//   output     residual1 + ffnOut: the next layer's x                                n x H
// and on MoE layers the routing of each row, K entries in the order chosen:
//   expertIds      the experts, largest router probability first (softmax over all E; of
//                  equal probabilities the lower id first)                           n x K
//   expertWeights  their probabilities, divided by the chosen ones' sum when
//                  config.renormaliseTopK                                            n x K
// (both null on dense layers).
struct LayerBuffers {
  float* norm1 = nullptr;
  float* q = nullptr;
  float* k = nullptr;
  float* v = nullptr;
  float* attnOut = nullptr;
  float* residual1 = nullptr;
  float* norm2 = nullptr;
  float* ffnOut = nullptr;
  float* output = nullptr;
  int32_t* expertIds = nullptr;
  float* expertWeights = nullptr;
};

// Working room, sized by ScratchFloats: never checked, never allocated by you. Its parts:
//   cos, sin            n x headDim/2   each position's RoPE angles (global)
//   localCos, localSin  n x headDim/2   the local base's, for sliding layers
//   branch              n x H           a branch's output before its sandwich norm
//   hidden              n x F           act(gate) · up of the dense FFN (F = the wider of
//                                       ffn and expertFfn)
//   router              n x E           router logits, then probabilities
//   expertOut           H               one expert's output for one token
struct Scratch {
  float* cos = nullptr;
  float* sin = nullptr;
  float* localCos = nullptr;
  float* localSin = nullptr;
  float* branch = nullptr;
  float* hidden = nullptr;
  float* router = nullptr;
  float* expertOut = nullptr;
};

// What a call writes. In `check` each layer has its own LayerBuffers, laid out in the
// runner's shared memory; in `bench` and `generate` every entry points at one set, reused
// layer after layer. Your code is the same for both: read and write a layer's buffers only
// through layers[l].
//   embedding   the token embeddings, times √H when config.embeddingScale says so   n x H
//   finalNorm   RMSNorm(last layer's output) · outputNorm, for the rows with logits
//   logits      finalNorm · head^T (the embedding matrix when config.tiedHead), then
//               softcap · tanh(logit / softcap) when config.finalLogitSoftcap > 0
// Rows with logits: all n (Logits::kAll), or only the last (Logits::kLast: one row).
struct DecoderBuffers {
  float* embedding = nullptr;
  LayerBuffers* layers = nullptr;  // config.layerCount() entries
  float* finalNorm = nullptr;
  float* logits = nullptr;
  Scratch scratch;
};

enum class Logits : int32_t { kLast = 0, kAll = 1 };

// Floats of each scratch part, for a call of at most maxTokens tokens, in Scratch's order.
inline size_t ScratchFloats(const wb::model::ModelConfig& c, int maxTokens) {
  const size_t n = static_cast<size_t>(maxTokens);
  const size_t pairs = static_cast<size_t>(c.headDim / 2);
  const size_t widest = static_cast<size_t>(c.ffn > c.expertFfn ? c.ffn : c.expertFfn);
  return 4 * n * pairs + n * c.hidden + n * widest + n * c.experts + c.hidden;
}

// Carves `floats` (ScratchFloats(c, maxTokens) of them) into a Scratch.
inline Scratch CarveScratch(const wb::model::ModelConfig& c, int maxTokens, float* floats) {
  const size_t n = static_cast<size_t>(maxTokens);
  const size_t pairs = static_cast<size_t>(c.headDim / 2);
  const size_t widest = static_cast<size_t>(c.ffn > c.expertFfn ? c.ffn : c.expertFfn);
  Scratch s;
  s.cos = floats;
  s.sin = s.cos + n * pairs;
  s.localCos = s.sin + n * pairs;
  s.localSin = s.localCos + n * pairs;
  s.branch = s.localSin + n * pairs;
  s.hidden = s.branch + n * c.hidden;
  s.router = s.hidden + n * widest;
  s.expertOut = s.router + n * c.experts;
  return s;
}

// ---- The stage function ------------------------------------------------------------------------
// Runs tokens (n = tokens.size() >= 1, each in [0, V)) at positions cache.size ..
// cache.size + n - 1: the same call is a prefill (the prompt) or a decode step (n = 1).
// Per layer: norm1; q, k, v; their rows stored in the cache at their positions (for every
// cache type, attention then reads all rows back from the cache, so a query sees the stored
// values of its own call's keys too); attnOut; residual1; norm2; ffnOut; output, in the
// buffers above. Then finalNorm and logits, and cache.size += n. The caller guarantees
// cache.size + n <= capacity and buffers sized for n (scratch for at least n tokens).
// A decode step allocates nothing: everything it needs is in the cache, the buffers and the
// scratch (the runner counts allocations in decode calls). At most `threads` threads.
void decoder_forward(const Model& model, KvCache& cache, std::span<const int32_t> tokens, Logits logits,
                     const DecoderBuffers& buffers, int threads);
