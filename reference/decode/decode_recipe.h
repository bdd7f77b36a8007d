// The switches of stage 2: how a decoder step uses its KV cache.
//
// Contract: as in block_recipe.h, the default value of every switch is what the workbook
// teaches, and every other value is a mistake a student can make, which the runner
// evaluates to recognise it (runner/diagnose/decode_misconceptions.cc) and the tests flip
// to prove the checkpoints tell them apart. The block's own switches (BlockRecipe) still
// apply to everything a step shares with stage 1.
#pragma once

namespace ref {

// What the cache's key rows hold.
enum class CachedKeys {
  kAfterRope,   // the rotated keys: the `k` buffer, row for row
  kBeforeRope,  // the keys as projected, cached before the rotation
};

// Which row of the RoPE tables token t of a call at `pos` is rotated with, if any.
enum class RopePosition {
  kAbsolute,    // pos + t: its position in the sequence
  kWithinCall,  // t: its place in this call, as if every call started at position 0
  kNone,        // no row: q and k are not rotated at all (the block's RopeTargets::kNone)
};

// Which cache rows the token at position p attends to.
enum class AttentionReach {
  kOwnPosition,  // rows 0 .. p
  kWholeCall,    // rows 0 .. pos + n - 1: in a prefill, earlier tokens see later ones
};

// What an online softmax multiplies by exp(m_old - m_new) when its running maximum grows.
enum class OnlineRescale {
  kBoth,            // the normaliser and the accumulator: the correct one-pass softmax
  kNormaliserOnly,  // the accumulator keeps terms weighted for an older maximum
  kNeither,         // both sums keep terms weighted for older maxima
};

// Which cache row token t of a call at `pos` is written to.
enum class CacheRow {
  kAbsolute,    // pos + t
  kWithinCall,  // t: every call overwrites the first rows
};

struct DecodeRecipe {
  CachedKeys cachedKeys = CachedKeys::kAfterRope;
  RopePosition ropePosition = RopePosition::kAbsolute;
  AttentionReach reach = AttentionReach::kOwnPosition;
  OnlineRescale rescale = OnlineRescale::kBoth;
  CacheRow cacheRow = CacheRow::kAbsolute;
};

}  // namespace ref
