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

// The twelve checkpoints of the call, through the checkpoint engine.
ChainResult CheckCall(const CallCheckInput& input);

// The checkpoints of a call that never ran (a call after one that crashed): each one
// entirely unwritten, so a report keeps the same checkpoints whatever happened.
std::vector<CheckpointReport> CallNotReached(const DecodeCase& data, const StageInfo& stage, const ref::DecodeCall& call,
                                         int number, double points);

}  // namespace wb::stage02
