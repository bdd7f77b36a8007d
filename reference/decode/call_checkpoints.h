// The checkpoints of one decoder_step call, in dependency order.
//
// Contract: the block's nine buffers keep stage 1's names and order; the cache write sits
// where it happens, after k and v and before attention reads it. First the rows the call
// must leave alone (cacheOtherRows: every row outside pos .. pos + n - 1 of both caches,
// bit for bit what it was before the call), then the rows it writes (kCache and vCache:
// rows pos .. pos + n - 1, the call's keys after RoPE and its values).
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "../block/block.h"

namespace ref {

enum class CallCheckpoint {
  kNorm1, kQ, kK, kV, kCacheOtherRows, kKCache, kVCache, kAttnOut, kResidual1, kNorm2, kFfnOut, kOutput
};
constexpr int kCallCheckpointCount = 12;
constexpr std::array<CallCheckpoint, kCallCheckpointCount> kCallCheckpointOrder = {
    CallCheckpoint::kNorm1,   CallCheckpoint::kQ,         CallCheckpoint::kK,
    CallCheckpoint::kV,       CallCheckpoint::kCacheOtherRows, CallCheckpoint::kKCache,
    CallCheckpoint::kVCache,  CallCheckpoint::kAttnOut,   CallCheckpoint::kResidual1,
    CallCheckpoint::kNorm2,   CallCheckpoint::kFfnOut,    CallCheckpoint::kOutput};

constexpr int Index(CallCheckpoint c) { return static_cast<int>(c); }

// The block checkpoint a call checkpoint is, if it is one of the nine buffers.
inline std::optional<Checkpoint> BlockCheckpointOf(CallCheckpoint c) {
  switch (c) {
    case CallCheckpoint::kNorm1: return Checkpoint::kNorm1;
    case CallCheckpoint::kQ: return Checkpoint::kQ;
    case CallCheckpoint::kK: return Checkpoint::kK;
    case CallCheckpoint::kV: return Checkpoint::kV;
    case CallCheckpoint::kAttnOut: return Checkpoint::kAttnOut;
    case CallCheckpoint::kResidual1: return Checkpoint::kResidual1;
    case CallCheckpoint::kNorm2: return Checkpoint::kNorm2;
    case CallCheckpoint::kFfnOut: return Checkpoint::kFfnOut;
    case CallCheckpoint::kOutput: return Checkpoint::kOutput;
    default: return std::nullopt;
  }
}

inline std::string_view CallCheckpointName(CallCheckpoint c) {
  switch (c) {
    case CallCheckpoint::kCacheOtherRows: return "cacheOtherRows";
    case CallCheckpoint::kKCache: return "kCache";
    case CallCheckpoint::kVCache: return "vCache";
    default: return CheckpointName(*BlockCheckpointOf(c));
  }
}

}  // namespace ref
