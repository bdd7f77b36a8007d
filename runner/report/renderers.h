// Renderers: the same RunReport as text for people, JSON for scripts, JUnit XML for CI
// systems and Gradescope's results.json for its autograder.
#pragma once

#include <string>

#include "report.h"

namespace wb {

struct TextStyle {
  bool color = false;
  // Every checkpoint in full: no line shared by the buffers that are only consequences of an
  // earlier failure, the worst element and tolerance of every failing buffer.
  bool verbose = false;
};

std::string RenderText(const RunReport& report, const TextStyle& style);
std::string RenderJson(const RunReport& report);
std::string RenderJunit(const RunReport& report);
std::string RenderGradescope(const RunReport& report);

// Color only when stdout is a terminal and NO_COLOR is unset (https://no-color.org).
TextStyle DetectTextStyle();

}  // namespace wb
