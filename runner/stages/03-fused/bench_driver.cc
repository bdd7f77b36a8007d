#include "bench_driver.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_call.h"
#include "reference/block/block.h"
#include "reference/gen/block_data.h"
#include "runner/compare/block_tolerances.h"
#include "runner/compare/compare.h"
#include "runner/engine/check.h"
#include "runner/isolation/shared_region.h"
#include "runner/stages/bench_engine.h"
#include "runner/stages/bench_figure.h"
#include "runner/stages/bench_support.h"
#include "runner/stages/timed_inputs.h"
#include "runner/stages/01-block/block_call.h"
#include "runner/stages/03-fused/stage03_paths.h"

namespace wb::stage03 {
namespace {

using nlohmann::json;

constexpr int kThreadCounts[] = {1, 2};
constexpr double kDefaultBudget = 0.25;
constexpr int kStageOneRuns = 3;
// OpenBLAS's names of x86 core types (OPENBLAS_CORETYPE), newest first; "" leaves the choice
// to OpenBLAS. A type the CPU cannot run stops the yardstick, and is skipped.
const char* const kCoreTypes[] = {"", "Cooperlake", "SkylakeX", "Zen", "Haswell", "Sandybridge", "Prescott"};

// The block's sizes, from the reference's shape (the contract's).
struct Sizes {
  int D, KV, QKV, F, heads, headDim;
  size_t packed;
};
Sizes BlockSizes() {
  const ref::BlockShape s = ref::Stage1Shape();
  return {s.model, s.kvWidth(), s.model + 2 * s.kvWidth(), s.ffn, s.qHeads, s.headDim, ref::PackedFloats(s)};
}

// The bytes a block at T must at least move: the weights once, x in, and each buffer the
// contract makes it write.
double BlockBytes(int T) {
  const Sizes s = BlockSizes();
  return 4.0 * (double(s.packed) + double(T) * (s.D + 5.0 * s.D + s.QKV + s.F));
}
double MatmulFlops(int T, const BenchShape& shape) { return 2.0 * T * shape.out * shape.in; }
double MatmulBytes(int T, const BenchShape& shape) {
  return 4.0 * (double(T) * shape.in + double(shape.out) * shape.in + double(T) * shape.out);
}

// --- the yardstick: trusted, started outside the sandbox -----------------------------------
struct YardstickRun {
  bool ok = false;  // exited 0 and printed one JSON object
  json result;
};

// Runs the yardstick with OPENBLAS_CORETYPE=coreType ("" leaves it unset), for at most
// timeoutSeconds; its stdout is the JSON, its stderr is dropped (OpenBLAS's own notes).
Expected<YardstickRun> RunYardstick(const std::vector<std::string>& args, const std::string& coreType,
                                    double timeoutSeconds) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).rfind("OPENBLAS_CORETYPE=", 0) != 0) env.emplace_back(*e);
  }
  if (!coreType.empty()) env.push_back("OPENBLAS_CORETYPE=" + coreType);
  // The OpenBLAS block mixes OpenBLAS's own threads (Debian's default build) with OpenMP's,
  // around the attention: left to spin after their work, each pool's idle threads hold the
  // cores the other needs, and the block runs many times slower than its parts. Idle threads
  // of both sleep at once here, so the yardstick is OpenBLAS at its best, not a crippled one.
  env.push_back("OPENBLAS_THREAD_TIMEOUT=4");
  env.push_back("OMP_WAIT_POLICY=PASSIVE");
  std::vector<std::string> argv = {WB_STAGE03_YARDSTICK};
  argv.insert(argv.end(), args.begin(), args.end());
  auto ran = RunJsonProgram(argv, fmt::format("the bench's yardstick (stage03-yardstick {})", args.at(0)),
                            timeoutSeconds, &env, /*dropStderr=*/true);
  if (!ran.ok()) return ran.error();
  YardstickRun run;
  run.ok = ran->exitStatus == 0 && ran->json.is_object();
  if (run.ok) run.result = std::move(ran->json);
  return run;
}

// --- the student's bench child, timed from outside (runner/stages/bench_engine.h) ----------
struct ChildTimings {
  std::array<Timing, kBenchMeasurements> timings{};
  std::string failure;  // why the child's figures are not used, "" when they are
};

// Timed calls' matmul outputs, checked at 64 elements drawn at random, each of a kept call drawn
// at random, against the same dot product in double on that call's inputs (made again from the
// batch's seed). A float dot product of `in` terms is within in * 2^-24 of the sum of |x w|
// (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., section 3.1); 1e-4 of it
// (above 1408 * 2^-24 = 8.4e-5) allows any order of the sums.
std::string CheckMatmulCalls(const OutputSlotRing& slots, uint64_t seed, const float* W, int T,
                             const BenchShape& shape) {
  constexpr int kSamples = 64;
  std::vector<float> x(static_cast<size_t>(shape.in));
  for (int k = 0; k < kSamples; ++k) {
    const int c = slots.DrawKept(), t = DrawBelow(T), o = DrawBelow(shape.out);
    TimedInputs(seed, BenchCall::kTimedInputStream, static_cast<uint32_t>(c))
        .Fill(x.data(), x.size(), static_cast<size_t>(t) * shape.in);
    double sum = 0, magnitude = 0;
    for (int i = 0; i < shape.in; ++i) {
      const double term = double(x[size_t(i)]) * double(W[size_t(o) * shape.in + i]);
      sum += term;
      magnitude += std::fabs(term);
    }
    const double got = slots.Of(c)[size_t(t) * shape.out + o];
    if (!(std::fabs(got - sum) <= 1e-4 * magnitude + 1e-30)) {
      return fmt::format("timed call {} of {} wrote {} at row {}, column {}, where the product is {:.7g}: {}", c + 1,
                         slots.calls, got, t, o, sum, kWrongWhenTimedText);
    }
  }
  return "";
}

