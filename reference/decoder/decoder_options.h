// What a reference decoder run may change: the KV cache it emulates, and the misconception
// switches the runner flips to name a student's mistake.
//
// Contract: a default DecoderOptions is the model the workbook teaches, and
// RunDecoderTrace(config, weights, tokens, positions, DecoderOptions{}) is bit for bit
// RunDecoderTrace(config, weights, tokens, positions).
//
// cache: attention reads every key and value row (every position, the call's own included)
// as the stage-5 cache stores it and reads it back (cache_rows.h): double -> float ->
// EncodeCacheRow -> DecodeCacheRow -> double. kF32 is the exception: the reference keeps its
// double rows (a float store is rounding noise the tolerances cover), so the default options
// give the float64 trace. The q, k and v checkpoints stay unrounded; only attnOut onward sees
// the stored rows. group 0 means the contract's Int8Group(headDim); another value emulates a
// mistaken group (one that straddles heads, say).
//
// Each switch, when set, makes the reference compute the mistaken variant:
//   qkNormAfterRope        RoPE first, then the QK-norm (q, k change on QK-norm families)
//   localBaseOnAllLayers   global layers use the local RoPE base too (configs with a local
//                          base: gemma3)
//   routerSoftmaxOverTopK  the top-k router logits first, softmax over those only
//                          (expert_routing.h; indistinguishable when the config renormalises)
//   tiesToHigherId         of equal router probabilities the higher expert id first
//   normWeightPlusOneAgain every RMSNorm weight w (input, QK, sandwich, FFN, final) applied
//                          as float(w + 1): Gemma's 1 + w added to a weight that holds it
//   embeddingScaleMissing  the embeddings not scaled by √H (configs with kSqrtHidden)
//   windowOffByOne         a sliding layer's query at p sees p - W <= j <= p: one key more
//   ropeNotApplied         q and k left unrotated (every family)
//   qkNormSkipped          q and k rotated without their QK-norm (QK-norm families)
//   windowOnAllLayers      the sliding window on every layer, global ones too (configs with
//                          both kinds: gemma3)
// Mistakes that are a different config or weights are made by the caller on a copy instead:
// RoPE pairing (config.ropePairing), renormalisation (config.renormaliseTopK), a tied or
// untied head (config.tiedHead with BindWeights, or weights.head = weights.embedding), the
// sliding window's size (config.slidingWindow) and the like.
#pragma once

#include "reference/decoder/cache_rows.h"

namespace ref {

struct CacheEmulation {
  CacheRowType type = CacheRowType::kF32;
  int group = 0;  // kInt8's group; 0: Int8Group(config.headDim)
};

struct DecoderOptions {
  CacheEmulation cache;
  // The products with a Q8_0 or Q4_0 matrix read their input rows quantized to Q8_0, as
  // llama.cpp's kernels and the stage-4 kernels stage 5 is given do (streamed_ops.h,
  // ProductInputs); off, the reference multiplies the exact rows. Not a misconception: what
  // the runner compares a decoder on such a model with.
  bool quantizeProductInputs = false;
  bool qkNormAfterRope = false;
  bool localBaseOnAllLayers = false;
  bool routerSoftmaxOverTopK = false;
  bool tiesToHigherId = false;
  bool normWeightPlusOneAgain = false;
  bool embeddingScaleMissing = false;
  bool windowOffByOne = false;
  bool ropeNotApplied = false;
  bool qkNormSkipped = false;
  bool windowOnAllLayers = false;
};

}  // namespace ref
