// `workbook bench 5 [--solutions|--mine] [--model PATH] [--kernels mine] [--format json] [--plot FILE]`:
// the whole decoder against this machine's memory bandwidth, every figure from one run.
//
// Order, as every bench here (llm.c's dev/cuda): validate, then time. `bench` has checked the
// decoder on stage 5's visible suite first (a wrong decoder's speed means nothing:
// runner/cli/bench_command.cc); this driver then measures, on the same machine in the same run:
//   - the probe: the read bandwidth over a buffer larger than the caches, on 1 and 2
//     threads (stage 4's yardstick, runner/stages/bench_support.h);
//   - each model (--model, or by default a TinyLlama-1.1B-shaped model with random weights in
//     Q4_0 and Q8_0, written once into build/bench-models/ by make-tinyllama-gguf; F16 goes
//     through the provided kernels' dequantising path at under 1 token/s on two cores, which
//     would make the default run last half an hour, so it is timed with --model): the
//     generate program's bench mode (runner/generate/generate_bench.h) with the chosen
//     decoder: prefill of 128 tokens and 64 decode steps, on 1 and 2 threads, tokens/s per run,
//     each prefill and decode timed from outside the program by the runner's clock (the
//     program stops itself around each: TimeModel);
//   - the probe again after each model;
//   - from those: the weight bytes one decoded token reads, times decode tokens/s, as GB/s and
//     as a share of the probe at the same thread count, the mean of the probes just before and
//     just after the model's runs (decode streams every weight once per token, so that share
//     is how close it runs to the memory's speed); peak resident memory against the file's
//     size; allocations during decode steps (there must be none).
// The medians are what the table compares; the fastest and slowest runs show the noise.
//
// `bench 5 --contention` asks instead how the decoder's threads fare on a machine other
// programs keep busy: decode on 1 and on 2 threads, runs alternated, first on the machine as it
// is, then with one busy loop per online CPU running beside it (processes the bench starts and
// stops), on the KJV model and the TinyLlama-shaped Q4_0 file (or --model). Goals: with the
// loops, 2 threads decode at 0.7x of 1 thread or better; without them, never slower than 1.
// Returns the exit status: 0 measured; 1 the decoder failed while timed (or did not compile);
// 2 it refused the model as bad input; bad usage comes back as a BadUsage error.
#include "decoder_bench.h"

#include "runner/isolation/child_process.h"

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "generate_program.h"
#include "runner/engine/paths.h"
#include "runner/stages/bench_engine.h"
#include "runner/stages/bench_figure.h"
#include "runner/stages/bench_support.h"
#include "runner/stages/04-quant/stage04_paths.h"

namespace wb::stage05 {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kDecoderStage = 5;

// --budget, for this bench: how many timed runs make a figure (default 3).
int RepeatsOf(const BenchOptions& o) {
  return o.budgetSeconds > 0 ? std::max(1, static_cast<int>(o.budgetSeconds)) : 3;
}
constexpr double kProbeBudgetSeconds = 0.5;

struct Rates {
  double median = 0, fastest = 0, slowest = 0;
};

Rates RatesOf(const json& values) {
  std::vector<double> v;
  for (const json& x : values) v.push_back(x.get<double>());
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v.back(), v.front()};
}

std::string RateText(const Rates& r) {
  return fmt::format("{:8.1f} ({:.1f}-{:.1f})", r.median, r.slowest, r.fastest);
}

std::string ModelNameInReport(const std::string& model, const std::string& given, const WorkbookPaths& paths) {
  if (!given.empty()) return given;
  std::error_code ec;
  const fs::path inTree = fs::relative(model, paths.sourceRoot, ec);
  if (ec || inTree.empty() || *inTree.begin() == "..") return model;
  return inTree.string();
}

