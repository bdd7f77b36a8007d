// Checks one call of a stage-2 case: its twelve checkpoints (reference/decode/
// call_checkpoints.h), named "step{s}.{name}" with s counted from 1.
//
// Contract: like stage 1's, each checkpoint is compared with the reference chain (the
// whole-sequence reference's rows of this call); a failing one is also compared with the
// reference step applied to the student's own upstream buffers (the local check), then
// diagnosed: the stage-2 catalogue first, then stage 1's for the block's buffers, else an
// observation. cacheOtherRows is exact: every cache row outside the call's rows must hold
// the same bits after the call as before it. Element positions are absolute: "token 6" is
// the token at position 6, whichever call it came in.
#pragma once

#include <string>
#include <vector>

#include "../../reference/decode/call_checkpoints.h"
#include "../report/report.h"
#include "decode_case.h"
#include "decode_child.h"

namespace wb {

struct CallCheckInput {
  const DecodeCase* data = nullptr;
  ref::DecodeCall call;
  int number = 0;  // 1-based
  const CallRun* run = nullptr;
  const CacheState* before = nullptr;
  std::string lessonPath;  // stage 2's lesson, for the stage-2 misconceptions
  double points = 1.0;     // per checkpoint
};

struct CallChecks {
  std::vector<CheckpointReport> checkpoints;
  bool allUnwritten = true;  // not one element of its nine outputs or its cache rows written
};

CallChecks CheckCall(const CallCheckInput& input);

// The checkpoints of a call that never ran (a call after one that crashed): each one
// entirely unwritten, so a report keeps the same checkpoints whatever happened.
std::vector<CheckpointReport> NotReached(const DecodeCase& data, const ref::DecodeCall& call, int number,
                                         double points);

// "step2.attnOut"
std::string CallCheckpointLabel(int number, ref::CallCheckpoint checkpoint);

}  // namespace wb
