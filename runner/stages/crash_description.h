// Turns how a child ended into sentences: the signal, the buffer a fault landed in (and
// how far past its end), which buffers were written before it stopped.
#pragma once

#include <string>
#include <vector>

#include "../isolation/child_process.h"
#include "../isolation/shared_region.h"

namespace wb {

// One sentence for a child that did not return normally ("" when it did). `function` is
// the stage function's name.
std::string DescribeEnding(const ChildOutcome& outcome, const SharedRegion& region, const std::string& function,
                           double timeLimitSeconds, uint64_t memoryLimitBytes);

// A note per buffer whose canary in front was overwritten (a write before its start).
std::vector<std::string> DescribeCanaryDamage(const SharedRegion& region);

// "norm1 complete, q 1024 of 2048 elements written, k not written, ..." for the outputs.
std::string DescribeWritten(SharedRegion& region, const std::vector<std::string>& outputs);

}  // namespace wb