// The default models: TinyLlama-1.1B's shape, 22 layers, random weights, one file per type
// that stage 4's integer kernels run.
Expected<std::vector<std::string>> DefaultModels(const WorkbookPaths& paths, std::FILE* progress) {
  const fs::path folder = paths.Build("bench-models");
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return SystemError(fmt::format("{}: cannot create it: {}", folder.string(), ec.message()));
  std::vector<std::string> models;
  for (const char* type : {"q4_0", "q8_0"}) {
    const fs::path file = folder / fmt::format("tinyllama-1.1b-shape-{}.gguf", type);
    if (!fs::exists(file)) {
      std::fprintf(progress, "bench: writing %s (once; random weights in TinyLlama-1.1B's shape)\n", file.c_str());
      std::fflush(progress);
      auto made = RunJsonProgram(
          {paths.Build("reference/fixtures/make-tinyllama-gguf"), file.string(), "--layers", "22", "--type", type},
          fmt::format("make-tinyllama-gguf ({})", type), 900);
      if (!made) return made.error();
      if (made->exitStatus != 0) return InternalError(fmt::format("make-tinyllama-gguf could not write {}", file.string()));
    }
    models.push_back(file.string());
  }
  return models;
}

std::string PlotSvg(const json& report) {
  // One bar per model and thread count: decode's share of the probe's bandwidth, with the 80 %
  // line the lesson asks for.
  std::vector<FigureBar> bars;
  for (const json& m : report["models"]) {
    for (const json& r : m["runs"]) {
      const double percent = 100 * r["decode_share_of_probe"].get<double>();
      bars.push_back({.label = fmt::format("{} · {}t", fs::path(m["model"].get<std::string>()).stem().string(),
                                           r["threads"].get<int>()),
                      .value = percent,
                      .valueText = fmt::format("{:.0f} %", percent),
                      .colour = "#4a7ab5",
                      .opacity = 1});
    }
  }
  constexpr double W = 800, fontSize = 13;
  const BarChart chart{.left = 300, .right = W - 20, .top = 46, .barHeight = 20, .gap = 8, .fontSize = fontSize,
                       .figureWidth = W, .reference = 80, .leastRange = 120, .referenceName = "80 %"};
  const DrawnBars drawn = DrawBars(chart, bars);
  return SvgOpen(W, drawn.bottom + 12, fontSize) +
         "<text x=\"10\" y=\"22\">Decode: weight bytes read per second, as a share of the read-bandwidth probe</text>\n" +
         drawn.svg + "</svg>\n";
}

}  // namespace

// One model through the generate program's bench mode (runner/generate/generate_bench.h),
// confined as check's child is, seeing only the model, running what `asked` says. A
// decoder that fails while timed has printed its message; the bench's exit status is then 1,
// or 2 where the decoder refused the model as bad input.
//
// The program stops itself around each timed prefill and decode (--bench-stops), and each is
// timed by the runner's clock (ProgramLimits::timedSpans): the rates in the report are those,
// in place of the program's own. A run whose stops are not two a timed phase, prefill then
// decode for each run of each thread count, gets no figure: the decoder is linked into the
// program, and a stop of its own would end a span early.
struct TimedModel {
  int exitStatus = kExitPass;
  json report;
};

// What TimeModel asks the program for: a session per thread count, in order, each with
// `repeats` timed runs of a `prefill`-token prompt and `decode` steps (0: the program's default).
struct AskedRuns {
  std::vector<int> threads = {1, 2};
  int repeats = 3;
  int prefill = 0;
  int decode = 0;
};
// The bench flags that ask for them (runner/generate/generate_bench.h).
std::vector<std::string> BenchFlags(const AskedRuns& asked) {
  std::string threads;
  for (int t : asked.threads) threads += fmt::format("{}{}", threads.empty() ? "" : ",", t);
  std::vector<std::string> flags = {"--bench-threads", threads, "--bench-repeats", std::to_string(asked.repeats)};
  if (asked.prefill > 0) flags.insert(flags.end(), {"--bench-prefill", std::to_string(asked.prefill)});
  if (asked.decode > 0) flags.insert(flags.end(), {"--bench-decode", std::to_string(asked.decode)});
  return flags;
}

