// The benches' figures: where a bar's value label goes so that it crosses neither the reference
// line nor the right edge, the range that makes room for it, the text colour inside a bar, a
// bar chart as drawn (runner/stages/bench_figure.h) and where a name goes in a plot. That each
// bench's own figure keeps its bars and points is quant_bench_test's and fused_cli_test's.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "runner/stages/bench_figure.h"
#include "runner/stages/bench_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace figure_layout_test {

namespace {

using wb::BarLabelPlace;

constexpr double kSpan = 400, kGap = 6, kWidth = 100;

// Where label i lies, from the bars' left edge, at the layout's range.
struct Extent {
  double left, right;
};
Extent LabelExtent(const wb::BarLabels& labels, const std::vector<double>& values, size_t i, double reference) {
  const double end = values[i] / labels.range * kSpan, line = reference / labels.range * kSpan;
  switch (labels.places[i]) {
    case BarLabelPlace::kAfterBar: return {end + kGap, end + kGap + kWidth};
    case BarLabelPlace::kInsideBar: return {end - kGap - kWidth, end - kGap};
    case BarLabelPlace::kAfterReference: break;
  }
  return {line + kGap, line + kGap + kWidth};
}

}  // namespace

TEST_CASE("a bar's value label crosses neither the reference line nor the right edge") {
  const std::vector<double> values = {10, 40, 70, 96, 100, 104, 180};
  const wb::BarLabels labels =
      wb::LayOutBarLabels(values, std::vector<double>(values.size(), kWidth), 100, 110, kSpan, kGap);
  REQUIRE(labels.places.size() == values.size());
  CHECK(labels.range >= 180);
  const double line = 100 / labels.range * kSpan;
  for (size_t i = 0; i < values.size(); ++i) {
    CAPTURE(values[i]);
    const Extent label = LabelExtent(labels, values, i, 100);
    CHECK((label.right <= line || label.left >= line));
    CHECK(label.left >= 0);
    CHECK(label.right <= kSpan);
    if (labels.places[i] == BarLabelPlace::kInsideBar) CHECK(label.left >= 0);  // within the bar
  }
  CHECK(labels.places[0] == BarLabelPlace::kAfterBar);   // short: room before the line
  CHECK(labels.places[3] == BarLabelPlace::kInsideBar);  // just short of the line
  CHECK(labels.places[5] == BarLabelPlace::kAfterBar);   // past the line
  CHECK(labels.places[6] == BarLabelPlace::kAfterBar);
}

TEST_CASE("bars that leave the range alone keep the least range; one past it widens it just enough") {
  const std::vector<double> shortBars = {20, 50};
  CHECK(wb::LayOutBarLabels(shortBars, {kWidth, kWidth}, 100, 110, kSpan, kGap).range == 110);
  const std::vector<double> past = {20, 105};
  const wb::BarLabels labels = wb::LayOutBarLabels(past, {kWidth, kWidth}, 100, 110, kSpan, kGap);
  CHECK(labels.range == doctest::Approx(105 * kSpan / (kSpan - kGap - kWidth)));
  CHECK(LabelExtent(labels, past, 1, 100).right == doctest::Approx(kSpan));
}

TEST_CASE("a short bar near a crowded line puts its label just after the line") {
  // One long bar squeezes the line to the left: a 60% bar is then too short to hold its label
  // and too near the line to have it after the bar.
  const std::vector<double> values = {60, 400};
  const wb::BarLabels labels = wb::LayOutBarLabels(values, {kWidth, kWidth}, 100, 110, kSpan, kGap);
  CHECK(labels.places[0] == BarLabelPlace::kAfterReference);
  CHECK(LabelExtent(labels, values, 0, 100).right <= kSpan);
}