// The kept call's output against the float64 reference block on that call's x (made again
// from its seed), within the block's tolerance for its output (runner/compare/block_tolerances.h).
std::string CheckBlockCall(const KeptCall& kept, std::span<const float> weights, std::span<const float> ropeCos,
                           std::span<const float> ropeSin, int T) {
  const ref::BlockShape shape = ref::Stage1Shape();
  std::vector<float> x(static_cast<size_t>(T) * shape.model);
  TimedInputs(kept.seed, BenchCall::kTimedInputStream, static_cast<uint32_t>(kept.call)).Fill(x.data(), x.size());
  const std::vector<double> xd(x.begin(), x.end()), cosd(ropeCos.begin(), ropeCos.end()),
      sind(ropeSin.begin(), ropeSin.end());
  const ref::BlockInputs inputs{.rows = T, .x = xd, .ropeCos = cosd, .ropeSin = sind};
  const ref::BlockState expected = ref::RunBlock(shape, ref::BlockRecipe{}, ref::ViewPacked(shape, weights), inputs);
  const std::vector<double>& output = expected[ref::Index(ref::Checkpoint::kOutput)];
  if (Matches(kept.output, output, BlockTolerance(ref::Checkpoint::kOutput))) return "";
  return fmt::format("timed call {} of {} wrote an output the reference does not: {}", kept.call + 1, kept.calls,
                     kWrongWhenTimedText);
}

// The first `measurements` of the child's (the four matmul shapes, then fused_block), each
// timed from outside: a child per batch, on one region laid out once.
Expected<ChildTimings> RunBenchChild(const std::string& harness, const PackedWeights& weights, int T, int threads,
                                     double budget, const StageContext& context, int measurements = kBenchMeasurements) {
  using L = BenchCall;
  const Sizes s = BlockSizes();
  const size_t rows = static_cast<size_t>(T);
  std::vector<float> ropeCos, ropeSin;
  ref::MakeFloatRopeTables(T, s.headDim, ref::kRopeBase, ropeCos, ropeSin);
  // Each measurement's output slots: OutputSlots for its width, and one more for the untimed
  // call; the buffers are as large as the most slots of any.
  auto slotsFor = [&](int m) {
    return OutputSlots(rows * (m == kBenchShapeCount ? size_t(s.D) : size_t(kBenchShapes[m].out)) * sizeof(float));
  };
  size_t matmulFloats = 0;
  for (int m = 0; m < kBenchShapeCount; ++m) {
    matmulFloats = std::max(matmulFloats, size_t(slotsFor(m) + 1) * rows * size_t(kBenchShapes[m].out));
  }
  std::array<BufferSize, L::kBufferCount> sizes{};
  sizes[L::kW] = {weights.values.size(), shm::kReadOnly};
  sizes[L::kRopeCos] = {ropeCos.size(), shm::kReadOnly};
  sizes[L::kRopeSin] = {ropeSin.size(), shm::kReadOnly};
  sizes[L::kX] = {rows * s.D, shm::kWritable};
  sizes[L::kMatmulInput] = {rows * s.F, shm::kWritable};
  sizes[L::kMatmulOutput] = {matmulFloats, shm::kWritable};
  for (L::Buffer b : {L::kNorm1, L::kAttnOut, L::kResidual1, L::kNorm2}) sizes[b] = {rows * s.D, shm::kWritable};
  sizes[L::kOutput] = {size_t(slotsFor(kBenchShapeCount) + 1) * rows * s.D, shm::kWritable};
  sizes[L::kQkv] = {rows * s.QKV, shm::kWritable};
  sizes[L::kHidden] = {rows * s.F, shm::kWritable};
  auto created = SharedRegion::Create<L>(sizes);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  std::ranges::copy(weights.values, region.Floats<L>(L::kW).begin());
  std::ranges::copy(ropeCos, region.Floats<L>(L::kRopeCos).begin());
  std::ranges::copy(ropeSin, region.Floats<L>(L::kRopeSin).begin());
  const ref::BlockWeights view = ref::ViewPacked(ref::Stage1Shape(), weights.values);
  const float* shapeWeights[kBenchShapeCount] = {view.wq.data(), view.wo.data(), view.gate.data(), view.down.data()};
  ChildTimings result;
  for (int m = 0; m < measurements; ++m) {
    const bool block = m == kBenchShapeCount;
    const size_t width = block ? size_t(s.D) : size_t(kBenchShapes[m].out);
    BenchMeasurement measurement{
        .name = block ? "fused_block" : fmt::format("matmul {}", kBenchShapes[m].name),
        .perCall = rows * width,
        .rowWidth = width,
        .slots = slotsFor(m),
        .slotFloats = region.Floats<L>(block ? L::kOutput : L::kMatmulOutput),
        .setParams = [&, m](int calls, bool callsSkipped) {
          region.SetParams<L>({.tokens = T, .threads = threads, .measurement = m, .calls = calls,
                               .callsSkipped = callsSkipped ? 1 : 0, .slots = slotsFor(m)});
        },
        .checkBatch = nullptr,
        .checkKept = nullptr};
    if (block) {
      measurement.checkKept = [&](const KeptCall& kept) {
        return CheckBlockCall(kept, weights.values, ropeCos, ropeSin, T);
      };
    } else {
      measurement.checkBatch = [&, m](const OutputSlotRing& wrote, uint64_t seed) {
        return CheckMatmulCalls(wrote, seed, shapeWeights[m], T, kBenchShapes[m]);
      };
    }
    auto timed = TimeMeasurement(measurement, harness, region, context.limits, budget);
    if (!timed.ok()) return timed.error();
    if (!timed->failure.empty()) {
      result.failure = timed->failure;
      break;
    }
    result.timings[m] = timed->timing;
  }
  return result;
}

