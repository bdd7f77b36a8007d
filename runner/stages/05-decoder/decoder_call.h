// Stage 5's call layout (runner/isolation/call_layout.h), shared by the driver and the child's
// harness: one child runs every call of a case (a prefill, then decode steps) in order, over
// one KV cache and one set of scratch, as a program using the decoder would, so a decode step
// that allocates is seen and what the prefill reserved is reused.
//
// Every checkpoint buffer holds all calls and all layers: call c (n_c rows, R_c rows before
// it in all) layer l starts at element (R_c · L + l · n_c) · width, where L is the model's
// layer count (1 for the per-call buffers embedding, finalNorm and logits). After each call
// the harness copies the arena into that call's slice of kArenaAfter, and into kAllocations
// (two words a call) the number of allocations the call made and where the first came from
// (harness::AllocationSite), so the runner sees what each call did to the cache and to the
// heap. A call with Logits::kLast has one row of finalNorm and logits, the first of its rows.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "runner/isolation/call_layout.h"

namespace wb::stage05 {

// The most calls one case may make (a prefill and decode steps).
constexpr int kMaxCalls = 256;

struct DecoderCall {
  static constexpr uint32_t kId = LayoutId("05-decoder decoder_forward v1");
  enum Buffer : uint32_t {
    // Inputs, read-only: the model's path (bytes, no terminator), every token of the case
    // (int32), the tokens of each call (int32, `calls` entries), the page table (int32).
    kModelPath, kTokens, kCallTokens, kPageTable,
    // The cache's arena (bytes), as the calls leave it, and its copy after each call.
    kArena, kArenaAfter,
    // Allocations each call made (uint64, `calls` entries), written by the harness.
    kAllocations,
    // The scratch (floats): ScratchFloats(config, the largest call).
    kScratch,
    // The checkpoints, in the order a call computes them.
    kEmbedding, kNorm1, kQ, kK, kV, kAttnOut, kResidual1, kNorm2, kExpertIds, kExpertWeights, kFfnOut, kOutput,
    kFinalNorm, kLogits,
    kBufferCount
  };
  static constexpr std::array<const char*, kBufferCount> kNames = {
      "modelPath", "tokens",    "callTokens", "pageTable", "arena",     "arenaAfter",    "allocations",
      "scratch",   "embedding", "norm1",      "q",         "k",         "v",             "attnOut",
      "residual1", "norm2",     "expertIds",  "expertWeights", "ffnOut", "output",       "finalNorm",
      "logits"};
  static constexpr uint32_t kFirstOutput = kArena;
  struct Params {
    int32_t calls;
    int32_t cacheType;  // the contract's CacheType
    int32_t pageSize;
    int32_t pages;
    int32_t threads;
    int32_t allLogits;  // 1: Logits::kAll in every call, else kLast
    int32_t pathBytes;  // of kModelPath
  };
};

}  // namespace wb::stage05
