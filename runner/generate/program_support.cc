#include "runner/generate/program_support.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <fmt/format.h>

namespace wb::generate {

int UsableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

Expected<CacheType> ParseCacheType(const std::string& name) {
  if (name == "f32") return CacheType::kF32;
  if (name == "f16") return CacheType::kF16;
  if (name == "int8") return CacheType::kInt8;
  return BadUsage(fmt::format("--cache is \"{}\"; it must be f32, f16 or int8", name));
}

uint64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

std::optional<uint64_t> HugePageBytes() {
  std::ifstream rollup("/proc/self/smaps_rollup");
  std::string line;
  constexpr std::string_view kField = "AnonHugePages:";
  while (std::getline(rollup, line)) {
    if (line.rfind(kField, 0) == 0) return std::strtoull(line.c_str() + kField.size(), nullptr, 10) * 1024;  // kB
  }
  return std::nullopt;
}

uint64_t ModelFileBytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return fs::file_size(path, ec);
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.path().extension() == ".safetensors") total += entry.file_size(ec);
  }
  return total;
}

std::string DecoderProblem(const GenerateSettings& s, const DecoderSession& session, int before, size_t tokens) {
  switch (session.problem()) {
    case ForwardProblem::kNotWritten:
      return fmt::format("{} wrote no logits: stage 5 is not implemented yet, or not far enough; "
                         "./workbook check 5 names the first checkpoint to write",
                         s.decoderName);
    case ForwardProblem::kCacheNotAdvanced:
      return fmt::format("{} left cache.size at {} after a call of {} tokens from position {}: decoder_forward must "
                         "advance it by the call's tokens (contracts/stage05_decoder.h)",
                         s.decoderName, session.size(), tokens, before);
    case ForwardProblem::kNotFinite:
      return fmt::format("{} wrote logits that are not finite (NaN or infinity) at position {}; "
                         "./workbook check 5 --model {} finds the first buffer that goes wrong",
                         s.decoderName, before + static_cast<int>(tokens) - 1, s.model);
    case ForwardProblem::kContextFull: return "the context is full";
    case ForwardProblem::kNone: break;
  }
  return "";
}

}  // namespace wb::generate
