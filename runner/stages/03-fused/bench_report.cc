// Stage 3's bench report (bench_report.h).
#include "runner/stages/03-fused/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "runner/stages/bench_figure.h"
#include "runner/stages/call_timing_json.h"

namespace wb::stage03 {
// The runner is a unity build: the helpers here live in a namespace of their own, so that none
// meets a name of the driver's.
namespace fused_report {
namespace {

using nlohmann::json;

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

void PrintTextOf(const Machine& m, const std::vector<Row>& rows, const std::vector<VersionRow>& versions,
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
    const std::string time = TimeRange(r.student);
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

json JsonOf(const Machine& m, const std::vector<Row>& rows, const std::vector<VersionRow>& versions,
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

std::string SvgOf(const Machine& m, const std::vector<Row>& rows, const BenchOptions& o) {
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
}  // namespace fused_report

void PrintBenchText(const Machine& m, const std::vector<Row>& rows, const std::vector<VersionRow>& versions,
                    const BenchOptions& o) {
  fused_report::PrintTextOf(m, rows, versions, o);
}
nlohmann::json BenchJson(const Machine& m, const std::vector<Row>& rows, const std::vector<VersionRow>& versions,
                         const BenchOptions& o) {
  return fused_report::JsonOf(m, rows, versions, o);
}
std::string RooflineSvg(const Machine& m, const std::vector<Row>& rows, const BenchOptions& o) {
  return fused_report::SvgOf(m, rows, o);
}

}  // namespace wb::stage03
