// The benches' figures (bench_figure.h).
#include "runner/stages/bench_figure.h"

#include <algorithm>

#include <fmt/format.h>

#include "runner/stages/bench_support.h"

namespace wb {

std::string SvgOpen(double width, double height, double fontSize) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\" viewBox=\"0 0 {:.0f} {:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"{}\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height, fontSize);
}

DrawnBars DrawBars(const BarChart& chart, const std::vector<FigureBar>& bars) {
  constexpr double kTextGap = 6;
  std::vector<double> values, widths;
  for (const FigureBar& bar : bars) {
    values.push_back(std::max(bar.value, 0.0));
    widths.push_back(TextWidth(bar.valueText, chart.fontSize));
  }
  const double span = chart.right - chart.left;
  const BarLabels labels = LayOutBarLabels(values, widths, chart.reference, chart.leastRange, span, kTextGap);
  auto X = [&](double value) { return chart.left + value / labels.range * span; };
  // The baseline of a bar's text: its middle, less a third of the font for the letters' height.
  const double baseline = chart.barHeight / 2 + chart.fontSize / 3;
  DrawnBars drawn;
  double y = chart.top;
  for (size_t i = 0; i < bars.size(); ++i) {
    const FigureBar& bar = bars[i];
    const std::string text = EscapeXml(bar.valueText);
    std::string value;
    switch (labels.places[i]) {
      case BarLabelPlace::kAfterBar:
        value = fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", X(values[i]) + kTextGap, y + baseline, text);
        break;
      case BarLabelPlace::kInsideBar:
        value = fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">{}</text>",
                            X(values[i]) - kTextGap, y + baseline, TextColourOn(bar.colour, bar.opacity), text);
        break;
      case BarLabelPlace::kAfterReference:
        value = fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", X(chart.reference) + kTextGap, y + baseline,
                            text);
        break;
    }
    drawn.svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>"
                             "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" "
                             "fill-opacity=\"{}\"/>{}\n",
                             chart.left - 8, y + baseline, EscapeXml(bar.label), chart.left, y,
                             X(values[i]) - chart.left, chart.barHeight, EscapeXml(bar.colour), bar.opacity, value);
    y += chart.barHeight + chart.gap;
  }
  // The line's name, centred under it unless that would run past the figure's right edge.
  const double nameX =
      std::min(X(chart.reference), chart.figureWidth - 4 - TextWidth(chart.referenceName, chart.fontSize) / 2);
  drawn.svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\" "
                           "stroke-dasharray=\"4 3\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"middle\">{5}"
                           "</text>\n",
                           X(chart.reference), chart.top - 6, y, nameX, y + chart.fontSize + 4,
                           EscapeXml(chart.referenceName));
  drawn.bottom = y + chart.fontSize + 8;
  return drawn;
}

bool Overlap(const Box& a, const Box& b) {
  return a.left < b.right + kTextClearance && b.left < a.right + kTextClearance && a.top < b.bottom + kTextClearance &&
         b.top < a.bottom + kTextClearance;
}

// Liang and Barsky's clipping: the segment's points are (x1, y1) + t (dx, dy) for t in [0, 1];
// each side of the box (grown by the clearance) cuts the range of t that lies inside it, and the
// segment crosses the box when some of that range is left.
bool Crosses(const Segment& s, const Box& b) {
  const double dx = s.x2 - s.x1, dy = s.y2 - s.y1;
  const double towards[] = {-dx, dx, -dy, dy};
  const double room[] = {s.x1 - (b.left - kTextClearance), (b.right + kTextClearance) - s.x1,
                         s.y1 - (b.top - kTextClearance), (b.bottom + kTextClearance) - s.y1};
  double enter = 0, leave = 1;
  for (int side = 0; side < 4; ++side) {
    if (towards[side] == 0) {
      if (room[side] < 0) return false;  // parallel to this side, and outside it
      continue;
    }
    const double t = room[side] / towards[side];
    if (towards[side] < 0) {
      enter = std::max(enter, t);
    } else {
      leave = std::min(leave, t);
    }
    if (enter > leave) return false;
  }
  return true;
}

bool PlotSpace::Free(const Box& box) const {
  if (box.left < frame.left || box.right > frame.right || box.top < frame.top || box.bottom > frame.bottom) {
    return false;
  }
  for (const Box& t : taken) {
    if (Overlap(box, t)) return false;
  }
  for (const Segment& s : lines) {
    if (Crosses(s, box)) return false;
  }
  return true;
}

std::optional<Box> PlotSpace::PlaceBeside(const Box& anchor, double width, double height) const {
  const double middleX = (anchor.left + anchor.right) / 2, middleY = (anchor.top + anchor.bottom) / 2;
  for (double gap : {kTextClearance + 1, kTextClearance + 1 + height, kTextClearance + 1 + 2 * height}) {
    const double belowTop = anchor.bottom + gap, aboveTop = anchor.top - gap - height;
    const double rightLeft = anchor.right + gap, leftLeft = anchor.left - gap - width;
    const double acrossLefts[] = {middleX - width / 2, anchor.left, anchor.right - width};
    const double downTops[] = {middleY - height / 2, anchor.top, anchor.bottom - height};
    std::vector<Box> tries;
    for (double top : {belowTop, aboveTop}) {
      for (double left : acrossLefts) tries.push_back({left, top, left + width, top + height});
    }
    for (double left : {rightLeft, leftLeft}) {
      for (double top : downTops) tries.push_back({left, top, left + width, top + height});
    }
    for (const Box& box : tries) {
      if (Free(box)) return box;
    }
  }
  return std::nullopt;
}

}  // namespace wb