// The stage-1 solution's decoder_block at T, on its own child: the median of its calls.
Expected<double> StageOneBlockSeconds(const PackedWeights& weights, int T, const StageContext& context) {
  using L = stage01::BlockCall;
  const StageBuild* one = FindStageBuild(1);
  if (one == nullptr) return InternalError("the bench compares with stage 1, which this build lacks");
  const Sizes s = BlockSizes();
  const std::vector<float> x = ref::GenerateInputRows(1, T, s.D, 1.0);
  std::vector<float> ropeCos, ropeSin;
  ref::MakeFloatRopeTables(T, s.headDim, ref::kRopeBase, ropeCos, ropeSin);
  std::array<BufferSize, L::kBufferCount> sizes{};
  sizes[L::kW] = {weights.values.size(), shm::kReadOnly};
  sizes[L::kX] = {x.size(), shm::kReadOnly};
  sizes[L::kRopeCos] = {ropeCos.size(), shm::kReadOnly};
  sizes[L::kRopeSin] = {ropeSin.size(), shm::kReadOnly};
  const ref::BlockShape shape = ref::Stage1Shape();
  for (ref::Checkpoint c : ref::kCheckpointOrder) {
    sizes[L::kFirstOutput + ref::Index(c)] = {static_cast<size_t>(T) * ref::CheckpointWidth(c, shape), shm::kWritable};
  }
  std::vector<double> seconds;
  for (int run = 0; run < kStageOneRuns; ++run) {
    auto created = SharedRegion::Create<L>(sizes);
    if (!created.ok()) return created.error();
    SharedRegion& region = *created;
    std::ranges::copy(weights.values, region.Floats<L>(L::kW).begin());
    std::ranges::copy(x, region.Floats<L>(L::kX).begin());
    std::ranges::copy(ropeCos, region.Floats<L>(L::kRopeCos).begin());
    std::ranges::copy(ropeSin, region.Floats<L>(L::kRopeSin).begin());
    region.PoisonOutputs();
    region.SetParams<L>({.tokens = T});
    ChildLimits limits = context.limits;
    limits.wallSeconds = 120;
    auto ran = RunInChild(one->solutionHarness, region, limits);
    if (!ran.ok()) return ran.error();
    if (ran->ending != ChildOutcome::Ending::kReturned) return InternalError("the stage-1 solution failed while timed");
    seconds.push_back(ran->callSeconds);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

// --- the figures -----------------------------------------------------------------------------
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

const char* const kVersionNames[] = {"",
                                     "naive: one dot product per output",
                                     "tiled: 4 x 4 register tiles, scalar",
                                     "vectorised: the tiles with 16-float vectors",
                                     "threaded: column bands per thread",
                                     "packed: W in panels, outer-product kernel"};
constexpr int kSolutionVersion = 5;  // the solution's own matmul; 1 .. 4 are built beside it

double PeakFor(const Machine& m, int threads) { return m.peak[std::min(threads, 2) - 1]; }
// The roof a figure is held against (BeyondRoofText): the best peak the probe saw on any thread
// count.
double Roof(const Machine& m) { return std::max(m.peak[0], m.peak[1]); }

// The goals stage 3's solution was written to, at T = 512 (none when T = 512 was not timed):
// the qkv matmul on one thread at 70 % of the FMA peak and as fast as OpenBLAS at its best,
// the block as fast as the OpenBLAS-built block and 30x stage 1, and 1.7x on two threads.
std::vector<SpeedGoal> Goals(const Machine& m, const std::vector<Row>& rows) {
  const Row* qkv = nullptr;
  const Row* block = nullptr;
  const Row* block2 = nullptr;
  for (const Row& r : rows) {
    if (r.T != 512) continue;
    if (r.threads == 1 && r.kernel == "matmul qkv") qkv = &r;
    if (r.threads == 1 && r.kernel == "fused_block") block = &r;
    if (r.threads == 2 && r.kernel == "fused_block") block2 = &r;
  }
  std::vector<SpeedGoal> goals;
  if (qkv != nullptr) {
    goals.push_back({"matmul qkv, T = 512, 1 thread: share of the FMA peak", 100.0 * qkv->Gflops() / PeakFor(m, 1), 70, "%"});
    goals.push_back({"matmul qkv, T = 512, 1 thread: x OpenBLAS", qkv->openBlasSeconds / qkv->student.median, 1.0, "x"});
  }
  if (block != nullptr) {
    goals.push_back({"fused_block, T = 512, 1 thread: x the OpenBLAS block", block->openBlasSeconds / block->student.median,
                     1.0, "x"});
    if (block->stageOneSeconds > 0) {
      goals.push_back({"fused_block, T = 512, 1 thread: x stage 1", block->stageOneSeconds / block->student.median, 30, "x"});
    }
  }
  if (block != nullptr && block2 != nullptr) {
    goals.push_back({"fused_block, T = 512: 2 threads over 1", block2->Gflops() / block->Gflops(), 1.7, "x"});
  }
  return goals;
}

void PrintText(const Machine& m, const std::vector<Row>& rows, const std::vector<VersionRow>& versions,
               const BenchOptions& o) {
  std::printf("Stage 3 bench: %s on this machine\n", o.source.c_str());
  std::printf("  probe: f32 FMA peak %.1f GFLOP/s on 1 thread, %.1f on 2; read bandwidth %.1f GB/s on 1, %.1f on 2\n",
              m.peak[0], m.peak[1], m.bandwidth[0], m.bandwidth[1]);
  std::printf("  (read over %s: at least twice the last-level cache, %s, from %s)\n", Mebibytes(m.probeBytes).c_str(),
              Mebibytes(m.cache.bytes).c_str(), m.cache.source.c_str());
  std::string tried;
  for (const auto& [type, gflops] : m.candidates) {
    tried += fmt::format("{}{} {:.1f}", tried.empty() ? "" : ", ", type.empty() ? "(its own choice)" : type, gflops);
  }
  std::printf("  OpenBLAS at its best: core %s (OPENBLAS_CORETYPE=%s), the fastest of: %s GFLOP/s (sgemm 512x768x512, 1 thread)\n",
              m.coreName.c_str(), m.coreType.empty() ? "unset" : m.coreType.c_str(), tried.c_str());
  std::printf("  each time is the median of its runs (fastest-slowest in brackets); x stage 1 and x OpenBLAS are\n"
              "  their time over yours (above 1: yours is faster); stage 1 runs on one thread; OpenBLAS is\n"
              "  cblas_sgemm (cblas_sgemv at T = 1), and its block is those calls around the solution's attention\n\n");
  std::printf("%5s %3s  %-14s %28s %9s %7s %10s %11s\n", "T", "thr", "kernel", "time (fastest-slowest)", "GFLOP/s",
              "% peak", "x stage 1", "x OpenBLAS");
  int lastT = -1;
  for (const Row& r : rows) {
    if (lastT != -1 && (r.T != lastT)) std::printf("\n");
    lastT = r.T;
    const std::string time = fmt::format("{} ({}-{})", Duration(r.student.median), Duration(r.student.fastest),
                                         Duration(r.student.slowest));
    std::printf("%5d %3d  %-14s %28s %9.1f %6.0f%% %10s %10.2fx\n", r.T, r.threads, r.kernel.c_str(), time.c_str(),
                r.Gflops(), 100.0 * r.Gflops() / PeakFor(m, r.threads),
                r.stageOneSeconds > 0 ? fmt::format("{:.1f}x", r.stageOneSeconds / r.student.median).c_str() : "-",
                r.openBlasSeconds / r.student.median);
  }
  if (!versions.empty()) {
    std::printf("\nThe solution's matmul versions at the qkv shape (768 x 512), one thread, each validated on the visible suite:\n");
    std::printf("%3s  %-44s", "v", "version");
    for (const auto& [T, t] : versions.front().qkv) std::printf(" %12s", fmt::format("T={} GFLOP/s", T).c_str());
    std::printf("\n");
    for (const VersionRow& v : versions) {
      std::printf("%3d  %-44s", v.version, v.name.c_str());
      if (!v.valid) {
        std::printf(" not timed: %s\n", v.verdict.c_str());
        continue;
      }
      for (const auto& [T, t] : v.qkv) std::printf(" %12.1f", MatmulFlops(T, kBenchShapes[0]) / t.median / 1e9);
      std::printf("\n");
    }
  }
  PrintGoals(o.solutions ? "The solution's goals, in this run:"
                         : "The goals the solution was written to, with your figures (0.5x the solution is fast):",
             Goals(m, rows));
  std::fflush(stdout);
}

json ToJson(const Machine& m, const std::vector<Row>& rows, const std::vector<VersionRow>& versions,
            const BenchOptions& o) {
  json root;
  root["stage"] = 3;
  root["source"] = o.source;
  root["machine"] = MachineJson();
  // How the student's figures were taken (runner/stages/bench_engine.h): each the median of
  // kBatchesTimed batches timed by the runner's clock from outside the child.
  root["timed_from"] = "outside";
  root["probe"] = {{"fma_peak_gflops", m.peak}, {"read_bandwidth_gbs", m.bandwidth}, {"threads", {1, 2}},
                   {"read_bytes", m.probeBytes}};
  root["cache"] = {{"bytes", m.cache.bytes}, {"source", m.cache.source}};
  json candidates = json::array();
  for (const auto& [type, gflops] : m.candidates) candidates.push_back({{"coretype", type}, {"sgemm_gflops", gflops}});
  root["openblas"] = {{"coretype", m.coreType}, {"corename", m.coreName}, {"config", m.config},
                      {"candidates", candidates}};
  root["rows"] = json::array();
  for (const Row& r : rows) {
    root["rows"].push_back({{"T", r.T},
                            {"threads", r.threads},
                            {"kernel", r.kernel},
                            {"flops", r.flops},
                            {"bytes", r.bytes},
                            {"time", ReportTimingJson(r.student)},
                            {"gflops", r.Gflops()},
                            {"percent_of_peak", 100.0 * r.Gflops() / PeakFor(m, r.threads)},
                            {"stage1_seconds", r.stageOneSeconds > 0 ? json(r.stageOneSeconds) : json(nullptr)},
                            {"ratio_to_stage1", r.stageOneSeconds > 0 ? json(r.stageOneSeconds / r.student.median)
                                                                       : json(nullptr)},
                            {"openblas_seconds", r.openBlasSeconds},
                            {"ratio_to_openblas", r.openBlasSeconds / r.student.median}});
  }
  root["goals"] = GoalsJson(Goals(m, rows));
  root["versions"] = json::array();
  for (const VersionRow& v : versions) {
    json times = json::array();
    for (const auto& [T, t] : v.qkv) {
      times.push_back({{"T", T}, {"time", ReportTimingJson(t)}, {"gflops", MatmulFlops(T, kBenchShapes[0]) / t.median / 1e9}});
    }
    root["versions"].push_back(
        {{"version", v.version}, {"name", v.name}, {"valid", v.valid}, {"check", v.verdict}, {"qkv", times}});
  }
  return root;
}

// --- the SVG ---------------------------------------------------------------------------------
// A roofline (Williams, Waterman and Patterson, CACM 2009): log-log, FLOP/byte across, GFLOP/s
// up; the probe's peaks as flat lines and its bandwidths as slopes, each kernel a point.
// Below it, each T = 512 row's ratio to OpenBLAS as a bar, with 1 marked.
// The figure is kFigureWidth units wide and takes the page's width (width 100%, a viewBox): in
// a 1280 px window a documentation page's text column is about 750 px, where its 12-unit text
// is 11 px. Nothing is drawn over anything else: the legend, which names the roofs' figures,
// sits above the plot, each T is named once beside its points, clear of every point, roof and
// other name, and each bar's ratio clear of the line at 1 (LayOutBarLabels).
constexpr double kFigureWidth = 800, kFontSize = 12;

std::string Svg(const Machine& m, const std::vector<Row>& rows, const BenchOptions& o) {
  constexpr double W = kFigureWidth, margin = 20, plotLeft = 64, plotRight = W - 30, plotHeight = 400;
  constexpr double legendGap = 18, legendRowHeight = 20;
  std::vector<const Row*> bars;
  for (const Row& r : rows) {
    if (r.T == rows.back().T) bars.push_back(&r);
  }
  const std::vector<std::pair<std::string, std::string>> colours = {
      {"matmul qkv", "#1f77b4"}, {"matmul wo", "#ff7f0e"}, {"matmul gate/up", "#2ca02c"},
      {"matmul down", "#d62728"}, {"fused_block", "#9467bd"}};
  const char* const roofColours[] = {"#333", "#999"};

  // The legend, in rows that wrap at the figure's width: the kernels' colours, what filled and
  // ring mean, and the two roofs with their peaks and bandwidths (the roofs' own names, which
  // the lines leave no room for in the plot).
  std::string legend;
  double legendX = margin, legendY = 66;
  auto legendItem = [&](double width) {
    if (legendX > margin && legendX + width > W - margin / 2) {
      legendX = margin;
      legendY += legendRowHeight;
    }
    const double x = legendX;
    legendX += width + legendGap;
    return x;
  };
  for (const auto& [name, c] : colours) {
    const double x = legendItem(14 + TextWidth(name, kFontSize));
    legend += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/><text x=\"{:.1f}\" y=\"{:.1f}\">{}"
                          "</text>\n",
                          x + 5, legendY - 4, c, x + 14, legendY, name);
  }
  const std::string threadsNote = "filled: 1 thread; ring: 2";
  legend += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", legendItem(TextWidth(threadsNote, kFontSize)),
                        legendY, threadsNote);
  for (int t = 0; t < 2; ++t) {
    const std::string roof = fmt::format("{} thread{}: {:.0f} GFLOP/s, {:.1f} GB/s", t + 1, t == 0 ? "" : "s",
                                         m.peak[t], m.bandwidth[t]);
    const double x = legendItem(30 + TextWidth(roof, kFontSize));
    legend += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                          "stroke-width=\"2\"/><text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                          x, legendY - 4, x + 24, legendY - 4, roofColours[t], x + 30, legendY, roof);
  }

  const double plotTop = legendY + 20, plotBottom = plotTop + plotHeight;
  const double xMin = std::log10(0.1), xMax = std::log10(1000.0);
  const double yMin = std::log10(0.1), yMax = std::log10(std::max(m.peak[1], m.peak[0]) * 2);
  auto X = [&](double intensity) { return plotLeft + (std::log10(intensity) - xMin) / (xMax - xMin) * (plotRight - plotLeft); };
  auto Y = [&](double gflops) {
    return plotBottom - (std::log10(std::max(gflops, 0.1)) - yMin) / (yMax - yMin) * (plotBottom - plotTop);
  };
  const double barsTop = plotBottom + 80, barHeight = 18;
  const double H = barsTop + 40 + bars.size() * (barHeight + 6) + 40;
  std::string svg = SvgOpen(W, H, kFontSize);
  svg += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"15\">Stage 3 roofline: {}</text>\n<text x=\"{}\" y=\"44\">"
                     "f32 FMA peak {:.0f} / {:.0f} GFLOP/s, read {:.1f} / {:.1f} GB/s, 1 / 2 threads</text>\n",
                     margin, EscapeXml(o.source), margin, m.peak[0], m.peak[1], m.bandwidth[0], m.bandwidth[1]);
  svg += legend;
  // Axes and grid; the x axis's numbers low enough to clear the y axis's 0.1 at the corner.
  for (double decade = -1; decade <= 3; ++decade) {
    const double x = X(std::pow(10.0, decade));
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}</text>\n",
                       x, plotTop, plotBottom, plotBottom + 20, std::pow(10.0, decade));
  }
  for (double decade = -1; decade <= std::ceil(yMax); ++decade) {
    const double y = Y(std::pow(10.0, decade));
    if (y < plotTop) break;
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
                       y, plotLeft, plotRight, plotLeft - 6, y + 4, std::pow(10.0, decade));
  }
  svg += fmt::format("<text x=\"{0}\" y=\"{1:.1f}\" text-anchor=\"middle\">arithmetic intensity (FLOP per byte moved, "
                     "at least)</text>\n<text x=\"18\" y=\"{2:.1f}\" transform=\"rotate(-90 18 {2:.1f})\" "
                     "text-anchor=\"middle\">GFLOP/s</text>\n",
                     (plotLeft + plotRight) / 2, plotBottom + 40, (plotTop + plotBottom) / 2);
  // The roofs: min(peak, intensity x bandwidth), for 1 and 2 threads.
  PlotSpace space{{plotLeft, plotTop, plotRight, plotBottom}, {}, {}};
  for (int t = 0; t < 2; ++t) {
    const double ridge = m.peak[t] / m.bandwidth[t];
    const double start = 0.1;
    const Segment slope{X(start), Y(start * m.bandwidth[t]), X(ridge), Y(m.peak[t])};
    const Segment flat{X(ridge), Y(m.peak[t]), X(1000.0), Y(m.peak[t])};
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} "
                       "{:.1f},{:.1f}\"/>\n",
                       roofColours[t], slope.x1, slope.y1, slope.x2, slope.y2, flat.x2, flat.y2);
    space.lines.push_back(slope);
    space.lines.push_back(flat);
  }
  // The points: colour by kernel, filled on one thread, hollow on two.
  constexpr double radius = 5, reach = radius + 1;  // a point's circle, with half its stroke
  auto pointBox = [&](const Row& r) {
    const double x = X(r.flops / r.bytes), y = Y(r.Gflops());
    return Box{x - reach, y - reach, x + reach, y + reach};
  };
  for (const Row& r : rows) {
    std::string colour = "#000";
    for (const auto& [name, c] : colours) {
      if (name == r.kernel) colour = c;
    }
    svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"2\">"
                       "<title>{} T={} threads {}: {:.1f} GFLOP/s</title></circle>\n",
                       X(r.flops / r.bytes), Y(r.Gflops()), radius, r.threads == 1 ? colour : "none", colour, r.kernel,
                       r.T, r.threads, r.Gflops());
    space.taken.push_back(pointBox(r));
  }
  // The T labels. A T's points share a column (a kernel's intensity depends on T only), so one
  // name beside the column names them all. Columns that overlap are named together, "T=2, 3":
  // a name of its own beside each would sit as near the other T's points. (Each kernel's
  // larger T is the one further right, and each point's tooltip names its T.)
  struct Column {
    std::vector<int> tokens;
    Box box;
  };
  auto joined = [](const Box& a, const Box& b) {
    return Box{std::min(a.left, b.left), std::min(a.top, b.top), std::max(a.right, b.right),
               std::max(a.bottom, b.bottom)};
  };
  std::vector<Column> columns;
  for (const Row& r : rows) {
    auto column = std::find_if(columns.begin(), columns.end(), [&](const Column& c) { return c.tokens[0] == r.T; });
    if (column == columns.end()) {
      columns.push_back({{r.T}, pointBox(r)});
    } else {
      column->box = joined(column->box, pointBox(r));
    }
  }
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < columns.size() && !merged; ++i) {
      for (size_t j = i + 1; j < columns.size() && !merged; ++j) {
        if (!Overlap(columns[i].box, columns[j].box)) continue;
        columns[i].box = joined(columns[i].box, columns[j].box);
        columns[i].tokens.insert(columns[i].tokens.end(), columns[j].tokens.begin(), columns[j].tokens.end());
        columns.erase(columns.begin() + static_cast<std::ptrdiff_t>(j));
        merged = true;
      }
    }
  }
  for (Column& column : columns) {
    std::sort(column.tokens.begin(), column.tokens.end());
    std::string text = "T=";
    for (size_t i = 0; i < column.tokens.size(); ++i) text += fmt::format("{}{}", i == 0 ? "" : ", ", column.tokens[i]);
    const std::optional<Box> box = space.PlaceBeside(column.box, TextWidth(text, kFontSize), kFontSize);
    if (!box) continue;
    space.taken.push_back(*box);
    // The baseline sits a fifth of the font size above the box's bottom: room for descenders.
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#333\">{}</text>\n", box->left,
                       box->bottom - kFontSize / 5, text);
  }
  // The bars: x OpenBLAS at the largest T.
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"15\">T = {}: OpenBLAS's time over yours (above 1: yours is "
                     "faster)</text>\n",
                     margin, barsTop, bars.empty() ? 0 : bars.front()->T);
  std::vector<FigureBar> figureBars;
  for (const Row* r : bars) {
    const double ratio = r->openBlasSeconds / r->student.median;
    figureBars.push_back({.label = fmt::format("{}, {} thread{}", r->kernel, r->threads, r->threads == 1 ? "" : "s"),
                          .value = ratio,
                          .valueText = fmt::format("{:.2f}x", ratio),
                          .colour = ratio >= 1 ? "#2ca02c" : "#d62728",
                          .opacity = 1});
  }
  const BarChart chart{.left = 210, .right = W - 30, .top = barsTop + 20, .barHeight = barHeight, .gap = 6,
                       .fontSize = kFontSize, .figureWidth = W, .reference = 1.0, .leastRange = 1.5,
                       .referenceName = "1"};
  svg += DrawBars(chart, figureBars).svg;
  svg += "</svg>\n";
  return svg;
}

}  // namespace

