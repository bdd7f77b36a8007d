#include "bench_driver.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_call.h"
#include "bench_report.h"
#include "quant_reference.h"
#include "model/files/tensor_types.h"
#include "reference/block/block_shape.h"
#include "reference/gen/block_data.h"
#include "runner/compare/compare.h"
#include "runner/engine/check.h"
#include "runner/engine/kernel_versions.h"
#include "runner/isolation/shared_region.h"
#include "runner/stages/04-quant/stage04_paths.h"
#include "runner/stages/bench_engine.h"
#include "runner/stages/bench_support.h"
#include "runner/stages/timed_inputs.h"
#include "runner/stages/call_timing_json.h"

namespace wb::stage04 {
// The runner is a unity build: this file's helpers live in a namespace of their own, so no
// file-local name here meets one of quant_driver.cc's or the checks'.
namespace quant_bench {
namespace {

using L = QuantBenchCall;
using nlohmann::json;
using stage03::Timing;

constexpr double kDefaultBudget = 0.5;  // seconds per measurement: a Q8_0 decode on one
                                        // thread cycles its copies a few times in it

// --- how much memory is "larger than the cache": LastLevelCache (runner/stages/bench_support.h) ---------------

int CopiesFor(uint64_t atLeast, uint64_t matrixBytes) {
  return static_cast<int>(std::max<uint64_t>(1, (atLeast + matrixBytes - 1) / matrixBytes));
}

Plan MakePlan(const CacheSize& cache) {
  Plan plan{.cache = cache, .probeBytes = MemoryPassBytes(cache)};
  plan.q8Copies = CopiesFor(plan.probeBytes, DecodeBytes(Weight::kQ8_0));
  plan.q4Copies = CopiesFor(plan.probeBytes, DecodeBytes(Weight::kQ4_0));
  plan.f32Copies = CopiesFor(plan.probeBytes, kDecodeFloatBytes);
  return plan;
}

// --- timings ---------------------------------------------------------------------------------
// What Measure can produce: positive, finite, in order, at least its minimum of runs.
bool Sound(const Timing& t) {
  return std::isfinite(t.median) && std::isfinite(t.slowest) && t.fastest > 0 && t.fastest <= t.median &&
         t.median <= t.slowest && t.runs >= stage03::kMinRuns && t.runs <= stage03::kMaxRuns;
}
// --- the yardstick: trusted, started outside the sandbox -----------------------------------
// Runs stage04-yardstick with `args` and returns the JSON object it prints (runner/stages/bench_support.h),
// checked to hold a timing per thread count.
Expected<json> RunYardstick(const std::vector<std::string>& args, double timeoutSeconds) {
  std::vector<std::string> argv = {WB_STAGE04_YARDSTICK};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string what = fmt::format("the bench's yardstick (stage04-yardstick {})", args.front());
  auto result = RunJsonProgram(argv, what, timeoutSeconds);
  if (!result) return result.error();
  if (result->exitStatus != 0) return InternalError(what + " failed: rebuild the workbook");
  const json& printed = result->json;
  if (printed.is_object() && printed.contains("seconds") && printed["seconds"].size() == kThreadCounts.size()) {
    return printed;
  }
  return InternalError(what + " printed no result: rebuild the workbook");
}

// --- the bench child's region ------------------------------------------------------------------
// Random bytes for weights whose values do not matter, only their size: a multiply's time does
// not depend on its operands. SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): fast and
// deterministic.
class ByteSource {
 public:
  explicit ByteSource(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// A scale that is a finite, normal half between 2^-8 and 2^-6 (exponent field 7 or 8): every
// block is what a real file could hold.
uint16_t RandomScale(ByteSource& random) { return static_cast<uint16_t>(0x1C00u + (random.Next() & 0x7FFu)); }

// `count` blocks of `type` at `out`: a random scale, then random codes (Q8_0's in -127 .. 127,
// as the contract's quantizer makes them; any nibble is a Q4_0 code).
void FillBlocks(Weight type, size_t count, unsigned char* out, uint64_t seed) {
  ByteSource random(seed);
  const size_t codes = type == Weight::kQ4_0 ? 16 : 32;
  for (size_t b = 0; b < count; ++b) {
    const uint16_t scale = RandomScale(random);
    std::memcpy(out, &scale, sizeof scale);
    out += sizeof scale;
    for (size_t at = 0; at < codes; at += 8) {
      const uint64_t word = random.Next();
      std::memcpy(out + at, &word, 8);
    }
    if (type == Weight::kQ8_0) {
      for (size_t j = 0; j < codes; ++j) {
        if (out[j] == 0x80) out[j] = 0x81;  // -128 -> -127
      }
    }
    out += codes;
  }
}

// One decode matrix generated, then copied: the copies need not differ, only live at
// different addresses, so that none is in the cache when its turn comes.
void FillCopies(Weight type, int copies, std::span<unsigned char> out) {
  const size_t matrix = DecodeBytes(type);
  FillBlocks(type, matrix / BlockBytes(type), out.data(), type == Weight::kQ4_0 ? 4 : 8);
  for (int c = 1; c < copies; ++c) std::memcpy(out.data() + c * matrix, out.data(), matrix);
}

// A measurement's T, its matrix's rows (matmul_q), and the floats one call's output holds.
int TokensOf(int m) {
  if (m == kDecodeQ8_0 || m == kDecodeQ4_0) return 1;
  if (m < kFirstBlockMeasurement) return kPrefillT;
  return kBlockTokens[size_t((m - kFirstBlockMeasurement) % int(kBlockTokens.size()))];
}
int RowsOf(int m) { return m == kDecodeQ8_0 || m == kDecodeQ4_0 ? kDecodeRows : kPrefillRows; }
size_t OutputFloats(int m) {
  return size_t(TokensOf(m)) * (m < kFirstBlockMeasurement ? size_t(RowsOf(m)) : size_t(ref::Stage1Shape().model));
}
int SlotsFor(int m) { return OutputSlots(OutputFloats(m) * sizeof(float)); }

Expected<SharedRegion> LayOutRegion(const QuantWeightSets& sets, const Plan& plan) {
  const size_t rows = kPrefillT;
  const ref::BlockShape shape = ref::Stage1Shape();
  const size_t D = shape.model, F = shape.ffn, QKV = shape.model + 2 * shape.kvWidth();
  std::array<BufferSize, L::kBufferCount> sizes{};
  sizes[L::kQ8Copies] = BufferSize::Bytes(DecodeBytes(Weight::kQ8_0) * plan.q8Copies, shm::kReadOnly);
  sizes[L::kQ4Copies] = BufferSize::Bytes(DecodeBytes(Weight::kQ4_0) * plan.q4Copies, shm::kReadOnly);
  const size_t q8 = BlockBytes(Weight::kQ8_0);
  sizes[L::kActivations] = BufferSize::Bytes(rows * (kDecodeCols / 32) * q8, shm::kWritable);
  for (int s = 0; s < kBlockSetCount; ++s) {
    size_t bytes = 0;
    for (const QuantMatrixBytes& m : sets.at(kBlockSets[s]).matrices) bytes += m.bytes.size();
    sizes[L::kSetMatrices[s]] = BufferSize::Bytes(bytes, shm::kReadOnly);
  }
  sizes[L::kNormWeights] = {kBlockSetCount * 2 * D, shm::kReadOnly};
  sizes[L::kX] = {rows * D, shm::kWritable};
  sizes[L::kRopeCos] = {rows * shape.headDim / 2, shm::kReadOnly};
  sizes[L::kRopeSin] = {rows * shape.headDim / 2, shm::kReadOnly};
  // The output slots (OutputSlots), and one for the untimed call, of the measurement that
  // needs the most room.
  size_t yFloats = 0, outputFloats = 0;
  for (int m = 0; m < kQuantMeasurementCount; ++m) {
    const size_t floats = OutputFloats(m);
    (m < kFirstBlockMeasurement ? yFloats : outputFloats) =
        std::max(m < kFirstBlockMeasurement ? yFloats : outputFloats, size_t(SlotsFor(m) + 1) * floats);
  }
  sizes[L::kY] = {yFloats, shm::kWritable};
  for (L::Buffer b : {L::kNorm1, L::kAttnOut, L::kResidual1, L::kNorm2}) sizes[b] = {rows * D, shm::kWritable};
  sizes[L::kOutput] = {outputFloats, shm::kWritable};
  sizes[L::kQkv] = {rows * QKV, shm::kWritable};
  sizes[L::kHidden] = {rows * F, shm::kWritable};
  for (L::Buffer b : {L::kNorm1q, L::kAttnOutq, L::kNorm2q}) sizes[b] = BufferSize::Bytes(rows * D / 32 * q8, shm::kWritable);
  sizes[L::kHiddenq] = BufferSize::Bytes(rows * F / 32 * q8, shm::kWritable);
  auto created = SharedRegion::Create<L>(sizes);
  if (!created.ok()) return created.error();
  SharedRegion& region = *created;
  FillCopies(Weight::kQ8_0, plan.q8Copies, region.Bytes<L>(L::kQ8Copies));
  FillCopies(Weight::kQ4_0, plan.q4Copies, region.Bytes<L>(L::kQ4Copies));
  std::span<float> norms = region.Floats<L>(L::kNormWeights);
  for (int s = 0; s < kBlockSetCount; ++s) {
    const QuantWeightSet& set = sets.at(kBlockSets[s]);
    unsigned char* at = region.Bytes<L>(L::kSetMatrices[s]).data();
    for (const QuantMatrixBytes& m : set.matrices) at = std::ranges::copy(m.bytes, at).out;
    std::ranges::copy(set.rms1, norms.begin() + s * 2 * D);
    std::ranges::copy(set.rms2, norms.begin() + s * 2 * D + D);
  }
  std::vector<float> ropeCos, ropeSin;
  ref::MakeFloatRopeTables(kPrefillT, shape.headDim, ref::kRopeBase, ropeCos, ropeSin);
  std::ranges::copy(ropeCos, region.Floats<L>(L::kRopeCos).begin());
  std::ranges::copy(ropeSin, region.Floats<L>(L::kRopeSin).begin());
  return created;
}

// A measurement in words, for a report of what went wrong with it.
std::string MeasurementName(int m) {
  switch (m) {
    case kDecodeQ8_0: return "matmul_q Q8_0 at T = 1";
    case kDecodeQ4_0: return "matmul_q Q4_0 at T = 1";
    case kPrefillQ8_0: return fmt::format("matmul_q Q8_0 at T = {}", kPrefillT);
    case kPrefillQ4_0: return fmt::format("matmul_q Q4_0 at T = {}", kPrefillT);
    default: {
      const int block = m - kFirstBlockMeasurement;
      const int perSet = static_cast<int>(kBlockTokens.size());
      return fmt::format("quant_block on {} at T = {}", kBlockSets[block / perSet], kBlockTokens[block % perSet]);
    }
  }
}

struct ChildTimings {
  std::array<Timing, kQuantMeasurementCount> timings{};
  std::string failure;  // why the child's figures are not used; "" when they are
};

// Timed calls' matmul_q outputs, checked at 64 elements drawn at random, each of a kept call
// drawn at random, against the same sums in double on that call's activations (made again from the
// batch's seed) and the decode matrix (every copy holds the same one): each block's integer dot
// product is exact, and the float kernel's rounding of the block sums (kDecodeCols / 32 of
// them, each a product of two halves and an integer) is far inside 1e-4 of their magnitude.
std::string CheckMatmulQCalls(const OutputSlotRing& slots, uint64_t seed, Weight type,
                              std::span<const unsigned char> copy, int T, int rows) {
  constexpr int kSamples = 64;
  constexpr size_t kRowBlocks = kDecodeCols / 32;
  const size_t rowBytes = kRowBlocks * BlockBytes(type);
  const TensorType tensorType = type == Weight::kQ4_0 ? TensorType::kQ4_0 : TensorType::kQ8_0;
  std::vector<float> w(kDecodeCols), x(kDecodeCols);
  std::vector<unsigned char> activations(kRowBlocks * BlockBytes(Weight::kQ8_0));
  const auto asBytes = [](std::span<const unsigned char> b) { return std::as_bytes(b); };
  for (int k = 0; k < kSamples; ++k) {
    const int c = slots.DrawKept(), t = DrawBelow(T), o = DrawBelow(rows);
    TimedActivationBytes(TimedInputs(seed, L::kTimedActivations, static_cast<uint32_t>(c)), size_t(t) * kRowBlocks,
                         kRowBlocks, activations.data());
    if (!DequantizeRow(tensorType, asBytes(copy.subspan(size_t(o) * rowBytes, rowBytes)), w).ok() ||
        !DequantizeRow(TensorType::kQ8_0, asBytes(activations), x).ok()) {
      return "the bench could not read back its own blocks: this is a bug in the workbook";
    }
    double sum = 0, magnitude = 0;
    for (int i = 0; i < kDecodeCols; ++i) {
      sum += double(w[size_t(i)]) * double(x[size_t(i)]);
      magnitude += std::fabs(double(w[size_t(i)]) * double(x[size_t(i)]));
    }
    const double got = slots.Of(c)[size_t(t) * size_t(rows) + size_t(o)];
    if (!(std::fabs(got - sum) <= 1e-4 * magnitude + 1e-30)) {
      return fmt::format("timed call {} of {} wrote {} at row {}, column {}, where the product is {:.7g}: {}", c + 1,
                         slots.calls, got, t, o, sum, kWrongWhenTimedText);
    }
  }
  return "";
}

// The kept call's output against the float64 reference of the quantized block on that call's x
// (made again from its seed), within the tolerance the stage's checks give the output
// (ChainTolerance: roundings to Q8_0 that flip upstream move it).
std::string CheckBlockCall(const KeptCall& kept, const QuantWeightSet& set, int T) {
  const ref::BlockShape shape = ref::Stage1Shape();
  std::vector<float> x(size_t(T) * shape.model);
  TimedInputs(kept.seed, L::kTimedX, static_cast<uint32_t>(kept.call)).Fill(x.data(), x.size());
  std::vector<float> ropeCos, ropeSin;
  ref::MakeFloatRopeTables(T, shape.headDim, ref::kRopeBase, ropeCos, ropeSin);
  const std::vector<double> xd(x.begin(), x.end()), cosd(ropeCos.begin(), ropeCos.end()),
      sind(ropeSin.begin(), ropeSin.end());
  const ref::BlockInputs inputs{.rows = T, .x = xd, .ropeCos = cosd, .ropeSin = sind};
  const QuantizedBlockReference reference = RunQuantizedBlock(shape, ref::ViewPacked(shape, set.values), inputs);
  if (Matches(kept.output, reference.buffers[At(Step::kOutput)], ChainTolerance(ref::Checkpoint::kOutput))) return "";
  return fmt::format("timed call {} of {} wrote an output the reference does not: {}", kept.call + 1, kept.calls,
                     kWrongWhenTimedText);
}

// The first `measurements` of QuantMeasurement's, each timed from outside: a child per batch.
Expected<ChildTimings> RunBenchChild(SharedRegion& region, const QuantWeightSets& sets, const Plan& plan, int threads,
                                     double budget, const StageContext& context,
                                     int measurements = kQuantMeasurementCount) {
  L::Params params{.threads = threads, .q8Copies = plan.q8Copies, .q4Copies = plan.q4Copies, .measurement = 0,
                   .calls = 0, .callsSkipped = 0, .slots = 0, .types = {}};
  for (int s = 0; s < kBlockSetCount; ++s) {
    const QuantWeightSet& set = sets.at(kBlockSets[s]);
    for (size_t m = 0; m < set.matrices.size(); ++m) params.types[s][m] = set.matrices[m].type;
  }
  ChildLimits limits = context.limits;
  // Room for one type's copies packed (the optional step: the measurement packs the copies it
  // times).
  if (limits.memoryBytes > 0) {
    limits.memoryBytes += std::max(plan.q8Copies * MostPackedBytes(DecodeBytes(Weight::kQ8_0)),
                                   plan.q4Copies * MostPackedBytes(DecodeBytes(Weight::kQ4_0)));
  }
  ChildTimings result;
  for (int m = 0; m < measurements; ++m) {
    const bool matmul = m < kFirstBlockMeasurement;
    const Weight type = m == kDecodeQ4_0 || m == kPrefillQ4_0 ? Weight::kQ4_0 : Weight::kQ8_0;
    const int T = TokensOf(m);
    BenchMeasurement measurement{
        .name = MeasurementName(m),
        .perCall = OutputFloats(m),
        .rowWidth = OutputFloats(m) / size_t(T),
        .slots = SlotsFor(m),
        .slotFloats = region.Floats<L>(matmul ? L::kY : L::kOutput),
        .setParams = [&, m](int calls, bool callsSkipped) {
          params.measurement = m;
          params.calls = calls;
          params.callsSkipped = callsSkipped ? 1 : 0;
          params.slots = SlotsFor(m);
          region.SetParams<L>(params);
        },
        .checkBatch = nullptr,
        .checkKept = nullptr};
    if (matmul) {
      const std::span<const unsigned char> copy = region.Bytes<L>(type == Weight::kQ4_0 ? L::kQ4Copies : L::kQ8Copies);
      measurement.checkBatch = [=](const OutputSlotRing& wrote, uint64_t seed) {
        return CheckMatmulQCalls(wrote, seed, type, copy, T, RowsOf(m));
      };
    } else {
      const QuantWeightSet& set = sets.at(kBlockSets[(m - kFirstBlockMeasurement) / int(kBlockTokens.size())]);
      measurement.checkKept = [&set, T](const KeptCall& kept) { return CheckBlockCall(kept, set, T); };
    }
    auto timed = TimeMeasurement(measurement, context.harness, region, limits, budget);
    if (!timed.ok()) return timed.error();
    if (!timed->failure.empty()) {
      result.failure = timed->failure;
      break;
    }
    result.timings[m] = timed->timing;
  }
  return result;
}

}  // namespace
}  // namespace quant_bench

void FillRandomBlocks(Weight type, size_t count, unsigned char* out, uint64_t seed) {
  quant_bench::FillBlocks(type, count, out, seed);
}

Status CheckQuantBenchOptions(const BenchOptions& o) {
  if (!o.contexts.empty() || !o.tokens.empty()) {
    return BadUsage(fmt::format("--contexts and --tokens are stages 2 and 3's; stage 4 measures T = 1 and T = {}",
                                kPrefillT));
  }
  if (!o.plotPath.empty()) return CheckPlotWritable(o.plotPath);  // before a minute of measuring, not after
  return Status::Ok();
}

Expected<int> RunQuantBench(const QuantWeightSets& sets, const BenchOptions& o, const StageContext& context) {
  using namespace quant_bench;
  if (Status usage = CheckQuantBenchOptions(o); !usage.ok()) return usage.error();
  for (const char* name : kBlockSets) {
    if (!sets.contains(name)) return InternalError(fmt::format("the bench needs weight set {}, which was not loaded", name));
  }
  auto cache = LastLevelCache();
  if (!cache.ok()) return cache.error();
  const double budget = o.budgetSeconds > 0 ? o.budgetSeconds : kDefaultBudget;
  std::FILE* progress = o.format == "json" ? stderr : stdout;
  auto note = [progress](const std::string& text) {
    std::fprintf(progress, "%s\n", text.c_str());
    std::fflush(progress);
  };

  Figures figures;
  figures.plan = MakePlan(*cache);
  const Plan& plan = figures.plan;
  note(fmt::format("bench: last-level cache {} ({}); probing the read bandwidth over {} ...",
                   Mebibytes(plan.cache.bytes), plan.cache.source, Mebibytes(plan.probeBytes)));
  auto probe = RunYardstick({"probe", std::to_string(plan.probeBytes), fmt::format("{}", budget), "shared"}, 300);
  if (!probe.ok()) return probe.error();
  if (!probe->contains("bytes") || !probe->contains("huge_page_bytes")) {
    return InternalError("the bench's yardstick printed no probe: rebuild the workbook");
  }
  figures.probeBytes = (*probe)["bytes"].get<uint64_t>();
  figures.probeHugeBytes = (*probe)["huge_page_bytes"].get<uint64_t>();
  note(fmt::format("bench: stage 3's float matmul at T = 1 over {} copies of {} x {} ...", plan.f32Copies, kDecodeRows,
                   kDecodeCols));
  auto floats = RunYardstick({"float", std::to_string(plan.f32Copies), fmt::format("{}", budget)}, 600);
  if (!floats.ok()) return floats.error();
  for (int t = 0; t < 2; ++t) {
    figures.probe[t] = TimingFromYardstick((*probe)["seconds"][t]);
    figures.floatDecode[t] = TimingFromYardstick((*floats)["seconds"][t]);
    if (!Sound(figures.probe[t]) || !Sound(figures.floatDecode[t])) {
      return InternalError("the bench's yardstick returned a timing that cannot be: rebuild the workbook");
    }
  }

  note(fmt::format("bench: laying out {} copies of the Q8_0 matrix and {} of the Q4_0 one ({}) ...", plan.q8Copies,
                   plan.q4Copies,
                   Mebibytes(plan.q8Copies * DecodeBytes(Weight::kQ8_0) + plan.q4Copies * DecodeBytes(Weight::kQ4_0))));
  auto region = LayOutRegion(sets, plan);
  if (!region.ok()) return region.error();
  std::array<Timing, 2> latestProbe = figures.probe;
  for (int t = 0; t < 2; ++t) {
    const int threads = kThreadCounts[t];
    figures.probe[t] = latestProbe[t];
    note(fmt::format("bench: matmul_q and quant_block on {} thread{} ...", threads, threads == 1 ? "" : "s"));
    auto child = RunBenchChild(*region, sets, plan, threads, budget, context);
    if (!child.ok()) return child.error();
    if (!child->failure.empty()) {
      std::printf("bench: %d thread%s: %s\n", threads, threads == 1 ? "" : "s", child->failure.c_str());
      return 1;
    }
    figures.child[t] = child->timings;
    note("bench: the probe again ...");
    auto again = RunYardstick({"probe", std::to_string(plan.probeBytes), fmt::format("{}", budget), "shared"}, 300);
    if (!again.ok()) return again.error();
    for (int u = 0; u < 2; ++u) {
      latestProbe[u] = TimingFromYardstick((*again)["seconds"][u]);
      if (!Sound(latestProbe[u])) {
        return InternalError("the bench's yardstick returned a timing that cannot be: rebuild the workbook");
      }
    }
    figures.probeAfter[t] = latestProbe[t];
  }

  // No figure above the roof: at T = 1 the weights stream from memory, so a kernel reading them
  // far faster than the probe reads a buffer was not measured, whatever the clock said.
  double roof = 0;
  for (int t = 0; t < 2; ++t) roof = std::max({roof, figures.BeforeGbs(t), figures.AfterGbs(t)});
  for (const DecodeKernel& k : DecodeKernels(figures)) {
    for (int t = 0; t < 2; ++t) {
      const std::string beyond =
          BeyondRoofText(fmt::format("{}, T = 1, {}", k.label, ThreadsText(t)), Gbs(k, t), "GB/s", roof,
                         fmt::format("the {:.1f} GB/s this machine reads memory at", roof));
      if (!beyond.empty()) {
        std::fprintf(stderr, "bench: %s\n", beyond.c_str());
        return 1;
      }
    }
  }

  if (o.solutions && context.stage != nullptr) {
    for (const std::string& name : context.stage->kernelVersions) {
      Figures::Version& v = figures.versions.emplace_back();
      v.name = name;
      auto info = DescribeKernelVersion(name);
      if (!info.ok()) return info.error();
      if (!info->runsHere) {
        v.note = fmt::format("not run: this CPU lacks {}", info->needs);
        continue;
      }
      note(fmt::format("bench: the solution's kernel version {}: the visible suite, then T = 1 ...", name));
      CheckOptions check;
      check.stage = context.stage->number;
      check.solutions = true;
      check.kernelVersion = name;
      auto checked = RunCheck(check, context.paths);
      if (!checked.ok()) return checked.error();
      if (checked->status != RunStatus::kPass) {
        v.note = "not timed: it fails the visible suite (./workbook check 4 --solutions says where)";
        continue;
      }
      StageContext versionContext = context;
      versionContext.limits.kernelVersion = name;
      for (int t = 0; t < 2; ++t) {
        auto child = RunBenchChild(*region, sets, plan, kThreadCounts[t], budget, versionContext,
                                   kDecodeQ4_0 + 1);  // the two decode measurements
        if (!child.ok()) return child.error();
        if (!child->failure.empty()) return InternalError("a solution version failed while timed: " + child->failure);
        v.decode[t] = {child->timings[kDecodeQ8_0], child->timings[kDecodeQ4_0]};
      }
      v.ran = true;
    }
  }

  if (o.format == "json") {
    std::printf("%s\n", BenchJson(figures, o).dump(2).c_str());
  } else {
    std::printf("\n");
    PrintBenchText(figures, o);
  }
  if (!o.plotPath.empty()) {
    if (auto written = WritePlot(o.plotPath, BandwidthSvg(figures, o)); !written.ok()) return written.error();
    std::fprintf(progress, "bench: the figure is in %s\n", o.plotPath.c_str());
  }
  return 0;
}

}  // namespace wb::stage04
