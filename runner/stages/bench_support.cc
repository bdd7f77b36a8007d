#include "runner/stages/bench_support.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace wb {
// The runner is a unity build: the helpers live in a namespace of their own.
namespace bench_support {
namespace {

constexpr uint64_t kFallbackCacheBytes = uint64_t{32} << 20;
constexpr const char* kCacheSysfs = "/sys/devices/system/cpu/cpu0/cache";
constexpr const char* kCacheOverride = "WB_BENCH_LLC_BYTES";

// A sysfs cache size: "32768K", "1024K", "32M" (the kernel's cache_size_show prints K).
uint64_t ParseSysfsSize(const std::string& text) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return 0;
  switch (*end) {
    case 'K': return value << 10;
    case 'M': return value << 20;
    case 'G': return value << 30;
    default: return value;
  }
}

std::string FirstLine(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The largest-level data or unified cache sysfs lists for cpu0; 0 bytes when it lists none
// (a VM without the folder: this one's kernel reports no cache topology).
CacheSize SysfsLastLevelCache() {
  CacheSize best;
  int bestLevel = 0;
  std::error_code error;
  for (auto entry = std::filesystem::directory_iterator(kCacheSysfs, error);
       !error && entry != std::filesystem::directory_iterator(); entry.increment(error)) {
    const std::filesystem::path folder = entry->path();
    if (folder.filename().string().rfind("index", 0) != 0) continue;
    if (FirstLine(folder / "type") == "Instruction") continue;
    const int level = std::atoi(FirstLine(folder / "level").c_str());
    const uint64_t bytes = ParseSysfsSize(FirstLine(folder / "size"));
    if (level > bestLevel && bytes > 0) {
      bestLevel = level;
      best = {bytes, fmt::format("sysfs, {} (level {})", folder.string(), level)};
    }
  }
  return best;
}

}  // namespace
}  // namespace bench_support

uint64_t MemoryPassBytes(const CacheSize& cache) {
  return cache.setForTest ? 2 * cache.bytes : std::max(2 * cache.bytes, kLeastMemoryPassBytes);
}

