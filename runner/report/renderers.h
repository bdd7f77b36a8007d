// Renderers: the same RunReport as text for people or JSON for programs.
#pragma once

#include <string>

#include "report.h"

namespace wb {

struct TextStyle {
  bool color = false;
};

std::string RenderText(const RunReport& report, const TextStyle& style);
std::string RenderJson(const RunReport& report);

// Color only when stdout is a terminal and NO_COLOR is unset (https://no-color.org).
TextStyle DetectTextStyle();

}  // namespace wb
