// Checks one call of a stage-2 case: its twelve checkpoints (reference/decode/
// call_checkpoints.h), named as the stage's row says ("step{call}.{checkpoint}").
//
// Contract: the call's checkpoints are described to the checkpoint engine
// (runner/engine/checkpoint_engine.h): the chain is the whole-sequence reference's rows of
// this call, the local step runs on the student's own upstream buffers (attention on the
// student's cache), and a failing buffer is diagnosed with the stage-2 catalogue first,
// then stage 1's for the block's buffers. cacheOtherRows is exact: every cache row outside the call's rows must hold
// the same bits after the call as before it. Element positions are absolute: "token 6" is
// the token at position 6, whichever call it came in.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "reference/decode/call_checkpoints.h"
#include "runner/engine/checkpoint_engine.h"
#include "runner/report/report.h"
#include "runner/stages/stage_table.h"
#include "decode_case.h"
#include "decode_child.h"

namespace wb::stage02 {

struct CallCheckInput {
  const DecodeCase* data = nullptr;
  const StageInfo* stage = nullptr;  // names the checkpoints (reported_as) and the lesson
  ref::DecodeCall call;
  int number = 0;  // 1-based
  const CallRun* run = nullptr;
  const CacheState* before = nullptr;
  double points = 1.0;     // per checkpoint
};

// The twelve checkpoints of each call that ran, through the checkpoint engine, one result
// per call. The calls are checked together because a misconception is named at a call only
// when every other call of the case agrees with it: in a call where the mistaken recipe
// predicts what the taught one does, the student's buffer must match that too. So RoPE left
// out is told from RoPE with row t by the prefill, where row t is not row 0.
//
// The stage's dependency graph lives here too (each report's computedFrom): a call's nine
// buffers as in stage 1 (reference/block/block.h), kCache from k, vCache from v, attnOut
// from q and the cache, the rows of this call and of every earlier one (kCache, vCache and
// cacheOtherRows of calls 1 .. S).
std::vector<ChainResult> CheckCalls(std::span<const CallCheckInput> calls);

// The checkpoints of a call that never ran (a call after one that crashed): each one
// entirely unwritten, so a report keeps the same checkpoints whatever happened.
std::vector<CheckpointReport> CallNotReached(const DecodeCase& data, const StageInfo& stage, const ref::DecodeCall& call,
                                         int number, double points);

}  // namespace wb::stage02