// The report's rates, replaced by the runner's spans (prefill, decode, prefill, ... in the
// order of the runs the runner asked for): "" when they fit, else why not. The count of spans
// is the runner's own, not the report's: the report is printed by a program the decoder is
// linked into.
std::string UseOutsideTiming(json& report, const ProgramRun& ran, const AskedRuns& asked) {
  const size_t phases = 2 * asked.threads.size() * static_cast<size_t>(asked.repeats);
  bool shaped = report.contains("runs") && report["runs"].is_array() && report["runs"].size() == asked.threads.size();
  for (size_t i = 0; shaped && i < asked.threads.size(); ++i) {
    const json& run = report["runs"][i];
    shaped = run.value("threads", 0) == asked.threads[i] &&
             run.value("prefill_tokens_per_second", json::array()).size() == static_cast<size_t>(asked.repeats) &&
             run.value("decode_tokens_per_second", json::array()).size() == static_cast<size_t>(asked.repeats);
  }
  if (!shaped) return "the bench program's report does not hold the runs the bench asked for";
  if (ran.spanSeconds.size() != phases || ran.stops != 2 * static_cast<int>(phases)) {
    return fmt::format("the bench program stopped itself {} times where its {} timed phases make {}: the decoder "
                       "stopped its own process while it was timed, and no figure is printed for that",
                       ran.stops, phases, 2 * phases);
  }
  const double prefill = report.value("prefill", 0), decode = report.value("decode", 0);
  size_t next = 0;
  for (json& run : report["runs"]) {
    json prefillRates = json::array(), decodeRates = json::array();
    for (size_t r = 0; r < run["prefill_tokens_per_second"].size(); ++r) {
      prefillRates.push_back(prefill / std::max(ran.spanSeconds[next++], 1e-9));
      decodeRates.push_back(decode / std::max(ran.spanSeconds[next++], 1e-9));
    }
    // The program's own figures stay beside the runner's, for whoever compares the two clocks.
    run["inside"] = {{"prefill_tokens_per_second", run["prefill_tokens_per_second"]},
                     {"decode_tokens_per_second", run["decode_tokens_per_second"]}};
    run["prefill_tokens_per_second"] = prefillRates;
    run["decode_tokens_per_second"] = decodeRates;
  }
  report["timed_from"] = "outside";
  return "";
}

Expected<TimedModel> TimeModel(const GenerateBinary& program, const std::string& model, const AskedRuns& asked,
                               std::FILE* progress) {
  const std::vector<std::string> readable = ModelReadablePaths(model);
  std::vector<std::string> argv = {program.path, "--model", readable.front(), "--bench", "--bench-stops", "--cache",
                                   "f16", "--decoder-name", program.decoderName};
  const std::vector<std::string> flags = BenchFlags(asked);
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto confined = RunConfinedProgram(
      argv,
      {.wallSeconds = 3600, .memoryBytes = 0, .readablePaths = readable, .kernelVersion = "", .timedSpans = true},
      -1);
  if (!confined) return confined.error();
  if (confined->timedOut) {
    return SystemError(fmt::format("the decoder's bench on {} ran past 3600 s and was stopped", model));
  }
  json printed = json::parse(confined->stdoutText, nullptr, false);
  if (confined->exitStatus != 0 || !printed.is_object()) {
    std::fprintf(progress, "bench: %s failed while timed on %s (its message is above)\n", program.decoderName.c_str(),
                 model.c_str());
    return TimedModel{confined->exitStatus == 2 ? kExitBadInput : kExitFail, nullptr};
  }
  if (const std::string wrong = UseOutsideTiming(printed, *confined, asked); !wrong.empty()) {
    std::fprintf(stderr, "workbook: %s, on %s.\n", wrong.c_str(), model.c_str());
    return TimedModel{kExitFail, nullptr};
  }
  return TimedModel{kExitPass, std::move(printed)};
}

