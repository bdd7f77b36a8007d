// Stage 3's bench report: the figures one run measured (bench_driver.cc), as the table, the
// JSON object (`--format json`, whose fields graders and the docs' figure checks read) and the
// SVG roofline (`--plot`), with the goals the solution was written to beside them.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/stages/03-fused/bench_timing.h"
#include "runner/stages/bench_support.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage03 {

// One kernel at one T and thread count: the student's time, and what it is compared with.
struct Row {
  int T = 0;
  int threads = 0;
  std::string kernel;  // "matmul qkv", ..., "fused_block"
  double flops = 0;
  double bytes = 0;
  Timing student;
  double stageOneSeconds = 0;  // 0: not measured
  double openBlasSeconds = 0;
  double Gflops() const { return flops / student.median / 1e9; }
};

struct Machine {
  std::array<double, 2> peak{};       // GFLOP/s, 1 and 2 threads
  std::array<double, 2> bandwidth{};  // GB/s
  uint64_t probeBytes = 0;            // the buffer the bandwidth was read over
  CacheSize cache;                    // the last-level cache, which sizes the probe (MemoryPassBytes)
  std::string coreType;               // the OPENBLAS_CORETYPE used ("" its own choice)
  std::string coreName;               // openblas_get_corename()
  std::string config;                 // openblas_get_config()
  std::vector<std::pair<std::string, double>> candidates;  // core type -> GFLOP/s of the sgemm
};

struct VersionRow {
  int version = 0;
  std::string name;
  bool valid = false;
  std::string verdict;  // the check's result in words
  std::vector<std::pair<int, Timing>> qkv;  // T -> the qkv matmul on one thread
};

// The FLOPs of a matmul at T (2 per multiply-add) and the bytes it must at least move (x in,
// W once, y out).
inline double MatmulFlops(int T, const BenchShape& shape) { return 2.0 * T * shape.out * shape.in; }
inline double MatmulBytes(int T, const BenchShape& shape) {
  return 4.0 * (double(T) * shape.in + double(shape.out) * shape.in + double(T) * shape.out);
}

// The probe's FMA peak for a thread count (2 for any more), and the roof a figure is held
// against (BeyondRoofText): the best peak the probe saw on any thread count.
inline double PeakFor(const Machine& m, int threads) { return m.peak[std::min(threads, 2) - 1]; }
inline double Roof(const Machine& m) { return std::max(m.peak[0], m.peak[1]); }

void PrintBenchText(const Machine& m, const std::vector<Row>& rows, const std::vector<VersionRow>& versions,
                    const BenchOptions& o);
nlohmann::json BenchJson(const Machine& m, const std::vector<Row>& rows, const std::vector<VersionRow>& versions,
                         const BenchOptions& o);
std::string RooflineSvg(const Machine& m, const std::vector<Row>& rows, const BenchOptions& o);

}  // namespace wb::stage03
