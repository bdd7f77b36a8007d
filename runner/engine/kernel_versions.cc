#include "runner/engine/kernel_versions.h"

#include <fmt/format.h>

namespace wb {

Expected<KernelVersionInfo> DescribeKernelVersion(const std::string& name) {
  if (name == "portable") return KernelVersionInfo{true, ""};
#if defined(__x86_64__)
  // __builtin_cpu_supports takes each feature's name as a literal, so each version is spelt out.
  if (name == "avx2") {
    return KernelVersionInfo{__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), "AVX2 and FMA"};
  }
  if (name == "avx512vnni") {
    return KernelVersionInfo{__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
                                 __builtin_cpu_supports("avx512vnni"),
                             "AVX-512 F, BW, VL, VBMI and VNNI"};
  }
#else
  if (name == "avx2") return KernelVersionInfo{false, "an x86-64 CPU with AVX2 and FMA"};
  if (name == "avx512vnni") return KernelVersionInfo{false, "an x86-64 CPU with AVX-512 F, BW, VL, VBMI and VNNI"};
#endif
  return BadData(fmt::format("kernel version '{}' is none the runner knows (portable, avx2, avx512vnni)", name));
}

Expected<std::vector<KernelVersionRun>> RunKernelVersions(const std::vector<std::string>& names,
                                                         const CheckOptions& options, const WorkbookPaths& paths) {
  std::vector<KernelVersionRun> runs;
  for (const std::string& name : names) {
    auto info = DescribeKernelVersion(name);
    if (!info.ok()) return info.error();
    KernelVersionRun run{.name = name, .ran = info->runsHere, .passed = 0, .total = 0, .note = ""};
    if (!info->runsHere) {
      run.note = fmt::format("not run: this CPU lacks {}", info->needs);
      runs.push_back(std::move(run));
      continue;
    }
    CheckOptions version = options;
    version.kernelVersion = name;
    auto report = RunCheck(version, paths);
    if (!report.ok()) return report.error();
    run.total = static_cast<int>(report->cases.size());
    for (const CaseReport& c : report->cases) run.passed += c.status == CaseStatus::kPass ? 1 : 0;
    if (report->status == RunStatus::kCompileError) run.note = "did not compile";
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace wb