// Busy loops, one process each, running from construction to destruction: the other programs
// of a shared machine, as far as the scheduler can tell (each wants a whole CPU, at the
// default priority). They are stopped on every way out of the scope that started them.
class BusyLoops {
 public:
  explicit BusyLoops(int count) {
    for (int i = 0; i < count; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        for (;;) asm volatile("" ::: "memory");  // spins, and is not optimised away
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~BusyLoops() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  BusyLoops(const BusyLoops&) = delete;
  BusyLoops& operator=(const BusyLoops&) = delete;
  int running() const { return static_cast<int>(pids_.size()); }

 private:
  std::vector<pid_t> pids_;
};

// Decode tokens/s per thread count ("1", "2") of one bench-mode report: the runner's, or with
// `inside` the program's own (UseOutsideTiming keeps them).
json DecodeRatesByThreads(const json& report, bool inside = false) {
  json rates = json::object();
  for (const json& run : report["runs"]) {
    json& list = rates[std::to_string(run["threads"].get<int>())];
    if (list.is_null()) list = json::array();
    for (const json& r : (inside ? run["inside"] : run)["decode_tokens_per_second"]) list.push_back(r);
  }
  return rates;
}

// The end of either report: its goals, then on stdout the JSON alone, or the footnote and the
// goals' table (for a student's decoder, headed as the goals the solution was written to).
void FinishReport(json& report, const std::vector<SpeedGoal>& goals, const BenchOptions& o, const std::string& footnote,
                  const std::string& forStudents) {
  report["goals"] = GoalsJson(goals);
  if (o.format == "json") {
    std::puts(report.dump(2).c_str());
    return;
  }
  std::printf("\n%s\n", footnote.c_str());
  PrintGoals(o.solutions ? "The solution's goals, in this run:"
                         : "The goals the solution was written to, with your figures" + forStudents + ":",
             goals);
}

Expected<int> RunContentionBench(const BenchOptions& o, const GenerateBinary& program, const WorkbookPaths& paths,
                       std::FILE* progress) {
  std::vector<std::string> models;
  if (!o.model.empty()) {
    models = {o.model};
  } else {
    auto defaults = DefaultModels(paths, progress);
    if (!defaults) return defaults.error();
    models = {paths.Source("data/models/kjv-llama-2m/model-q8_0.gguf"), defaults->front()};
  }
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int loops = static_cast<int>(std::max(1L, cpus));
  const int alternations = std::max(RepeatsOf(o), 7);
  json report = {{"stage", kDecoderStage},
                 {"mode", "contention"},
                 {"decoder", program.decoderName},
                 {"machine", MachineJson()},
                 {"busy_loops", loops},
                 {"timed_from", "outside"},
                 {"models", json::array()}};
  if (o.format != "json") {
    std::printf("\n%s, decode on 1 and 2 threads, %d runs each, alternated: on this machine as it is, then with %d "
                "busy loop%s running beside it (one per online CPU)\n\n",
                program.decoderName.c_str(), alternations, loops, loops == 1 ? "" : "s");
    std::printf("%-34s %6s  %-24s %-24s %6s  %-24s %-24s %6s\n", "model", "steps", "as is: 1 thread, tok/s",
                "2 threads", "2t/1t", "busy: 1 thread", "2 threads", "2t/1t");
    std::fflush(stdout);
  }
  std::vector<SpeedGoal> goals;
  for (const std::string& model : models) {
    // A small model decodes hundreds of steps in the time a large one decodes a few: each run is
    // long enough to span many of the scheduler's time slices either way (the KJV model's 480
    // steps after the 16-token prompt fill its context of 512 but for 16).
    std::error_code ec;
    const uintmax_t bytes = fs::is_regular_file(model, ec) ? fs::file_size(model, ec) : 0;
    const int steps = bytes > 0 && bytes < (64u << 20) ? 480 : 32;
    AskedRuns args{.threads = {}, .repeats = 1, .prefill = 16, .decode = steps};
    for (int i = 0; i < alternations; ++i) args.threads.insert(args.threads.end(), {1, 2});
    auto asIs = TimeModel(program, model, args, progress);
    if (!asIs) return asIs.error();
    if (asIs->exitStatus != kExitPass) return asIs->exitStatus;
    Expected<TimedModel> busy = TimedModel{};
    int running = 0;
    {
      BusyLoops busyLoops(loops);
      running = busyLoops.running();
      busy = TimeModel(program, model, args, progress);
    }
    if (!busy) return busy.error();
    if (busy->exitStatus != kExitPass) return busy->exitStatus;
    if (running != loops) {
      return SystemError(fmt::format("could start only {} of {} busy loops", running, loops));
    }
    json entry = {{"model", ModelNameInReport(model, o.model, paths)},
                  {"decode_steps", steps},
                  {"as_is", DecodeRatesByThreads(asIs->report)},
                  {"busy", DecodeRatesByThreads(busy->report)},
                  {"inside",
                   {{"as_is", DecodeRatesByThreads(asIs->report, true)},
                    {"busy", DecodeRatesByThreads(busy->report, true)}}}};
    const Rates quiet1 = RatesOf(entry["as_is"]["1"]), quiet2 = RatesOf(entry["as_is"]["2"]);
    const Rates busy1 = RatesOf(entry["busy"]["1"]), busy2 = RatesOf(entry["busy"]["2"]);
    entry["as_is_ratio"] = quiet2.median / quiet1.median;
    entry["busy_ratio"] = busy2.median / busy1.median;
    const std::string name = fs::path(model).filename().string();
    goals.push_back({fmt::format("{}, as is: 2 threads over 1", name), quiet2.median / quiet1.median, 1.0, "x"});
    goals.push_back({fmt::format("{}, {} busy loops: 2 threads over 1", name, loops), busy2.median / busy1.median, 0.7,
                     "x"});
    if (o.format != "json") {
      std::printf("%-34s %6d  %-24s %-24s %6.2f  %-24s %-24s %6.2f\n", name.c_str(),
                  steps, RateText(quiet1).c_str(), RateText(quiet2).c_str(), quiet2.median / quiet1.median,
                  RateText(busy1).c_str(), RateText(busy2).c_str(), busy2.median / busy1.median);
      std::fflush(stdout);
    }
    report["models"].push_back(entry);
  }
  FinishReport(report, goals, o,
               "(tokens/s: the median of the runs, with the slowest and fastest; a run decodes the steps after a "
               "prompt of 16 tokens, each timed run after an untimed one in the same process)",
               "");
  return kExitPass;
}

Status CheckDecoderBenchOptions(const BenchOptions& o) {
  if (o.mine && o.solutions) return BadUsage("--mine and --solutions: choose one");
  if (o.contention && !o.plotPath.empty()) {
    return BadUsage("--plot draws bench 5's bandwidth figure, which --contention does not measure");
  }
  if (!o.model.empty() && !fs::exists(o.model)) return BadUsage(fmt::format("{}: no such model file or folder", o.model));
  if (!o.plotPath.empty()) return CheckPlotWritable(o.plotPath);  // before anything is measured
  return Status::Ok();
}

Expected<int> RunDecoderBench(const BenchOptions& o, const StageContext& context) {
  const WorkbookPaths& paths = context.paths;
  std::FILE* progress = o.format == "json" ? stderr : stdout;
  if (Status usage = CheckDecoderBenchOptions(o); !usage.ok()) return usage.error();

  auto program = GenerateProgram({.mine = !o.solutions, .solutions = o.solutions, .kernels = o.kernels,
                                  .stagesDir = o.stagesDir});
  if (!program) return program.error();
  if (program->path.empty()) return kExitFail;
  if (o.contention) return RunContentionBench(o, *program, paths, progress);
  std::vector<std::string> models;
  if (o.model.empty()) {
    auto defaults = DefaultModels(paths, progress);
    if (!defaults) return defaults.error();
    models = *defaults;
  } else {
    models = {o.model};
  }

  // The probe, measured before the first model and again after each: a model's share is of
  // the mean of the two probes around its runs, so a machine whose other load changes during
  // the bench is compared with what it gave while that model ran.
  auto cache = LastLevelCache();
  if (!cache) return cache.error();
  // The probe's buffer lives where the model's weights do: private anonymous memory with huge
  // pages asked for (the generate program reads the file into such memory, mapped_file.h).
  const uint64_t wantedProbeBytes = MemoryPassBytes(*cache);
  uint64_t probeBytes = wantedProbeBytes;  // as the yardstick rounded it
  uint64_t probeHugeBytes = 0;             // of which on huge pages
  using ProbeRates = std::array<double, 2>;  // GB/s on 1 and 2 threads
  auto measureProbe = [&]() -> Expected<ProbeRates> {
    auto probe = RunJsonProgram({WB_STAGE04_YARDSTICK, "probe", std::to_string(wantedProbeBytes),
                                 fmt::format("{}", kProbeBudgetSeconds), "huge"},
                                "the bench's yardstick (stage04-yardstick probe)", 300);
    if (!probe) return probe.error();
    const json& printed = probe->json;
    if (probe->exitStatus != 0 || !printed.is_object() || !printed.contains("seconds") ||
        printed["seconds"].size() != 2 || !printed.contains("bytes") || !printed.contains("huge_page_bytes")) {
      return InternalError("the bench's yardstick printed no probe: rebuild the workbook");
    }
    probeBytes = printed["bytes"].get<uint64_t>();
    probeHugeBytes = printed["huge_page_bytes"].get<uint64_t>();
    return ProbeRates{probeBytes / printed["seconds"][0]["median"].get<double>() / 1e9,
                      probeBytes / printed["seconds"][1]["median"].get<double>() / 1e9};
  };
  auto firstProbe = measureProbe();
  if (!firstProbe) return firstProbe.error();
  const ProbeRates probeGbs = *firstProbe;
  ProbeRates probeBefore = probeGbs;

  json report = {{"stage", kDecoderStage},
                 {"decoder", program->decoderName},
                 {"source", o.source},
                 {"machine", MachineJson()},
                 {"last_level_cache", {{"bytes", cache->bytes}, {"source", cache->source}}},
                 {"probe",
                  {{"bytes", probeBytes},
                   {"memory", "huge"},
                   {"huge_page_bytes", probeHugeBytes},
                   {"gb_per_second", {probeGbs[0], probeGbs[1]}}}},
                 {"models", json::array()}};
  if (o.format != "json") {
    std::printf("\n%s\nprobe: read bandwidth %.1f GB/s on 1 thread, %.1f GB/s on 2 at the start, measured again "
                "after each model (a %.0f MiB buffer, at least twice the last-level cache: %s;\n"
                "       in memory like the model's weights, %.0f MiB of it on huge pages)\n\n",
                program->decoderName.c_str(), probeGbs[0], probeGbs[1], probeBytes / 1048576.0, cache->source.c_str(),
                probeHugeBytes / 1048576.0);
    std::printf("%-34s %3s  %-26s %-26s %10s %8s %8s\n", "model", "thr", "prefill 128, tokens/s", "decode 64, tokens/s",
                "weights/tok", "GB/s", "of probe");
    std::fflush(stdout);
  }
  std::vector<SpeedGoal> goals;
  for (const std::string& model : models) {
    auto timed = TimeModel(*program, model, {.threads = {1, 2}, .repeats = RepeatsOf(o)}, progress);
    if (!timed) return timed.error();
    if (timed->exitStatus != kExitPass) return timed->exitStatus;
    json entry = timed->report;
    // The model as the reader knows it: as given to --model, or the default model's path in the
    // workbook's tree, so that a report shared or committed names no machine's folders.
    entry["model"] = ModelNameInReport(model, o.model, paths);
    auto probeAfter = measureProbe();
    if (!probeAfter) return probeAfter.error();
    const ProbeRates around = {(probeBefore[0] + (*probeAfter)[0]) / 2, (probeBefore[1] + (*probeAfter)[1]) / 2};
    entry["probe_gb_per_second"] = {{"before", probeBefore}, {"after", *probeAfter}, {"mean", around}};
    probeBefore = *probeAfter;
    const double weightBytes = entry["weight_bytes_per_token"].get<double>();
    for (json& run : entry["runs"]) {
      const int threads = run["threads"].get<int>();
      const Rates prefill = RatesOf(run["prefill_tokens_per_second"]);
      const Rates decode = RatesOf(run["decode_tokens_per_second"]);
      const double gbs = decode.median * weightBytes / 1e9;
      const double share = gbs / around[std::min(threads, 2) - 1];
      run["decode_gb_per_second"] = gbs;
      run["decode_share_of_probe"] = share;
      // No figure above the roof: weights larger than the caches stream from memory, and a
      // decoder that reads them far faster than the probe reads a buffer was not measured.
      const double roof = std::max({probeGbs[0], probeGbs[1], around[0], around[1]});
      const std::string beyond = BeyondRoofText(
          fmt::format("{}, {} thread{}: decode", fs::path(model).filename().string(), threads, threads == 1 ? "" : "s"),
          gbs, "GB/s of weights", roof, fmt::format("the {:.1f} GB/s this machine reads memory at", roof));
      if (weightBytes > 2.0 * static_cast<double>(cache->bytes) && !beyond.empty()) {
        std::fprintf(progress, "bench: %s\n", beyond.c_str());
        return kExitFail;
      }
      // The goal decode was written to: 80 % of the probe, where the weights stream from memory
      // (a model whose weights fit in the caches reads them faster than the probe can).
      if (weightBytes > 2.0 * static_cast<double>(cache->bytes)) {
        goals.push_back({fmt::format("decode, {}, {} thread{}: share of the probe", fs::path(model).filename().string(),
                                     threads, threads == 1 ? "" : "s"),
                         share * 100, 80, "%"});
      }
      if (o.format != "json") {
        std::printf("%-34s %3d  %-26s %-26s %8.1f MB %8.2f %7.0f %%\n", fs::path(model).filename().c_str(), threads,
                    RateText(prefill).c_str(), RateText(decode).c_str(), weightBytes / 1e6, gbs, share * 100);
      }
    }
    if (o.format != "json") {
      uint64_t allocations = 0;
      bool counted = false;
      for (const json& run : entry["runs"]) {
        if (run.contains("decode_allocations")) {
          counted = true;
          allocations += run["decode_allocations"].get<uint64_t>();
        }
      }
      std::printf("%-34s      probe before and after: %.1f, %.1f GB/s on 1 thread; %.1f, %.1f on 2\n", "",
                  entry["probe_gb_per_second"]["before"][0].get<double>(),
                  entry["probe_gb_per_second"]["after"][0].get<double>(),
                  entry["probe_gb_per_second"]["before"][1].get<double>(),
                  entry["probe_gb_per_second"]["after"][1].get<double>());
      // How much of the process sat on huge pages while it decoded, as the probe's buffer does:
      // the least over its runs, where the program could read it.
      double leastHugeBytes = -1;
      for (const json& run : entry["runs"]) {
        if (!run.contains("huge_page_bytes")) continue;
        const double bytes = run["huge_page_bytes"].get<double>();
        if (leastHugeBytes < 0 || bytes < leastHugeBytes) leastHugeBytes = bytes;
      }
      const std::string huge =
          leastHugeBytes < 0 ? ""
                             : fmt::format(", {:.0f} MiB of it on huge pages while decoding", leastHugeBytes / 1048576.0);
      std::printf("%-34s      peak memory %.0f MiB for a %.0f MiB file%s; decode steps allocated %s\n", "",
                  entry["peak_rss_bytes"].get<double>() / 1048576.0, entry["file_bytes"].get<double>() / 1048576.0,
                  huge.c_str(),
                  counted ? (allocations == 0 ? std::string("nothing") : fmt::format("{} times", allocations)).c_str()
                          : "(not counted in this build)");
      std::fflush(stdout);
    }
    report["models"].push_back(entry);
  }
  FinishReport(report, goals, o,
               fmt::format("(tokens/s: the median of {} runs after a warm-up, with the slowest and fastest, each "
                           "prefill and decode timed by the runner's clock from outside the program; GB/s: "
                           "decode's median times the weight bytes one token reads; of probe: of the mean of the "
                           "probes measured just before and just after that model)",
                           RepeatsOf(o)),
               " (0.5x the solution is fast)");
  if (!o.plotPath.empty()) {
    if (Status s = WritePlot(o.plotPath, PlotSvg(report)); !s.ok()) return s.error();
    std::fprintf(progress, "bench: wrote %s\n", o.plotPath.c_str());
  }
  return kExitPass;
}

}  // namespace wb::stage05
