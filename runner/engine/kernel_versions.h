// The instruction-set versions a solution's kernels may come in (data/stages.json's
// kernel_versions): "portable" (GCC vector extensions, any CPU: the default and the oracle),
// "avx2" (AVX2 and FMA) and "avx512vnni" (AVX-512 F, BW, VL, VBMI and VNNI). A harness reads
// the one to run from WB_KERNEL_VERSION in its environment (ChildLimits::kernelVersion); the
// solution runs the fastest its CPU supports when it is unset.
//
// Contract: DescribeKernelVersion() says whether this CPU runs the named version and, in
// words, what it needs; an unknown name is BadData naming it. RunKernelVersions() checks the
// visible suite of `options` once per version of `names` that this CPU runs, with
// options.kernelVersion set to it, and reports each (a version it does not run, with why).
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "runner/engine/check.h"
#include "runner/engine/paths.h"
#include "runner/report/report.h"

namespace wb {

struct KernelVersionInfo {
  bool runsHere = false;
  std::string needs;  // "AVX2 and FMA"; "" for portable
};
Expected<KernelVersionInfo> DescribeKernelVersion(const std::string& name);

Expected<std::vector<KernelVersionRun>> RunKernelVersions(const std::vector<std::string>& names,
                                                         const CheckOptions& options, const WorkbookPaths& paths);

}  // namespace wb
