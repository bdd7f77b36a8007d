// Stage 4's bench report (bench_report.h).
#include "runner/stages/04-quant/bench_report.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "reference/block/block_shape.h"
#include "runner/stages/bench_figure.h"
#include "runner/stages/call_timing_json.h"

namespace wb::stage04::quant_bench {

std::vector<DecodeKernel> DecodeKernels(const Figures& f) {
  auto child = [&f](int m) { return std::array<Timing, 2>{f.child[0][m], f.child[1][m]}; };
  return {{"matmul_q Q8_0", "matmul_q", "q8_0", DecodeBytes(Weight::kQ8_0), f.plan.q8Copies, child(kDecodeQ8_0)},
          {"matmul_q Q4_0", "matmul_q", "q4_0", DecodeBytes(Weight::kQ4_0), f.plan.q4Copies, child(kDecodeQ4_0)},
          {"matmul f32, stage 3 solution", "matmul (stage 3's solution)", "f32", kDecodeFloatBytes, f.plan.f32Copies,
           f.floatDecode}};
}
double Gbs(const DecodeKernel& k, int t) { return static_cast<double>(k.matrixBytes) / k.time[t].median / 1e9; }
std::string ThreadsText(int t) { return kThreadCounts[t] == 1 ? "1 thread" : fmt::format("{} threads", kThreadCounts[t]); }

// The runner is a unity build: the helpers here live in a namespace of their own, so that none
// meets a name of the driver's.
namespace report {
namespace {

using nlohmann::json;

double PercentOfProbe(const Figures& f, const DecodeKernel& k, int t) { return 100.0 * Gbs(k, t) / f.ProbeGbs(t); }
double OverFloat(const Figures& f, const DecodeKernel& k, int t) { return f.floatDecode[t].median / k.time[t].median; }
double Q4OverQ8(const Figures& f, int t) { return f.child[t][kDecodeQ8_0].median / f.child[t][kDecodeQ4_0].median; }

// The goals stage 4's solution was written to, at T = 1 on the 14336 x 4096 matrix: each
// quantized type at 80 % of the probe's read bandwidth on 1 and on 2 threads, and Q4_0, which
// reads 0.53x Q8_0's bytes, at least 1.7x its speed.
std::vector<SpeedGoal> Goals(const Figures& f) {
  std::vector<SpeedGoal> goals;
  const std::vector<DecodeKernel> kernels = DecodeKernels(f);
  for (int t = 0; t < 2; ++t) {
    for (int k = 0; k < 2; ++k) {
      goals.push_back({fmt::format("{}, T = 1, {}: share of the probe", kernels[k].label, ThreadsText(t)),
                       PercentOfProbe(f, kernels[k], t), 80, "%"});
    }
    goals.push_back({fmt::format("Q4_0 over Q8_0, T = 1, {}", ThreadsText(t)), Q4OverQ8(f, t), 1.7, "x"});
  }
  return goals;
}

constexpr double kPrefillOps = 2.0 * kPrefillT * kPrefillRows * kPrefillCols;
double Gops(const Timing& t) { return kPrefillOps / t.median / 1e9; }

// The table: a row's label, then per thread count its time and its figures, side by side.
constexpr int kLabelWidth = 46;

void PrintHeader(const char* label, const std::vector<std::string>& figureNames) {
  std::printf("  %-*s", kLabelWidth, label);
  for (const char* threads : {"1 thread", "2 threads"}) {
    std::printf(" | %-30s", threads);
    for (const std::string& name : figureNames) std::printf(" %8s", name.c_str());
  }
  std::printf("\n");
}

void PrintRow(const std::string& label, const std::array<Timing, 2>& time,
              const std::array<std::vector<std::string>, 2>& figures) {
  std::printf("  %-*s", kLabelWidth, label.c_str());
  for (int t = 0; t < 2; ++t) {
    std::printf(" | %-30s", TimeRange(time[t]).c_str());
    for (const std::string& figure : figures[t]) std::printf(" %8s", figure.c_str());
  }
  std::printf("\n");
}

void PrintTextOf(const Figures& f, const BenchOptions& o) {
  std::printf("Stage 4 bench: %s on this machine\n", o.source.c_str());
  std::printf("  last-level cache: %s, from %s;\n  what must not fit in it (the probe's buffer, each kernel's copies "
              "together) is at least twice that, and 512 MiB\n",
              Mebibytes(f.plan.cache.bytes).c_str(), f.plan.cache.source.c_str());
  std::printf("  each time is the median of its runs (fastest-slowest in brackets)\n\n");

  std::printf("Read bandwidth: the yardstick sums a %s buffer in shared memory, as the kernels' weights are (%s of\n"
              "  it on huge pages)\n",
              Mebibytes(f.probeBytes).c_str(), Mebibytes(f.probeHugeBytes).c_str());
  std::printf("  before and after the kernels at each thread count; %% probe below is of their mean, %.1f and "
              "%.1f GB/s\n",
              f.ProbeGbs(0), f.ProbeGbs(1));
  PrintHeader("", {"GB/s"});
  PrintRow("probe, before", f.probe,
           {{{fmt::format("{:.1f}", f.BeforeGbs(0))}, {fmt::format("{:.1f}", f.BeforeGbs(1))}}});
  PrintRow("probe, after", f.probeAfter,
           {{{fmt::format("{:.1f}", f.AfterGbs(0))}, {fmt::format("{:.1f}", f.AfterGbs(1))}}});
  std::printf("\n");

  std::printf("T = 1 (decode): W %d x %d (Llama-3-8B's FFN gate/up), each run on the next of its copies\n",
              kDecodeRows, kDecodeCols);
  std::printf("  %% probe: the GB/s of weights read over the probe's at the same thread count; x f32: stage 3's\n"
              "  float matmul's time over this one's, i.e. the quantized model's tokens/s over the float one's\n");
  PrintHeader("kernel, copies x size", {"GB/s", "% probe", "x f32"});
  for (const DecodeKernel& k : DecodeKernels(f)) {
    std::array<std::vector<std::string>, 2> figures;
    for (int t = 0; t < 2; ++t) {
      figures[t] = {fmt::format("{:.1f}", Gbs(k, t)), fmt::format("{:.0f}%", PercentOfProbe(f, k, t)),
                    fmt::format("{:.2f}x", OverFloat(f, k, t))};
    }
    PrintRow(fmt::format("{:<29} {} x {:.1f} MB", k.label, k.copies, static_cast<double>(k.matrixBytes) / 1e6), k.time,
             figures);
  }
  std::printf("  Q4_0 over Q8_0: %.2fx the speed on 1 thread, %.2fx on 2\n", Q4OverQ8(f, 0), Q4OverQ8(f, 1));
  PrintGoals(o.solutions ? "The solution's goals at T = 1, in this run:"
                         : "The goals the solution was written to, with your figures (0.5x the solution is fast):",
             Goals(f));
  std::printf("\n");
  if (!f.versions.empty()) {
    std::printf("The solution's kernel versions at T = 1 (WB_KERNEL_VERSION; the rows above ran the fastest this "
                "CPU has)\n");
    PrintHeader("version, type", {"GB/s", "% probe"});
    for (const Figures::Version& v : f.versions) {
      if (!v.ran) {
        std::printf("  %-*s %s\n", kLabelWidth, v.name.c_str(), v.note.c_str());
        continue;
      }
      for (const auto& [type, i, bytes] : {std::tuple{"Q8_0", 0, DecodeBytes(Weight::kQ8_0)},
                                           std::tuple{"Q4_0", 1, DecodeBytes(Weight::kQ4_0)}}) {
        std::array<std::vector<std::string>, 2> figures;
        for (int t = 0; t < 2; ++t) {
          const double gbs = static_cast<double>(bytes) / v.decode[t][i].median / 1e9;
          figures[t] = {fmt::format("{:.1f}", gbs), fmt::format("{:.0f}%", 100.0 * gbs / f.ProbeGbs(t))};
        }
        PrintRow(fmt::format("{}, {}", v.name, type), {v.decode[0][i], v.decode[1][i]}, figures);
      }
    }
    std::printf("\n");
  }

  std::printf("T = %d (prefill): W %d x %d (Llama-3-8B's wo); GOP/s counts 2 integer ops per multiply-add\n", kPrefillT,
              kPrefillRows, kPrefillCols);
  PrintHeader("kernel", {"GOP/s"});
  for (const auto& [label, m] : {std::pair{"matmul_q Q8_0", kPrefillQ8_0}, std::pair{"matmul_q Q4_0", kPrefillQ4_0}}) {
    PrintRow(label, {f.child[0][m], f.child[1][m]},
             {{{fmt::format("{:.1f}", Gops(f.child[0][m]))}, {fmt::format("{:.1f}", Gops(f.child[1][m]))}}});
  }
  std::printf("\n");

  std::printf("quant_block on each weight set (the workbook's block, D %d and F %d: its weights fit in the cache)\n",
              ref::Stage1Shape().model, ref::Stage1Shape().ffn);
  PrintHeader("weight set, T", {"tokens/s"});
  for (int s = 0; s < kBlockSetCount; ++s) {
    for (size_t i = 0; i < kBlockTokens.size(); ++i) {
      const int m = BlockMeasurement(s, static_cast<int>(i));
      std::array<std::vector<std::string>, 2> figures;
      for (int t = 0; t < 2; ++t) figures[t] = {fmt::format("{:.0f}", kBlockTokens[i] / f.child[t][m].median)};
      PrintRow(fmt::format("quant_block {}, T = {}", kBlockSets[s], kBlockTokens[i]), {f.child[0][m], f.child[1][m]},
               figures);
    }
  }
  std::fflush(stdout);
}

json JsonOf(const Figures& f, const BenchOptions& o) {
  json root;
  root["stage"] = 4;
  root["source"] = o.source;
  root["machine"] = MachineJson();
  // How the student's figures were taken (runner/stages/bench_engine.h): each the median of
  // kBatchesTimed batches timed by the runner's clock from outside the child.
  root["timed_from"] = "outside";
  root["threads"] = kThreadCounts;
  root["cache"] = {{"bytes", f.plan.cache.bytes}, {"source", f.plan.cache.source}};
  root["goals"] = GoalsJson(Goals(f));
  root["probe"] = json::array();
  for (int t = 0; t < 2; ++t) {
    root["probe"].push_back({{"threads", kThreadCounts[t]},
                             {"buffer_bytes", f.probeBytes},
                             {"memory", "shared"},
                             {"huge_page_bytes", f.probeHugeBytes},
                             {"time", ReportTimingJson(f.probe[t])},
                             {"time_after", ReportTimingJson(f.probeAfter[t])},
                             {"read_bandwidth_gbs", f.ProbeGbs(t)},
                             {"read_bandwidth_gbs_before", f.BeforeGbs(t)},
                             {"read_bandwidth_gbs_after", f.AfterGbs(t)}});
  }
  json decode = {{"T", 1}, {"rows", kDecodeRows}, {"cols", kDecodeCols}, {"kernels", json::array()}};
  for (const DecodeKernel& k : DecodeKernels(f)) {
    for (int t = 0; t < 2; ++t) {
      decode["kernels"].push_back({{"kernel", k.name},
                                   {"type", k.type},
                                   {"threads", kThreadCounts[t]},
                                   {"copies", k.copies},
                                   {"matrix_bytes", k.matrixBytes},
                                   {"time", ReportTimingJson(k.time[t])},
                                   {"gbs", Gbs(k, t)},
                                   {"percent_of_probe", PercentOfProbe(f, k, t)},
                                   {"speed_over_f32", OverFloat(f, k, t)}});
    }
  }
  decode["q4_0_speed_over_q8_0"] = {Q4OverQ8(f, 0), Q4OverQ8(f, 1)};
  root["decode"] = decode;
  root["versions"] = json::array();
  for (const Figures::Version& v : f.versions) {
    json timed = json::array();
    for (int t = 0; v.ran && t < 2; ++t) {
      for (const auto& [type, i, bytes] : {std::tuple{"q8_0", 0, DecodeBytes(Weight::kQ8_0)},
                                           std::tuple{"q4_0", 1, DecodeBytes(Weight::kQ4_0)}}) {
        const double gbs = static_cast<double>(bytes) / v.decode[t][i].median / 1e9;
        timed.push_back({{"type", type},
                         {"threads", kThreadCounts[t]},
                         {"time", ReportTimingJson(v.decode[t][i])},
                         {"gbs", gbs},
                         {"percent_of_probe", 100.0 * gbs / f.ProbeGbs(t)}});
      }
    }
    root["versions"].push_back({{"name", v.name}, {"ran", v.ran}, {"note", v.note}, {"decode", timed}});
  }
  json prefill = {{"T", kPrefillT}, {"rows", kPrefillRows}, {"cols", kPrefillCols}, {"ops", kPrefillOps},
                  {"kernels", json::array()}};
  for (const auto& [type, m] : {std::pair{"q8_0", kPrefillQ8_0}, std::pair{"q4_0", kPrefillQ4_0}}) {
    for (int t = 0; t < 2; ++t) {
      prefill["kernels"].push_back({{"kernel", "matmul_q"},
                                    {"type", type},
                                    {"threads", kThreadCounts[t]},
                                    {"time", ReportTimingJson(f.child[t][m])},
                                    {"gops", Gops(f.child[t][m])}});
    }
  }
  root["prefill"] = prefill;
  root["block"] = json::array();
  for (int s = 0; s < kBlockSetCount; ++s) {
    for (size_t i = 0; i < kBlockTokens.size(); ++i) {
      const int m = BlockMeasurement(s, static_cast<int>(i));
      for (int t = 0; t < 2; ++t) {
        const Timing& time = f.child[t][m];
        root["block"].push_back({{"set", kBlockSets[s]},
                                 {"T", kBlockTokens[i]},
                                 {"threads", kThreadCounts[t]},
                                 {"time", ReportTimingJson(time)},
                                 {"ms", time.median * 1e3},
                                 {"tokens_per_second", kBlockTokens[i] / time.median}});
      }
    }
  }
  return root;
}

// --- the SVG ---------------------------------------------------------------------------------
// One bar per decode kernel and thread count: its share of the probe's read bandwidth, with
// 100% marked. At T = 1 a kernel can at best read its weights as fast as the probe reads a
// buffer, so the bar's length is how much of the machine the kernel uses.
// The figure takes the page's width (width 100%, a viewBox): 800 units drawn in a 1280 px
// window's text column of about 750 px keep its 12-unit text at 11 px. No value crosses the
// 100% line or the right edge (LayOutBarLabels), which can put a bar's value inside the bar.
std::string SvgOf(const Figures& f, const BenchOptions& o) {
  constexpr double W = 800, fontSize = 12, top = 86;
  std::vector<FigureBar> bars;
  for (const DecodeKernel& k : DecodeKernels(f)) {
    for (int t = 0; t < 2; ++t) {
      bars.push_back({.label = fmt::format("{}, {}", k.label, ThreadsText(t)),
                      .value = PercentOfProbe(f, k, t),
                      .valueText = fmt::format("{:.0f}% ({:.1f} GB/s, {:.2f}x f32)", PercentOfProbe(f, k, t), Gbs(k, t),
                                               OverFloat(f, k, t)),
                      .colour = k.type == std::string("q8_0")   ? "#1f77b4"
                                : k.type == std::string("q4_0") ? "#2ca02c"
                                                                : "#999999",
                      .opacity = t == 0 ? 1 : 0.6});
    }
  }
  const BarChart chart{.left = 300, .right = W - 20, .top = top, .barHeight = 20, .gap = 8, .fontSize = fontSize,
                       .figureWidth = W, .reference = 100, .leastRange = 110, .referenceName = "100% of the probe"};
  const DrawnBars drawn = DrawBars(chart, bars);
  std::string svg = SvgOpen(W, drawn.bottom + 20, fontSize);
  svg += fmt::format("<text x=\"20\" y=\"24\" font-size=\"15\">Stage 4, T = 1: share of the read bandwidth ({:.1f} / "
                     "{:.1f} GB/s on 1 / 2 threads), W {} x {}</text>\n",
                     f.ProbeGbs(0), f.ProbeGbs(1), kDecodeRows, kDecodeCols);
  svg += fmt::format("<text x=\"20\" y=\"44\">{}; each bar the median of its runs</text>\n<text x=\"20\" y=\"60\">"
                     "x f32: the speed over stage 3's float matmul</text>\n",
                     EscapeXml(o.source));
  svg += drawn.svg;
  svg += "</svg>\n";
  return svg;
}

}  // namespace
}  // namespace report

void PrintBenchText(const Figures& f, const BenchOptions& o) { report::PrintTextOf(f, o); }
nlohmann::json BenchJson(const Figures& f, const BenchOptions& o) { return report::JsonOf(f, o); }
std::string BandwidthSvg(const Figures& f, const BenchOptions& o) { return report::SvgOf(f, o); }

}  // namespace wb::stage04::quant_bench