double FusedBlockFlops(int T) {
  const Sizes s = BlockSizes();
  const double projections = 2.0 * T * (double(s.QKV) * s.D + double(s.D) * s.D + 2.0 * s.F * s.D + double(s.D) * s.F);
  const double attention = 2.0 * 2.0 * s.headDim * s.heads * (double(T) * (T + 1) / 2);
  return projections + attention;
}

Status CheckFusedBenchOptions(const BenchOptions& o) {
  if (!o.contexts.empty()) return BadUsage("--contexts is stage 2's; stage 3 takes --tokens (T values)");
  for (int T : o.tokens) {
    if (T < 1 || T > kBenchLargestT) return BadUsage(fmt::format("--tokens: {} is not a T from 1 to {}", T, kBenchLargestT));
  }
  if (!o.plotPath.empty()) return CheckPlotWritable(o.plotPath);  // before a minute of measuring, not after
  return Status::Ok();
}

Expected<int> RunFusedBench(const PackedWeights& weights, const BenchOptions& o, const StageContext& context) {
  if (Status usage = CheckFusedBenchOptions(o); !usage.ok()) return usage.error();
  const std::vector<int> tokens = o.tokens.empty() ? std::vector<int>{1, 16, 128, 512} : o.tokens;
  const double budget = o.budgetSeconds > 0 ? o.budgetSeconds : kDefaultBudget;
  std::FILE* progress = o.format == "json" ? stderr : stdout;
  auto note = [progress](const std::string& text) {
    std::fprintf(progress, "%s\n", text.c_str());
    std::fflush(progress);
  };

  // The machine, then OpenBLAS at its best.
  // The probe reads a buffer larger than the caches (MemoryPassBytes), so that it reads memory,
  // not cache (as stage 4's and stage 5's benches do).
  Machine machine;
  auto cache = LastLevelCache();
  if (!cache.ok()) return cache.error();
  machine.cache = *cache;
  note(fmt::format("bench: last-level cache {} ({}); probing this machine's FMA peak, and the read bandwidth over {} ...",
                   Mebibytes(machine.cache.bytes), machine.cache.source, Mebibytes(MemoryPassBytes(machine.cache))));
  auto probe = RunYardstick({"probe", fmt::format("{}", std::max(0.2, budget)), std::to_string(MemoryPassBytes(machine.cache))},
                            "", 300);
  if (!probe.ok()) return probe.error();
  if (!probe->ok || !probe->result["read_bytes"].is_number_unsigned()) {
    return InternalError("the bench's probe (stage03-yardstick probe) failed: rebuild the workbook");
  }
  for (int t = 0; t < 2; ++t) {
    machine.peak[t] = probe->result["fma_peak_gflops"][t].get<double>();
    machine.bandwidth[t] = probe->result["read_bandwidth_gbs"][t].get<double>();
  }
  machine.probeBytes = probe->result["read_bytes"].get<uint64_t>();
  note("bench: finding OpenBLAS's fastest core type on this CPU ...");
  double best = 0;
  for (const char* type : kCoreTypes) {
    auto tried = RunYardstick({"corename"}, type, 60);
    if (!tried.ok()) return tried.error();
    if (!tried->ok) continue;  // a core type this CPU cannot run
    const double gflops = tried->result["gflops"].get<double>();
    machine.candidates.emplace_back(type, gflops);
    if (gflops > best) {
      best = gflops;
      machine.coreType = type;
      machine.coreName = tried->result["corename"].get<std::string>();
      machine.config = tried->result["config"].get<std::string>();
    }
  }
  if (machine.candidates.empty()) return InternalError("OpenBLAS ran under no core type: check libopenblas-dev");

  // Every T and thread count: the student's child, the yardstick, stage 1.
  std::vector<Row> rows;
  for (int T : tokens) {
    for (int threads : kThreadCounts) {
      note(fmt::format("bench: T = {}, {} thread{} ...", T, threads, threads == 1 ? "" : "s"));
      auto child = RunBenchChild(context.harness, weights, T, threads, budget, context);
      if (!child.ok()) return child.error();
      if (!child->failure.empty()) {
        std::printf("bench: T = %d, %d thread%s: %s\n", T, threads, threads == 1 ? "" : "s", child->failure.c_str());
        return 1;
      }
      auto yard = RunYardstick({"measure", std::to_string(T), std::to_string(threads), fmt::format("{}", budget)},
                               machine.coreType, 600);
      if (!yard.ok()) return yard.error();
      if (!yard->ok) return InternalError("the bench's yardstick (stage03-yardstick measure) failed");
      for (int s = 0; s < kBenchShapeCount; ++s) {
        Row r{.T = T, .threads = threads, .kernel = std::string("matmul ") + kBenchShapes[s].name,
              .flops = MatmulFlops(T, kBenchShapes[s]), .bytes = MatmulBytes(T, kBenchShapes[s]),
              .student = child->timings[s], .stageOneSeconds = 0,
              .openBlasSeconds = TimingFromYardstick(yard->result["sgemm"][s]).median};
        if (threads == 1) r.stageOneSeconds = TimingFromYardstick(yard->result["stage1_loops"][s]).median;
        rows.push_back(r);
      }
      Row block{.T = T, .threads = threads, .kernel = "fused_block", .flops = FusedBlockFlops(T), .bytes = BlockBytes(T),
                .student = child->timings[kBenchShapeCount], .stageOneSeconds = 0,
                .openBlasSeconds = TimingFromYardstick(yard->result["openblas_block"]).median};
      if (threads == 1) {
        auto one = StageOneBlockSeconds(weights, T, context);
        if (!one.ok()) return one.error();
        block.stageOneSeconds = *one;
      }
      rows.push_back(block);
    }
  }
  // No figure above the roof: a kernel faster than the machine's FMA peak (with room for the
  // probe's own noise) was not measured, whatever the clock said.
  for (const Row& r : rows) {
    const std::string beyond =
        BeyondRoofText(fmt::format("{}, T = {}, {} thread{}", r.kernel, r.T, r.threads, r.threads == 1 ? "" : "s"),
                       r.Gflops(), "GFLOP/s", Roof(machine),
                       fmt::format("this machine's FMA peak of {:.1f} GFLOP/s", Roof(machine)));
    if (!beyond.empty()) {
      std::fprintf(stderr, "bench: %s\n", beyond.c_str());
      return 1;
    }
  }
  // Stage 1 has no threads: the two-thread rows compare with its one-thread time.
  for (Row& r : rows) {
    if (r.threads == 1) continue;
    for (const Row& one : rows) {
      if (one.threads == 1 && one.T == r.T && one.kernel == r.kernel) r.stageOneSeconds = one.stageOneSeconds;
    }
  }

  // The solution's versions, each validated before it is timed.
  std::vector<VersionRow> versions;
  if (o.solutions) {
    const char* const checks[] = {WB_STAGE03_MATMUL_V1_CHECK, WB_STAGE03_MATMUL_V2_CHECK, WB_STAGE03_MATMUL_V3_CHECK,
                                  WB_STAGE03_MATMUL_V4_CHECK};
    const char* const benches[] = {WB_STAGE03_MATMUL_V1_BENCH, WB_STAGE03_MATMUL_V2_BENCH, WB_STAGE03_MATMUL_V3_BENCH,
                                   WB_STAGE03_MATMUL_V4_BENCH};
    for (int v = 1; v <= kSolutionVersion; ++v) {
      VersionRow row{.version = v, .name = kVersionNames[v], .valid = false, .verdict = "", .qkv = {}};
      note(fmt::format("bench: the solution's matmul version {} ({}) ...", v, row.name));
      if (v < kSolutionVersion) {
        CheckOptions check;
        check.stage = 3;
        check.harness = checks[v - 1];
        check.memoryLimitMiB = o.memoryLimitMiB;
        auto checked = RunCheck(check, context.paths);
        if (!checked.ok()) return checked.error();
        row.valid = checked->status == RunStatus::kPass;
        size_t passing = 0;
        for (const auto& c : checked->cases) passing += c.status == CaseStatus::kPass ? 1 : 0;
        row.verdict = fmt::format("{} of {} visible cases pass", passing, checked->cases.size());
      } else {
        row.valid = true;  // the solution itself, validated before the bench began
        row.verdict = "the solution: validated above";
      }
      if (row.valid) {
        for (int T : tokens) {
          if (v < kSolutionVersion) {
            auto child = RunBenchChild(benches[v - 1], weights, T, 1, budget, context, 1);  // the qkv shape
            if (!child.ok()) return child.error();
            if (!child->failure.empty()) return InternalError("a solution version failed while timed: " + child->failure);
            row.qkv.emplace_back(T, child->timings[0]);
          } else {
            for (const Row& r : rows) {
              if (r.T == T && r.threads == 1 && r.kernel == "matmul qkv") row.qkv.emplace_back(T, r.student);
            }
          }
        }
      }
      versions.push_back(std::move(row));
    }
  }

  if (o.format == "json") {
    std::printf("%s\n", ToJson(machine, rows, versions, o).dump(2).c_str());
  } else {
    std::printf("\n");
    PrintText(machine, rows, versions, o);
  }
  if (!o.plotPath.empty()) {
    if (auto written = WritePlot(o.plotPath, Svg(machine, rows, o)); !written.ok()) return written.error();
    std::fprintf(progress, "bench: the figures are in %s\n", o.plotPath.c_str());
  }
  return 0;
}

}  // namespace wb::stage03
