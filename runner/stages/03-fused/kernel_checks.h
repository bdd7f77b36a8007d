// Stage 3's kernel cases: one kernel of the contract on its own, at a shape chosen to find
// the mistakes fast kernels make (tails of tiles, threads, accumulate).
//
// Contract: RunKernelCase generates the case's inputs from its seed, runs the kernel twice
// in one child on the same inputs and starting contents, checks the first run against the
// float64 reference as one checkpoint named after the kernel, and fails that checkpoint when
// the two runs differ in any bit (a race: the result depends on how the threads met),
// saying where and how many. A wrong buffer is named as one of the kernel mistakes below
// when it matches one, by misconception.h's rule.
#pragma once

#include <span>
#include <string_view>

#include "runner/cases/case_file.h"
#include "runner/report/report.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage03 {

// The ids of the kernel mistakes the runner can name (for the course self-check).
std::span<const std::string_view> KernelMisconceptionIds();

Expected<CaseReport> RunKernelCase(const CaseSpec& spec, const StageContext& context);

}  // namespace wb::stage03
