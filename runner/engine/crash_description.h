// Turns how a child ended into sentences: the signal, the buffer a fault landed in (and
// how far past its end), which buffers were written before it stopped.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "../isolation/child_process.h"
#include "case_verdict.h"
#include "../isolation/shared_region.h"

namespace wb {

// One sentence for a child that did not return normally ("" when it did). `function` is
// the stage function's name; memoryLimitBytes is what the student's code may allocate.
std::string DescribeEnding(const ChildOutcome& outcome, const SharedRegion& region, const std::string& function,
                           double timeLimitSeconds, uint64_t memoryLimitBytes);

// One sentence when the child printed more than the limit ("" otherwise).
std::string DescribeOutputFlood(const ChildOutcome& outcome, uint64_t limitBytes);

// A note per buffer whose canary in front was overwritten (a write before its start).
std::vector<std::string> DescribeCanaryDamage(const SharedRegion& region);

// "norm1 complete, q 1024 of 2048 elements written, k not written, ..." for the outputs
// (slots of the region, in the order given).
std::string DescribeWritten(SharedRegion& region, std::span<const uint32_t> outputs);

// What a case of one child learns from how it ended, for Conclude (case_verdict.h): the
// stop (with the sentence above and what `outputs` held when it came), the canary damage,
// an output flood and leftover processes. `allUnwritten` is the checkpoint engine's.
CaseFindings FindingsOfChild(const ChildOutcome& outcome, SharedRegion& region, const std::string& function,
                             const ChildLimits& limits, std::span<const uint32_t> outputs, bool allUnwritten);

}  // namespace wb