TEST_CASE("text inside a bar is whichever of black and white contrasts more") {
  CHECK(std::string(wb::TextColourOn("#1f77b4")) == "#fff");       // the Q8_0 blue
  CHECK(std::string(wb::TextColourOn("#d62728")) == "#fff");       // stage 3's red
  CHECK(std::string(wb::TextColourOn("#2ca02c")) == "#000");       // green
  CHECK(std::string(wb::TextColourOn("#999999")) == "#000");       // grey
  CHECK(std::string(wb::TextColourOn("#1f77b4", 0.6)) == "#000");  // the blue at 60% over white
  CHECK(std::string(wb::TextColourOn("#000000")) == "#fff");
  CHECK(std::string(wb::TextColourOn("not a colour")) == "#000");
}

// How many times `what` occurs in `text`.
size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("a bar chart draws each bar once, its text escaped, and the reference line where its value lies") {
  CHECK(wb::EscapeXml("a<b & \"c\" > 'd'") == "a&lt;b &amp; &quot;c&quot; &gt; &apos;d&apos;");
  const wb::BarChart chart{.left = 100, .right = 500, .top = 40, .barHeight = 20, .gap = 8, .fontSize = 12,
                           .figureWidth = 520, .reference = 100, .leastRange = 200, .referenceName = "100% <roof>"};
  const std::vector<wb::FigureBar> bars = {
      {.label = "model <a&b>, 1 thread", .value = 50, .valueText = "50%", .colour = "#1f77b4", .opacity = 1},
      {.label = "model <a&b>, 2 threads", .value = 150, .valueText = "150% & more", .colour = "#2ca02c", .opacity = 0.6}};
  const wb::DrawnBars drawn = wb::DrawBars(chart, bars);
  CHECK(Count(drawn.svg, "<rect ") == 2);
  CHECK(Count(drawn.svg, "model &lt;a&amp;b&gt;, ") == 2);
  CHECK(drawn.svg.find("<a&b>") == std::string::npos);
  CHECK(Count(drawn.svg, "150% &amp; more") == 1);
  CHECK(Count(drawn.svg, "100% &lt;roof&gt;") == 1);
  // Both labels fit at the least range, which puts 100 halfway along the 400 units.
  CHECK(drawn.svg.find("<line x1=\"300.0\"") != std::string::npos);
  CHECK(drawn.svg.find("width=\"100.0\"") != std::string::npos);  // 50 of 200
  CHECK(drawn.bottom > chart.top + 2 * (chart.barHeight + chart.gap));
}

TEST_CASE("a name in a plot goes beside its anchor, clear of points, lines and the frame, or nowhere") {
  wb::PlotSpace space{.frame = {0, 0, 200, 100}, .taken = {}, .lines = {}};
  const wb::Box point{90, 40, 100, 50};
  space.taken.push_back(point);
  // A line right under the point: the first place tried (below it) is taken.
  space.lines.push_back({0, 55, 200, 55});
  CHECK(wb::Crosses(space.lines[0], {80, 52, 120, 64}));
  CHECK_FALSE(wb::Crosses(space.lines[0], {80, 60, 120, 72}));
  const std::optional<wb::Box> placed = space.PlaceBeside(point, 30, 12);
  REQUIRE(placed.has_value());
  CHECK(space.Free(*placed));
  CHECK_FALSE(wb::Overlap(*placed, point));
  CHECK(placed->bottom <= point.top);  // above it, the next place tried
  // A frame with no room beside the point: no place.
  const wb::PlotSpace tight{.frame = {85, 35, 105, 55}, .taken = {point}, .lines = {}};
  CHECK_FALSE(tight.PlaceBeside(point, 30, 12).has_value());
}

// Not a figure, but what every bench's probe reads: more than the caches a virtual machine may
// hide, unless a test set the cache's size.
TEST_CASE("a memory pass is twice the last-level cache and at least 512 MiB, unless a test set the size") {
  const uint64_t mib = uint64_t{1} << 20;
  CHECK(wb::MemoryPassBytes({.bytes = 32 * mib, .source = "sysfs"}) == 512 * mib);
  CHECK(wb::MemoryPassBytes({.bytes = 508 * mib, .source = "sysconf"}) == 1016 * mib);
  CHECK(wb::MemoryPassBytes({.bytes = 1 * mib, .source = "WB_BENCH_LLC_BYTES", .setForTest = true}) == 2 * mib);
}

}  // namespace figure_layout_test
