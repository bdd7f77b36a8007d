// Stage 4's bench report: the figures one run measured (bench_driver.cc), as the table, the
// JSON object (`--format json`, whose fields graders and the docs' figure checks read) and the
// SVG of the decode kernels' share of the read bandwidth (`--plot`), with the goals the
// solution was written to beside them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/stages/04-quant/bench_call.h"
#include "runner/stages/04-quant/quant_weights.h"
#include "runner/stages/03-fused/bench_timing.h"
#include "runner/stages/bench_support.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage04::quant_bench {

using stage03::Timing;

inline constexpr std::array<int, 2> kThreadCounts = {1, 2};

// The sizes the cache decides: the probe's buffer (MemoryPassBytes) and how many copies of each
// decode matrix make at least that much (at least one copy, which then is that large by itself).
struct Plan {
  CacheSize cache;
  uint64_t probeBytes = 0;
  int q8Copies = 1, q4Copies = 1, f32Copies = 1;
};

inline uint64_t DecodeBytes(Weight type) { return uint64_t{kDecodeRows} * (kDecodeCols / 32) * BlockBytes(type); }
inline constexpr uint64_t kDecodeFloatBytes = uint64_t{kDecodeRows} * kDecodeCols * sizeof(float);

struct Figures {
  Plan plan;
  uint64_t probeBytes = 0;  // as the yardstick rounded it
  // The probe's buffer is shared memory, as the bench region that holds the kernels' weights
  // is (a memfd): of it, this many bytes on huge pages.
  uint64_t probeHugeBytes = 0;
  // The probe just before and just after the kernels ran at each thread count: a shared
  // machine's bandwidth drifts within a run, so the kernels are compared with what it gave
  // around them (the mean of the two), not with a figure from a minute earlier.
  std::array<Timing, 2> probe{};       // before
  std::array<Timing, 2> probeAfter{};  // after
  std::array<Timing, 2> floatDecode{};
  std::array<std::array<Timing, kQuantMeasurementCount>, 2> child{};  // per thread count
  // --solutions: the solution's kernel versions (kernel_versions in data/stages.json), each
  // validated on the visible suite and then timed at T = 1, on 1 and 2 threads.
  struct Version {
    std::string name;
    bool ran = false;
    std::string note;  // why it was not run or not timed
    std::array<std::array<Timing, 2>, 2> decode{};  // [thread count][Q8_0, Q4_0]
  };
  std::vector<Version> versions;

  double BeforeGbs(int t) const { return static_cast<double>(probeBytes) / probe[t].median / 1e9; }
  double AfterGbs(int t) const { return static_cast<double>(probeBytes) / probeAfter[t].median / 1e9; }
  double ProbeGbs(int t) const { return (BeforeGbs(t) + AfterGbs(t)) / 2; }
};

// A decode kernel's row: the same logical matrix in three storage formats.
struct DecodeKernel {
  const char* label;  // in the table and the figure
  const char* name;   // the function timed
  const char* type;
  uint64_t matrixBytes;
  int copies;
  std::array<Timing, 2> time;
};

// The decode kernels' rows (Q8_0, Q4_0, stage 3's float matmul), their read rate in GB/s, and a
// thread count in words.
std::vector<DecodeKernel> DecodeKernels(const Figures& f);
double Gbs(const DecodeKernel& k, int t);
std::string ThreadsText(int t);

void PrintBenchText(const Figures& f, const BenchOptions& o);
nlohmann::json BenchJson(const Figures& f, const BenchOptions& o);
std::string BandwidthSvg(const Figures& f, const BenchOptions& o);

}  // namespace wb::stage04::quant_bench
