// The benches' figures (`bench N --plot FILE`), drawn one way: an SVG that takes the page's
// width (width 100%, a viewBox), text escaped, and no text over a line, a bar's end or other
// text. The bar charts of stages 3, 4 and 5 are DrawBars; stage 3's roofline places its names
// with PlotSpace.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runner/report/xml_text.h"  // EscapeXml, for every text a figure holds

namespace wb {

// The opening <svg> of a figure `width` x `height` units that scales to the page's width, with
// a white background.
std::string SvgOpen(double width, double height, double fontSize);

// Horizontal bars, one under another, from `top`, between `left` and `right`; a dashed line at
// `reference`, named under the last bar (`referenceName`); the scale runs from 0 to at least
// `leastRange`, wider where a value's text needs room (LayOutBarLabels).
struct BarChart {
  double left = 0, right = 0, top = 0;
  double barHeight = 20, gap = 8, fontSize = 12;
  double figureWidth = 800;  // the name under the line stays inside it
  double reference = 1, leastRange = 1.5;
  std::string referenceName;
};
struct FigureBar {
  std::string label;      // at the bar's left, right-aligned
  double value = 0;       // the bar's length, in the chart's units
  std::string valueText;  // after the bar, inside it or after the line, wherever it fits
  std::string colour;
  double opacity = 1;
};
struct DrawnBars {
  std::string svg;
  double bottom = 0;  // below the reference's name
};
DrawnBars DrawBars(const BarChart& chart, const std::vector<FigureBar>& bars);

// A rectangle in the figure's units, y down; and a straight line, from (x1, y1) to (x2, y2).
struct Box {
  double left, top, right, bottom;
};
struct Segment {
  double x1, y1, x2, y2;
};
// Text this close to a point, a line or other text reads as touching it.
inline constexpr double kTextClearance = 2;
bool Overlap(const Box& a, const Box& b);
// Whether the segment passes through the box grown by kTextClearance.
bool Crosses(const Segment& s, const Box& b);

// What a name in a plot must keep clear of, and where it may go.
struct PlotSpace {
  Box frame;                   // the plot's axes
  std::vector<Box> taken;      // points and names already placed
  std::vector<Segment> lines;  // lines drawn in the plot

  bool Free(const Box& box) const;
  // The first free place for a width x height name beside `anchor` (a point, or a group of
  // them): below, above, right, left of it, each centred on it and then flush with either of its
  // ends, first touching it and then one and two text lines further off. None when all are taken.
  std::optional<Box> PlaceBeside(const Box& anchor, double width, double height) const;
};

}  // namespace wb
