#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "renderers.h"

namespace wb {
namespace {

struct Painter {
  bool color;
  std::string Paint(const char* code, const std::string& text) const {
    return color ? fmt::format("\033[{}m{}\033[0m", code, text) : text;
  }
  std::string Green(const std::string& t) const { return Paint("32", t); }
  std::string Red(const std::string& t) const { return Paint("1;31", t); }
  std::string Yellow(const std::string& t) const { return Paint("33", t); }
  std::string Bold(const std::string& t) const { return Paint("1", t); }
  std::string Dim(const std::string& t) const { return Paint("2", t); }
};

std::string Value(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : fmt::format("{}", v); }

std::string Got(const ElementDetail& d) { return d.gotNote.empty() ? Value(d.got) : d.gotNote; }

std::string Indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

bool Unwritten(const CheckpointReport& c) { return c.total > 0 && c.unwritten == c.total; }

std::string Counts(const CheckpointReport& c) {
  std::string s = fmt::format("{} of {} elements off", c.failing, c.total);
  std::vector<std::string> parts;
  if (c.unwritten > 0) parts.push_back(fmt::format("{} never written", c.unwritten));
  if (c.fromUnwritten > 0) parts.push_back(fmt::format("{} computed from unwritten elements", c.fromUnwritten));
  if (c.nanCount > 0) parts.push_back(fmt::format("{} NaN", c.nanCount));
  if (c.infCount > 0) parts.push_back(fmt::format("{} inf", c.infCount));
  if (!parts.empty()) {
    s += " (";
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
    s += ")";
  }
  return s;
}

void CheckpointLines(std::string& out, const CheckpointReport& c, bool detailed, bool hidden, bool stoppedEarly,
                     size_t nameWidth, const Painter& p) {
  const std::string name = fmt::format("{:<{}}", c.name, nameWidth);
  const std::string shape = hidden ? "" : fmt::format("{:<10} ", c.shape);
  if (c.status == CheckStatus::kPass) {
    out += fmt::format("  {}  {} {}{}\n", p.Green("ok  "), name, shape, p.Dim(fmt::format("max error {:.1e}", c.maxAbsError)));
    return;
  }
  if (Unwritten(c) && stoppedEarly) {
    out += fmt::format("  {}  {} {}not reached: your code stopped before writing any of it\n", p.Dim("----"), name,
                       shape);
    return;
  }
  if (Unwritten(c) && detailed) {
    out += fmt::format("  {}  {} {}not implemented yet: none of its {} elements was written\n", p.Yellow("TODO"), name,
                       shape, c.total);
    return;
  }
  std::string summary = Counts(c);
  if (!detailed && c.local == LocalStatus::kPass) summary = "off only because an earlier buffer is";
  if (hidden) summary = fmt::format("max error {:.1e}", c.maxAbsError);  // nothing that shows the case
  out += fmt::format("  {}  {} {}{}\n", p.Red("FAIL"), name, shape, summary);
  const std::string pad(8, ' ');
  if (detailed && c.worst) {
    out += fmt::format("{}worst: {}: expected {}, got {}\n", pad, c.worst->where, Value(c.worst->expected),
                       Got(*c.worst));
    for (const auto& s : c.samples) {
      out += fmt::format("{}also:  {}: expected {}, got {}\n", pad, s.where, Value(s.expected), Got(s));
    }
    out += p.Dim(fmt::format("{}allowed: |got - expected| <= {:.2g} + {:.0e} * |expected|", pad, c.atol, c.rtol)) + "\n";
  }
  if (c.misconception) {
    out += fmt::format("{}{} {}\n", pad, p.Yellow(">"), c.misconception->sentence);
    out += fmt::format("{}  Read: {}\n", pad, c.misconception->lesson);
  } else if (!c.observation.empty() && (detailed || c.local != LocalStatus::kPass)) {
    out += fmt::format("{}{} {}\n", pad, p.Yellow(">"), c.observation);
  }
}

}  // namespace

TextStyle DetectTextStyle() {
  const char* noColor = std::getenv("NO_COLOR");
  return TextStyle{.color = isatty(STDOUT_FILENO) == 1 && (noColor == nullptr || noColor[0] == '\0')};
}

std::string RenderText(const RunReport& r, const TextStyle& style) {
  const Painter p{style.color};
  std::string out;
  out += p.Bold(fmt::format("Stage {}: {}", r.stage, r.stageTitle)) + "\n";
  out += p.Dim(fmt::format("checking {} ({}) on {}", r.source, r.impl, r.caseFile)) + "\n";
  if (r.status == RunStatus::kCompileError) {
    out += "\n" + p.Red(fmt::format("{} does not compile.", r.source)) + " The compiler said:\n\n";
    out += Indent(r.compilerOutput, "  ");
    out += fmt::format("\nFix the first error above, then run the check again. Lesson: {}\n", r.lesson);
    return out;
  }
  int failed = 0;
  const CaseReport* firstFailed = nullptr;
  for (const auto& c : r.cases) {
    out += "\n" + p.Bold(fmt::format("case {}", c.name));
    out += c.hidden ? p.Dim(" (hidden)") : p.Dim(fmt::format(" ({})", c.parameters));
    out += "\n";
    if (!c.headline.empty()) out += fmt::format("  {} {}\n", p.Red("!"), c.headline);
    for (const auto& note : c.notes) out += fmt::format("  {} {}\n", p.Dim("-"), note);
    bool seenFailure = false;
    size_t nameWidth = 10;
    for (const auto& cp : c.checkpoints) nameWidth = std::max(nameWidth, cp.name.size());
    for (const auto& cp : c.checkpoints) {
      const bool first = cp.status == CheckStatus::kFail && !seenFailure;
      if (c.status == CaseStatus::kNotImplemented && seenFailure) break;  // one TODO line is enough
      const bool stoppedEarly = c.status == CaseStatus::kCrash || c.status == CaseStatus::kTimeout ||
                                c.status == CaseStatus::kExitedEarly;
      CheckpointLines(out, cp, first && !c.hidden, c.hidden, stoppedEarly, nameWidth, p);
      seenFailure = seenFailure || cp.status == CheckStatus::kFail;
    }
    if (c.status == CaseStatus::kNotImplemented && c.checkpoints.size() > 1) {
      out += p.Dim(fmt::format("        ... and the {} buffers after it\n", c.checkpoints.size() - 1));
    }
    if (!c.childOutput.empty()) {
      out += p.Dim("  your code printed:") + "\n" + Indent(c.childOutput, "  | ");
    }
    if (c.status != CaseStatus::kPass) {
      ++failed;
      if (firstFailed == nullptr) firstFailed = &c;
    }
  }
  out += "\n";
  if (failed == 0) {
    size_t checkpoints = 0;
    for (const auto& c : r.cases) checkpoints += c.checkpoints.size();
    out += p.Green(fmt::format("Every checkpoint passes: {} in {} case{}.", checkpoints, r.cases.size(),
                               r.cases.size() == 1 ? "" : "s"));
    out += fmt::format(" Stage {} is done.\n", r.stage);
    if (!r.nextStage.empty()) out += fmt::format("Next: {}\n", r.nextStage);
    return out;
  }
  const CaseReport& c = *firstFailed;
  if (c.status == CaseStatus::kNotImplemented) {
    out += fmt::format("{} is not implemented yet. Start with the first TODO in {}; the lesson is {}.\n",
                       c.firstFailure.value_or("the first buffer"), r.source, r.lesson);
  } else if (c.firstFailure) {
    out += p.Red(fmt::format("{} of {} case{} failed.", failed, r.cases.size(), r.cases.size() == 1 ? "" : "s"));
    out += fmt::format(" The first wrong buffer is {} (case {}): fix it first, since every buffer after it is "
                       "computed from it. Lesson: {}\n",
                       *c.firstFailure, c.name, r.lesson);
  } else {
    out += p.Red(fmt::format("{} of {} case{} failed.", failed, r.cases.size(), r.cases.size() == 1 ? "" : "s"));
    out += fmt::format(" Lesson: {}\n", r.lesson);
  }
  return out;
}

}  // namespace wb
