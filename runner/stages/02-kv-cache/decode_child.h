// Runs one call of a stage-2 case in a child: decoder_step over the call's tokens, with
// the student's cache as the earlier calls left it.
//
// Contract: each call gets a fresh shared region (decode_call.h: inputs read-only; the
// nine outputs, n rows each, poisoned and fenced; the two caches writable and fenced,
// holding `before`) and a fresh child, so nothing survives between calls but the cache, a
// crash belongs to the call that made it, and the runner sees exactly which cache rows a
// call changed. The result holds everything read back after the child ended, however it
// ended; an error only when the workbook itself failed (RunInChild).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "common/expected.h"
#include "decode_case.h"
#include "runner/isolation/child_process.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage02 {

struct CallRun {
  ChildOutcome outcome;
  std::array<std::vector<float>, ref::kCheckpointCount> buffers;  // the nine outputs
  CacheState cacheAfter;
  std::string ending;                    // DescribeEnding: "" when the call returned
  std::vector<std::string> canaryNotes;  // writes in front of a buffer
  std::string written;                   // which outputs were written, for a crash note
};

// callIndex is 0-based; the child's report carries it.
Expected<CallRun> RunCallInChild(const DecodeCase& data, const ref::DecodeCall& call, int callIndex,
                                 const CacheState& before, const StageContext& context);

}  // namespace wb::stage02
