#include "bench_driver.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_call.h"
#include "bench_report.h"
#include "reference/block/block.h"
#include "reference/gen/block_data.h"
#include "runner/compare/block_tolerances.h"
#include "runner/compare/compare.h"
#include "runner/engine/check.h"
#include "runner/isolation/shared_region.h"
#include "runner/stages/bench_engine.h"
#include "runner/stages/bench_support.h"
#include "runner/stages/timed_inputs.h"
#include "runner/stages/01-block/block_call.h"
#include "runner/stages/03-fused/stage03_paths.h"
#include "runner/stages/call_timing_json.h"

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

const char* const kVersionNames[] = {"",
                                     "naive: one dot product per output",
                                     "tiled: 4 x 4 register tiles, scalar",
                                     "vectorised: the tiles with 16-float vectors",
                                     "threaded: column bands per thread",
                                     "packed: W in panels, outer-product kernel"};
constexpr int kSolutionVersion = 5;  // the solution's own matmul; 1 .. 4 are built beside it

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
    std::printf("%s\n", BenchJson(machine, rows, versions, o).dump(2).c_str());
  } else {
    std::printf("\n");
    PrintBenchText(machine, rows, versions, o);
  }
  if (!o.plotPath.empty()) {
    if (auto written = WritePlot(o.plotPath, RooflineSvg(machine, rows, o)); !written.ok()) return written.error();
    std::fprintf(progress, "bench: the figures are in %s\n", o.plotPath.c_str());
  }
  return 0;
}

}  // namespace wb::stage03