nlohmann::json MachineJson() {
  std::string cpu = "unknown";
  std::vector<std::string> extensions;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool haveFlags = false;
  while (std::getline(cpuinfo, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && cpu == "unknown") cpu = value;
    if (key == "flags" && !haveFlags) {
      haveFlags = true;
      const std::string padded = " " + value + " ";
      // The extensions the workbook's kernels are written for (stages 3 and 4's lessons).
      for (const char* flag : {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni"}) {
        if (padded.find(fmt::format(" {} ", flag)) != std::string::npos) extensions.emplace_back(flag);
      }
    }
  }
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%MZ", &utc);
#if defined(__clang__)
  const std::string compiler = fmt::format("Clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  const std::string compiler = fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  const std::string compiler = "unknown";
#endif
  return {{"cpu", cpu},
          {"online_cpus", sysconf(_SC_NPROCESSORS_ONLN)},
          {"extensions", extensions},
          {"compiler", compiler},
          {"utc", when}};
}

Expected<CacheSize> LastLevelCache() {
  using namespace bench_support;
  if (const char* forced = std::getenv(kCacheOverride); forced != nullptr && *forced != '\0') {
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(forced, &end, 10);
    if (*end != '\0' || bytes == 0) return BadUsage(fmt::format("{}: '{}' is not a byte count", kCacheOverride, forced));
    return CacheSize{bytes, fmt::format("{} (set for a test)", kCacheOverride), true};
  }
  if (CacheSize sysfs = SysfsLastLevelCache(); sysfs.bytes > 0) return sysfs;
  if (const long level3 = sysconf(_SC_LEVEL3_CACHE_SIZE); level3 > 0) {
    return CacheSize{static_cast<uint64_t>(level3), "sysconf(_SC_LEVEL3_CACHE_SIZE), no sysfs cache folder"};
  }
  return CacheSize{kFallbackCacheBytes, "a fixed 32 MiB: neither sysfs nor sysconf reports a cache"};
}

std::string Mebibytes(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

std::string Duration(double seconds) {
  if (seconds >= 1.0) return fmt::format("{:.2f} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.1f} us", seconds * 1e6);
}

std::string TimeRange(const CallTiming& t) {
  const double unit = t.median >= 1.0 ? 1.0 : t.median >= 1e-3 ? 1e-3 : 1e-6;
  const char* name = unit == 1.0 ? "s" : unit == 1e-3 ? "ms" : "us";
  return fmt::format("{:.2f} {} ({:.2f}-{:.2f})", t.median / unit, name, t.fastest / unit, t.slowest / unit);
}

Status CheckPlotWritable(const std::string& path) {
  const std::string temporary = path + ".partial";
  if (!std::ofstream(temporary, std::ios::binary | std::ios::trunc)) {
    return BadUsage(fmt::format("--plot {}: cannot write there", path));
  }
  std::remove(temporary.c_str());
  return Status::Ok();
}

Status WritePlot(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out.write(text.data(), static_cast<std::streamsize>(text.size())) || !out.flush()) {
      std::remove(temporary.c_str());
      return BadUsage(fmt::format("--plot {}: cannot write the file", path));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return BadUsage(fmt::format("--plot {}: cannot write the file", path));
  }
  return Status::Ok();
}

double TextWidth(const std::string& text, double fontSize) {
  size_t characters = 0;
  for (char c : text) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // UTF-8: a lead byte
  return 0.6 * fontSize * static_cast<double>(characters);
}

const char* TextColourOn(const std::string& fill, double fillOpacity) {
  unsigned rgb = 0;
  if (fill.size() != 7 || std::sscanf(fill.c_str(), "#%6x", &rgb) != 1) return "#000";
  double luminance = 0;
  const double weights[] = {0.2126, 0.7152, 0.0722};
  for (int channel = 0; channel < 3; ++channel) {
    // The colour as drawn over the white background, then from sRGB to linear light.
    const double drawn = (fillOpacity * ((rgb >> (16 - 8 * channel)) & 0xFF) + (1 - fillOpacity) * 255) / 255;
    const double linear = drawn <= 0.04045 ? drawn / 12.92 : std::pow((drawn + 0.055) / 1.055, 2.4);
    luminance += weights[channel] * linear;
  }
  const double againstBlack = (luminance + 0.05) / 0.05, againstWhite = 1.05 / (luminance + 0.05);
  return againstBlack >= againstWhite ? "#000" : "#fff";
}

BarLabels LayOutBarLabels(const std::vector<double>& values, const std::vector<double>& labelWidths, double reference,
                          double leastRange, double span, double gap) {
  BarLabels out{leastRange, std::vector<BarLabelPlace>(values.size(), BarLabelPlace::kAfterBar)};
  // The range at which a label that starts a gap after `value` ends at the right edge.
  auto rangeToFit = [&](double value, double width) { return value * span / std::max(span - gap - width, 1.0); };
  // Each pass places every label at the present range and widens the range for any label that
  // runs past the edge. A wider range only shortens the bars, so a label only moves down the
  // list (after the bar, inside it, after the line), never back, and the passes end.
  for (;;) {
    double needed = out.range;
    const double line = reference / out.range * span;
    for (size_t i = 0; i < values.size(); ++i) {
      const double end = values[i] / out.range * span, width = labelWidths[i];
      BarLabelPlace& place = out.places[i];
      if (values[i] >= reference || end + gap + width + gap <= line) {
        place = BarLabelPlace::kAfterBar;  // past the line already, or ends before it
        needed = std::max(needed, rangeToFit(values[i], width));
      } else if (gap + width + gap <= end) {
        place = BarLabelPlace::kInsideBar;  // the bar ends before the line, so its inside does too
      } else {
        place = BarLabelPlace::kAfterReference;
        needed = std::max(needed, rangeToFit(reference, width));
      }
    }
    if (needed <= out.range) return out;
    out.range = needed;
  }
}

Expected<ProgramOutput> RunJsonProgram(std::vector<std::string> argv, const std::string& what, double timeoutSeconds,
                                        const std::vector<std::string>* environment, bool dropStderr) {
  std::vector<char*> pointers;
  for (std::string& a : argv) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  std::vector<std::string> variables = environment != nullptr ? *environment : std::vector<std::string>();
  std::vector<char*> variablePointers;
  for (std::string& v : variables) variablePointers.push_back(v.data());
  variablePointers.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return SystemError(fmt::format("cannot start {}: no pipe", what));
  std::fflush(nullptr);  // nothing buffered here is printed twice by the child's copy
  const pid_t pid = fork();
  if (pid < 0) return SystemError(fmt::format("cannot start {}: fork failed", what));
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (dropStderr) {
      const int null = open("/dev/null", O_WRONLY);
      if (null >= 0) dup2(null, STDERR_FILENO);
    }
    if (environment != nullptr) {
      execve(pointers[0], pointers.data(), variablePointers.data());
    } else {
      execv(pointers[0], pointers.data());
    }
    _exit(127);
  }
  close(out[1]);
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  bool timedOut = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    pollfd ready{.fd = out[0], .events = POLLIN, .revents = 0};
    if (poll(&ready, 1, static_cast<int>(std::min<long long>(left.count(), 1000))) <= 0) continue;
    char buffer[4096];
    const ssize_t n = read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  if (timedOut) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timedOut) return InternalError(fmt::format("{} ran past {:.0f} s", what, timeoutSeconds));
  ProgramOutput result;
  result.exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (result.json.is_discarded()) result.json = nullptr;
  return result;
}

namespace {
std::string GoalFigure(double value, const std::string& unit, int extraDigits = 0) {
  return unit == "%" ? fmt::format("{:.{}f} %", value, extraDigits) : fmt::format("{:.{}f}{}", value, 2 + extraDigits, unit);
}
}  // namespace

std::string FigureBesideGoal(const SpeedGoal& g) {
  std::string shown;
  for (int extra = 0; extra <= 4; ++extra) {
    shown = GoalFigure(g.value, g.unit, extra);
    if ((std::strtod(shown.c_str(), nullptr) >= g.target) == g.Met()) break;
  }
  return shown;
}

void PrintGoals(const std::string& heading, const std::vector<SpeedGoal>& goals) {
  if (goals.empty()) return;
  size_t width = 4;
  for (const SpeedGoal& g : goals) width = std::max(width, g.goal.size());
  std::printf("\n%s\n", heading.c_str());
  std::printf("  %-*s %10s %10s  %s\n", static_cast<int>(width), "goal", "this run", "at least", "");
  for (const SpeedGoal& g : goals) {
    std::printf("  %-*s %10s %10s  %s\n", static_cast<int>(width), g.goal.c_str(), FigureBesideGoal(g).c_str(),
                GoalFigure(g.target, g.unit).c_str(), g.Met() ? "met" : "short");
  }
  std::fflush(stdout);
}

nlohmann::json GoalsJson(const std::vector<SpeedGoal>& goals) {
  nlohmann::json out = nlohmann::json::array();
  for (const SpeedGoal& g : goals) {
    out.push_back({{"goal", g.goal}, {"value", g.value}, {"target", g.target}, {"unit", g.unit}, {"met", g.Met()}});
  }
  return out;
}

}  // namespace wb
