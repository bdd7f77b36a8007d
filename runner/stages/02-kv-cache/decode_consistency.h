// The check that a token's output does not depend on how the sequence reached it: in a
// prefill, in a chunk, or one decode step at a time.
//
// Contract: the runner runs the case's whole sequence once more as a single call (n = all
// tokens, pos = 0, an empty cache) and compares each token's output from the case's calls
// with its output from that one call. `sameAsPrefill` passes when they agree within twice
// the output tolerance: each may be off from the reference by one. When they do not, the
// observation says which tokens differ, which side agrees with the reference, and the first
// of the one call's nine buffers that does not.
#pragma once

#include <span>

#include "runner/report/report.h"
#include "decode_case.h"
#include "decode_child.h"

namespace wb::stage02 {

inline constexpr const char* kSameAsPrefill = "sameAsPrefill";

CheckpointReport CheckSameAsPrefill(const DecodeCase& data, std::span<const float> steppedOutput,
                                    const CallRun& prefill, double points);

// The checkpoint when the one-call run could not be made or compared: all unwritten.
CheckpointReport SameAsPrefillNotReached(const DecodeCase& data, double points);

}  // namespace wb::stage02
