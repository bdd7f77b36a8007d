// What the benches of stages 3, 4 and 5 share: how large "larger than the last-level cache" is,
// and running a trusted helper program (the yardstick, the generate program's bench mode)
// that prints one JSON object.
//
// Contract: LastLevelCache() is the largest data or unified cache sysfs lists for cpu0
// (/sys/devices/system/cpu/cpu0/cache/index*/), else sysconf(_SC_LEVEL3_CACHE_SIZE), else a
// fixed 32 MiB, with where the figure came from in words; for the workbook's own tests only,
// the environment variable WB_BENCH_LLC_BYTES (a byte count) takes its place.
// RunJsonProgram() runs argv (argv[0] a path) with this process's environment (or
// `environment`, whole, when given) and stderr (or none, with dropStderr), for at most
// timeoutSeconds (then kills it), and returns its exit status (128 + the signal when one
// ended it) and what it printed on stdout parsed as JSON (null when that is not JSON); an
// error, naming `what`, only when it cannot start or runs past the time. Mebibytes() writes
// a byte count as "12.5 MiB". A bench's --plot: CheckPlotWritable() refuses a path it cannot
// write before anything is measured (trying PATH.partial, then removing it), and WritePlot()
// writes the file whole or not at all (PATH.partial, then a rename); both errors are
// BadUsage, naming the option and the path. MachineJson() describes where a bench ran, for its
// --format json (so a table built from it can say machine and date): the CPU's model name and
// which of the vector extensions the kernels care about it has (from /proc/cpuinfo), the online
// CPUs, the compiler that built the bench, and the UTC date and time.
//
// Speed goals: a bench states the goals its stage's solution was written to (the issue that set
// them, in the lesson), each with the figure this run gave and whether it meets it. A goal is
// "at least `target`" of a figure shown with `unit` ("%", "x"). PrintGoals() writes them as a
// table under a heading; GoalsJson() as {"goal", "value", "target", "unit", "met"} objects.
//
// A figure's text: TextWidth() estimates how wide a line of text is drawn, 0.6 em a character
// (more than sans-serif fonts take on average, so a box built from it holds the text), and
// TextColourOn() is black or white, whichever contrasts more with a fill "#rrggbb" drawn at
// fillOpacity over white (WCAG 2's relative luminance). LayOutBarLabels() places the value
// labels of horizontal bars that start at one left edge and are drawn against one reference
// line (100%, 1x): each label goes after its bar, or inside its bar's right end, or just after
// the reference line, whichever is first to neither cross the line nor run past the right
// edge, and the range (the value at the right edge, at least leastRange, itself at least the
// reference) grows until every label placed after something fits. Widths in the figure's
// units: span is the bars' room, labelWidths[i] bar i's label, gap the space each side of a
// label.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/expected.h"
#include "runner/stages/call_timing.h"

namespace wb {

struct CacheSize {
  uint64_t bytes = 0;
  std::string source;     // where the size came from, in words
  bool setForTest = false;  // from WB_BENCH_LLC_BYTES
};

Expected<CacheSize> LastLevelCache();

// How much memory a pass must read to read memory rather than cache: twice the last-level
// cache, and at least kLeastMemoryPassBytes, because a virtual machine may not show every
// cache its CPUs use (two CPUs of one guest can sit on two core complexes, each with its own
// L3, while sysfs lists one shared by both). A size set for a test is taken as it is.
inline constexpr uint64_t kLeastMemoryPassBytes = uint64_t{512} << 20;
uint64_t MemoryPassBytes(const CacheSize& cache);

nlohmann::json MachineJson();

std::string Mebibytes(uint64_t bytes);
// "2.40 ms": seconds in the unit that suits them (s, ms or us).
std::string Duration(double seconds);
// "6.10 ms (6.01-6.52)": a timing's median, then its fastest and slowest, in the median's unit.
std::string TimeRange(const CallTiming& t);

struct SpeedGoal {
  std::string goal;  // "matmul qkv, T = 512, 1 thread: % of the FMA peak"
  double value = 0;
  double target = 0;  // met when value >= target
  std::string unit;   // "%" or "x"
  bool Met() const { return value >= target; }
};
// A goal's figure as the goals' table shows it: a percentage whole, a ratio with two decimals,
// and as many digits more as it takes not to read as the other side of the goal (1.6997 as
// "1.6997x", not "1.70x" beside "short").
std::string FigureBesideGoal(const SpeedGoal& g);
void PrintGoals(const std::string& heading, const std::vector<SpeedGoal>& goals);
nlohmann::json GoalsJson(const std::vector<SpeedGoal>& goals);

Status CheckPlotWritable(const std::string& path);
Status WritePlot(const std::string& path, const std::string& text);

double TextWidth(const std::string& text, double fontSize);
const char* TextColourOn(const std::string& fill, double fillOpacity = 1.0);

enum class BarLabelPlace { kAfterBar, kInsideBar, kAfterReference };
struct BarLabels {
  double range = 0;                   // the value at the bars' right edge
  std::vector<BarLabelPlace> places;  // one per bar
};
BarLabels LayOutBarLabels(const std::vector<double>& values, const std::vector<double>& labelWidths, double reference,
                          double leastRange, double span, double gap);

struct ProgramOutput {
  int exitStatus = 0;
  nlohmann::json json;  // null when stdout was not JSON
};
Expected<ProgramOutput> RunJsonProgram(std::vector<std::string> argv, const std::string& what, double timeoutSeconds,
                                        const std::vector<std::string>* environment = nullptr,
                                        bool dropStderr = false);

}  // namespace wb
