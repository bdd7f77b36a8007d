#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

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

// An error's size in both units the workbook uses: absolute, like the values printed beside
// it, and as a fraction of the buffer's RMS, the unit of the lessons' tables and of the
// tolerance's absolute term. A hidden case's RMS is redacted: absolute only.
std::string ErrorSize(const CheckpointReport& c) {
  std::string size = fmt::format("max |error| {:.1e}", c.maxAbsError);
  if (c.rms > 0) size += fmt::format(" = {:.1e} × RMS", c.maxAbsError / c.rms);
  return size;
}

// A hidden case's error: only its order of magnitude is known (Redact).
std::string HiddenErrorSize(const CheckpointReport& c) {
  if (c.total > 0 && c.unwritten == c.total) return "never written";
  return c.maxAbsError > 0 ? fmt::format("max |error| about {:.0e}", c.maxAbsError) : "max |error| 0";
}

// atol, with the fraction of the RMS it was set as: "0.00081 (1e-03 × RMS)".
std::string AbsoluteTerm(const CheckpointReport& c) {
  if (c.rms <= 0) return fmt::format("{:.2g}", c.atol);
  return fmt::format("{:.2g} (= {:.0e} × RMS)", c.atol, c.atol / c.rms);
}

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

bool StoppedEarly(const CaseReport& c) {
  return c.status == CaseStatus::kCrash || c.status == CaseStatus::kTimeout || c.status == CaseStatus::kExitedEarly;
}

bool Failed(const CheckpointReport& c) { return c.status == CheckStatus::kFail; }

// "a", "a and b", "a, b, c, d and 3 more"
std::string List(const std::vector<std::string>& names, size_t shown = 4) {
  std::string out;
  const size_t listed = names.size() > shown + 1 ? shown : names.size();
  for (size_t i = 0; i < listed; ++i) {
    const bool last = i + 1 == listed && listed == names.size();
    out += (i == 0 ? "" : last ? " and " : ", ") + names[i];
  }
  if (listed < names.size()) out += fmt::format(" and {} more", names.size() - listed);
  return out;
}

std::string Plural(size_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

// The calls of a stage-2 case are "step1.q", "step2.q", ...: a checkpoint's group is the part
// before the dot ("" for stage 1's names and for per-case checkpoints such as sameAsPrefill).
std::string GroupOf(const std::string& name) {
  const size_t dot = name.find('.');
  return dot == std::string::npos ? "" : name.substr(0, dot);
}

std::string ShortName(const std::string& name) {
  const size_t dot = name.find('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

// A case's dependency graph, as its driver recorded it in each checkpoint's computedFrom.
class Graph {
 public:
  explicit Graph(const CaseReport& c) : inputs_(c.checkpoints.size()), feeds_(c.checkpoints.size()) {
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < c.checkpoints.size(); ++i) index[c.checkpoints[i].name] = i;
    for (size_t i = 0; i < c.checkpoints.size(); ++i) {
      for (const auto& input : c.checkpoints[i].computedFrom) {
        const auto at = index.find(input);
        if (at == index.end()) continue;
        inputs_[i].push_back(at->second);
        feeds_[at->second].push_back(i);
      }
    }
  }
  const std::vector<size_t>& Inputs(size_t i) const { return inputs_[i]; }
  // Every checkpoint computed from i, directly or through others, in report order.
  std::vector<size_t> Downstream(size_t i) const {
    std::set<size_t> seen;
    std::vector<size_t> stack = feeds_[i];
    while (!stack.empty()) {
      const size_t next = stack.back();
      stack.pop_back();
      if (!seen.insert(next).second) continue;
      stack.insert(stack.end(), feeds_[next].begin(), feeds_[next].end());
    }
    return {seen.begin(), seen.end()};
  }

 private:
  std::vector<std::vector<size_t>> inputs_;
  std::vector<std::vector<size_t>> feeds_;
};

// A failing buffer that is only a consequence: no mistake of its own is named or seen (its
// step is right for what it was given, or could not be checked on its own), and something
// it is computed from fails.
bool Consequence(const CaseReport& c, const Graph& g, size_t i) {
  const CheckpointReport& cp = c.checkpoints[i];
  if (!Failed(cp) || Unwritten(cp) || cp.misconception || cp.local == LocalStatus::kFail) return false;
  const auto& inputs = g.Inputs(i);
  return std::any_of(inputs.begin(), inputs.end(), [&c](size_t u) { return Failed(c.checkpoints[u]); });
}

// The buffers wrong on their own that a consequence is off because of, by report index.
std::set<size_t> Causes(const CaseReport& c, const Graph& g, size_t i) {
  std::set<size_t> causes;
  std::set<size_t> visited;
  std::vector<size_t> stack = g.Inputs(i);
  while (!stack.empty()) {
    const size_t u = stack.back();
    stack.pop_back();
    if (!visited.insert(u).second || !Failed(c.checkpoints[u])) continue;
    if (Consequence(c, g, u)) {
      stack.insert(stack.end(), g.Inputs(u).begin(), g.Inputs(u).end());
    } else {
      causes.insert(u);
    }
  }
  return causes;
}

std::vector<std::string> NamesOf(const CaseReport& c, const std::set<size_t>& indices) {
  std::vector<std::string> names;
  for (size_t i : indices) names.push_back(c.checkpoints[i].name);
  return names;
}

// How the lines of one checkpoint are printed.
struct LineStyle {
  bool detailed = false;  // worst element, samples and tolerance
  bool hidden = false;
  bool stoppedEarly = false;
  std::string sameMistakeAs;  // an earlier checkpoint already named with this mistake
};

void CheckpointLines(std::string& out, const CheckpointReport& c, const LineStyle& how, size_t nameWidth,
                     const Painter& p) {
  const std::string name = fmt::format("{:<{}}", c.name, nameWidth);
  const std::string shape = how.hidden ? "" : fmt::format("{:<10} ", c.shape);
  if (c.status == CheckStatus::kPass) {
    out += fmt::format("  {}  {} {}{}\n", p.Green("ok  "), name, shape, p.Dim(how.hidden ? HiddenErrorSize(c) : ErrorSize(c)));
    return;
  }
  // TODO means what the lessons say it means, wherever the buffer sits: not one element written.
  if (Unwritten(c) && c.misconception && !how.hidden) {
    // Written, but not where the contract says: the mistake is named, not a TODO.
    out += fmt::format("  {}  {} {}never written where it belongs\n", p.Red("FAIL"), name, shape);
    out += fmt::format("        {} {}\n", p.Yellow(">"), c.misconception->sentence);
    out += fmt::format("          Read: {}\n", c.misconception->lesson);
    return;
  }
  if (Unwritten(c)) {
    const std::string why = how.stoppedEarly ? "not reached: your code stopped before writing any of it"
                            : how.hidden     ? "not implemented yet: nothing of it was written"
                                             : fmt::format("not implemented yet: none of its {} elements was written",
                                                           c.total);
    out += fmt::format("  {}  {} {}{}\n", p.Yellow("TODO"), name, shape, why);
    return;
  }
  std::string summary = Counts(c);
  if (!how.detailed && c.local == LocalStatus::kPass) summary = "off only because an earlier buffer is";
  if (how.hidden) summary = HiddenErrorSize(c);  // nothing that shows the case
  out += fmt::format("  {}  {} {}{}\n", p.Red("FAIL"), name, shape, summary);
  const std::string pad(8, ' ');
  if (how.detailed && c.worst) {
    out += fmt::format("{}worst: {}: expected {}, got {}\n", pad, c.worst->where, Value(c.worst->expected),
                       Got(*c.worst));
    for (const auto& s : c.samples) {
      out += fmt::format("{}also:  {}: expected {}, got {}\n", pad, s.where, Value(s.expected), Got(s));
    }
    out += p.Dim(fmt::format("{}{}; allowed: |got - expected| <= {} + {:.0e} × |expected|", pad, ErrorSize(c),
                             AbsoluteTerm(c), c.rtol)) +
           "\n";
  }
  if (c.misconception && !how.sameMistakeAs.empty()) {
    out += fmt::format("{}{} the same mistake as {} ({})\n", pad, p.Yellow(">"), how.sameMistakeAs, c.misconception->id);
  } else if (c.misconception) {
    out += fmt::format("{}{} {}\n", pad, p.Yellow(">"), c.misconception->sentence);
    out += fmt::format("{}  Read: {}\n", pad, c.misconception->lesson);
  } else if (!c.observation.empty() && (how.detailed || c.local != LocalStatus::kPass)) {
    out += fmt::format("{}{} {}\n", pad, p.Yellow(">"), c.observation);
  }
}

// One case's checkpoints. In full with --verbose and for hidden cases; otherwise, after the
// first failure, each call's buffers that are only consequences share one line, and so do a
// later call's TODO buffers once an earlier call has listed its own. Names are padded to
// nameWidth, the same for every case of a report, so the columns line up down the page.
void CaseLines(std::string& out, const CaseReport& c, const TextStyle& style, const Painter& p, size_t nameWidth) {
  const bool shorten = !style.verbose && !c.hidden;
  const Graph graph(c);
  bool seenFailure = false;
  std::string firstTodoGroup;
  bool seenTodo = false;
  std::map<std::string, std::string> named;  // misconception id -> the first checkpoint named with it
  std::vector<size_t> consequences;
  std::vector<size_t> todos;
  const auto flush = [&](const std::string& group) {
    const std::string of = group.empty() ? "" : " of " + group;
    if (consequences.size() == 1) {
      const CheckpointReport& cp = c.checkpoints[consequences[0]];
      out += fmt::format("  {}  {} {:<10} off only because of {}\n", p.Red("FAIL"),
                         fmt::format("{:<{}}", cp.name, nameWidth), cp.shape,
                         List(NamesOf(c, Causes(c, graph, consequences[0]))));
    } else if (!consequences.empty()) {
      std::vector<std::string> names;
      std::set<size_t> causes;
      for (size_t i : consequences) {
        names.push_back(group.empty() ? c.checkpoints[i].name : ShortName(c.checkpoints[i].name));
        causes.merge(Causes(c, graph, i));
      }
      out += fmt::format("  {}  {} later buffers{} are off only because of {}: {}\n", p.Red("FAIL"),
                         consequences.size(), of, List(NamesOf(c, causes)), List(names, names.size()));
    }
    if (!todos.empty()) {
      std::vector<std::string> names;
      for (size_t i : todos) names.push_back(group.empty() ? c.checkpoints[i].name : ShortName(c.checkpoints[i].name));
      const char* why = StoppedEarly(c) ? "not reached: your code stopped before them"
                                        : "not implemented yet: not one element of them was written";
      out += fmt::format("  {}  {}{} {}: {}\n", p.Yellow("TODO"), Plural(todos.size(), "buffer"), of, why,
                         List(names, names.size()));
    }
    consequences.clear();
    todos.clear();
  };
  // A call of a failing case whose buffers all pass says so in one line.
  std::map<std::string, size_t> failingIn;
  std::map<std::string, size_t> sizeOf;
  std::map<std::string, double> worstOfRms;
  for (const auto& cp : c.checkpoints) {
    const std::string group = GroupOf(cp.name);
    failingIn[group] += Failed(cp) ? 1 : 0;
    ++sizeOf[group];
    if (cp.rms > 0) worstOfRms[group] = std::max(worstOfRms[group], cp.maxAbsError / cp.rms);
  }
  for (size_t i = 0; i < c.checkpoints.size(); ++i) {
    const CheckpointReport& cp = c.checkpoints[i];
    const std::string group = GroupOf(cp.name);
    if (i > 0 && GroupOf(c.checkpoints[i - 1].name) != group) flush(GroupOf(c.checkpoints[i - 1].name));
    if (shorten && c.status != CaseStatus::kPass && !group.empty() && failingIn[group] == 0) {
      if (i == 0 || GroupOf(c.checkpoints[i - 1].name) != group) {
        out += fmt::format("  {}  {}: all {} buffers pass {}\n", p.Green("ok  "), group, sizeOf[group],
                           p.Dim(fmt::format("(max |error| <= {:.1e} × RMS)", worstOfRms[group])));
      }
      continue;
    }
    if (c.status == CaseStatus::kNotImplemented && seenFailure && !style.verbose) break;  // one TODO line is enough
    const bool first = Failed(cp) && !seenFailure;
    seenFailure = seenFailure || Failed(cp);
    if (shorten && Consequence(c, graph, i)) {
      consequences.push_back(i);
      continue;
    }
    if (Failed(cp) && Unwritten(cp) && !cp.misconception) {
      if (!seenTodo) {
        seenTodo = true;
        firstTodoGroup = group;
      }
      if (shorten && group != firstTodoGroup) {
        todos.push_back(i);
        continue;
      }
    }
    LineStyle how{.detailed = !c.hidden && (first || (style.verbose && Failed(cp))),
                  .hidden = c.hidden,
                  .stoppedEarly = StoppedEarly(c),
                  .sameMistakeAs = {}};
    if (cp.misconception) {
      const auto [at, inserted] = named.emplace(cp.misconception->id, cp.name);
      if (!inserted && shorten) how.sameMistakeAs = at->second;
    }
    CheckpointLines(out, cp, how, nameWidth, p);
  }
  if (!c.checkpoints.empty()) flush(GroupOf(c.checkpoints.back().name));
  if (c.status == CaseStatus::kNotImplemented && c.checkpoints.size() > 1 && !style.verbose) {
    out += p.Dim(fmt::format("        ... and the {} buffers after it\n", c.checkpoints.size() - 1));
  }
}

// The sentence that says what to fix first, from the first case that did not pass: its
// first wrong buffer, what the runner knows about it, what is computed from it (by the
// stage's dependency graph, never "everything after it"), and what is wrong without it.
std::string WhatToFix(const RunReport& r, const CaseReport& c) {
  if (c.status == CaseStatus::kNotImplemented) {
    return fmt::format("{} is not implemented yet. Start with the first TODO in {}; the lesson is {}.",
                       c.firstFailure.value_or("the first buffer"), r.source, r.lesson);
  }
  // A crash, a hang, a write in front of a buffer or a flood of output: the case's headline
  // is the most precise thing the runner knows.
  if (!c.headline.empty()) {
    std::string headline = c.headline;
    while (!headline.empty() && headline.back() == '.') headline.pop_back();
    return fmt::format("Fix this first (case {}): {}. Lesson: {}", c.name, headline, r.lesson);
  }
  if (!c.firstFailure) return fmt::format("Case {} failed. Lesson: {}", c.name, r.lesson);
  const std::string& first = *c.firstFailure;
  size_t at = 0;
  while (at < c.checkpoints.size() && c.checkpoints[at].name != first) ++at;
  if (at == c.checkpoints.size()) return fmt::format("Fix {} first (case {}). Lesson: {}", first, c.name, r.lesson);
  const CheckpointReport& cp = c.checkpoints[at];
  if (Unwritten(cp) && !cp.misconception) {
    return fmt::format("{} is not implemented yet (case {}): not one element of it was written. Write it next, in "
                       "{}; the lesson is {}.",
                       first, c.name, r.source, r.lesson);
  }
  std::string text = fmt::format("Fix {} first (case {})", first, c.name);
  if (cp.misconception) {
    text += ": " + cp.misconception->sentence;
  } else if (!cp.observation.empty()) {
    text += ": " + cp.observation + ".";
  } else {
    text += ".";
  }
  const Graph graph(c);
  const std::vector<size_t> downstream = graph.Downstream(at);
  std::vector<std::string> failingDownstream;
  for (size_t i : downstream) {
    if (Failed(c.checkpoints[i])) failingDownstream.push_back(c.checkpoints[i].name);
  }
  if (downstream.empty()) {
    text += fmt::format(" Nothing is computed from {}: the step that writes it is the one to fix.", ShortName(first));
  } else if (!failingDownstream.empty()) {
    text += fmt::format(" {} computed from it {} too, and may be right once it is.",
                        Plural(failingDownstream.size(), "later buffer"), failingDownstream.size() == 1 ? "fails" : "fail");
  }
  // Failures it does not explain: wrong on their own, and not computed from it. A hidden
  // case says no more than which buffers pass.
  std::vector<std::string> same;
  std::vector<std::string> separate;
  for (size_t i = at + 1; i < c.checkpoints.size() && !c.hidden; ++i) {
    const CheckpointReport& other = c.checkpoints[i];
    // A buffer whose step is right for what it was given is off because of something
    // earlier, whatever the graph knows: its own line says so, and the headline must agree.
    if (!Failed(other) || Consequence(c, graph, i) || other.local == LocalStatus::kPass) continue;
    if (std::find(downstream.begin(), downstream.end(), i) != downstream.end()) continue;
    const bool sameMistake = cp.misconception && other.misconception && other.misconception->id == cp.misconception->id;
    (sameMistake ? same : separate).push_back(other.name);
  }
  if (!same.empty()) text += fmt::format(" The same mistake shows at {}.", List(same));
  if (!separate.empty()) {
    text += fmt::format(" {} {} wrong too, and not computed from {}.", List(separate),
                        separate.size() == 1 ? "is" : "are", first);
  }
  text += fmt::format(" Read: {}", cp.misconception ? cp.misconception->lesson : r.lesson);
  return text;
}

}  // namespace

TextStyle DetectTextStyle() {
  const char* noColor = std::getenv("NO_COLOR");
  return TextStyle{.color = isatty(STDOUT_FILENO) == 1 && (noColor == nullptr || noColor[0] == '\0')};
}

// How a case went wrong, as far as telling two cases apart goes: its status, its first
// failing checkpoint, and what the runner found there (the mistake it named, "never written",
// or neither). Two cases with one signature fail the same way, whatever their sizes.
std::string FailureSignature(const CaseReport& c) {
  std::string signature = fmt::format("{}|{}", ToString(c.status), c.firstFailure.value_or(""));
  for (const auto& cp : c.checkpoints) {
    if (!c.firstFailure || cp.name != *c.firstFailure) continue;
    if (cp.misconception) signature += "|" + cp.misconception->id;
    if (Unwritten(cp) && !cp.misconception) signature += "|unwritten";
  }
  return signature;
}

// The few words a case that fails as an earlier one does is shown with.
std::string FailureWords(const CaseReport& c) {
  if (!c.firstFailure) return std::string(ToString(c.status));
  for (const auto& cp : c.checkpoints) {
    if (cp.name != *c.firstFailure) continue;
    if (Unwritten(cp) && !cp.misconception) {
      return fmt::format("{} {}", cp.name, StoppedEarly(c) ? "not reached" : "not implemented yet");
    }
    if (cp.misconception) return fmt::format("{} wrong, {}", cp.name, cp.misconception->id);
  }
  return fmt::format("{} wrong", *c.firstFailure);
}

// The solution's kernel versions, each through the visible suite once more: one line each.
static std::string KernelVersionLines(const RunReport& r, const Painter& p) {
  if (r.kernelVersions.empty()) return "";
  std::string out = "The solution's kernel versions, each through the suite (WB_KERNEL_VERSION):\n";
  for (const KernelVersionRun& v : r.kernelVersions) {
    if (!v.ran) {
      out += fmt::format("  {:<12} {}\n", v.name, p.Dim(v.note));
      continue;
    }
    const std::string counts = fmt::format("{} of {} cases pass{}", v.passed, v.total, v.note.empty() ? "" : ", " + v.note);
    out += fmt::format("  {:<12} {}\n", v.name, v.passed == v.total && v.note.empty() ? p.Green(counts) : p.Red(counts));
  }
  return out;
}

std::string RenderText(const RunReport& r, const TextStyle& style) {
  const Painter p{style.color};
  std::string out;
  out += p.Bold(fmt::format("Stage {}: {}", r.stage, r.stageTitle)) + "\n";
  out += p.Dim(fmt::format("checking {} ({}) on {}", r.source, r.impl, r.caseFile)) + "\n";
  if (r.status == RunStatus::kCompileError) {
    out += "\n" + p.Red(fmt::format("{} does not compile.", r.source)) + " The compiler said:\n\n";
    out += Indent(r.compilerOutput, "  ");
    if (r.compileStopped) {
      // No error to point at: the file asks the compiler for too much work (a constexpr
      // loop, a huge template expansion, an #include of something that never ends).
      out += fmt::format("\nLook for what makes the compiler work that long (compile-time loops or recursion, huge "
                         "constant tables), then run the check again. Lesson: {}\n",
                         r.lesson);
    } else {
      out += fmt::format("\nFix the first error above, then run the check again. Lesson: {}\n", r.lesson);
    }
    return out;
  }
  int failed = 0;
  const CaseReport* firstFailed = nullptr;
  for (const auto& c : r.cases) {
    if (c.status == CaseStatus::kPass) continue;
    ++failed;
    if (firstFailed == nullptr) firstFailed = &c;
  }
  // What to fix comes first, before the cases, so it is on screen even in a long report.
  const std::string fix = firstFailed ? WhatToFix(r, *firstFailed) : "";
  if (!fix.empty()) out += p.Yellow(">") + " " + fix + "\n";
  size_t nameWidth = 10;
  for (const auto& c : r.cases) {
    for (const auto& cp : c.checkpoints) nameWidth = std::max(nameWidth, cp.name.size());
  }
  // Without --verbose a passing case is one line, and so is a case that fails as an earlier
  // case shown in full did (same first failure, same finding, no output of its own to show):
  // a bug that fails every case is read once, not once per case.
  std::map<std::string, std::string> shownFailure;  // signature -> the case shown in full
  bool lastWasOneLine = false;
  for (const auto& c : r.cases) {
    const std::string title = p.Bold(fmt::format("case {}", c.name)) +
                              (c.hidden ? p.Dim(" (hidden)") : p.Dim(fmt::format(" ({})", c.parameters)));
    if (!style.verbose && c.status == CaseStatus::kPass) {
      double worst = 0;
      for (const auto& cp : c.checkpoints) {
        if (cp.rms > 0) worst = std::max(worst, cp.maxAbsError / cp.rms);
      }
      out += (lastWasOneLine ? "" : "\n") + title +
             fmt::format(": {} {}\n", p.Green(fmt::format("all {} buffers pass", c.checkpoints.size())),
                         p.Dim(fmt::format("(max |error| <= {:.1e} × RMS)", worst)));
      lastWasOneLine = true;
      continue;
    }
    if (!style.verbose && c.childOutput.empty()) {
      const auto [earlier, first] = shownFailure.emplace(FailureSignature(c), c.name);
      if (!first) {
        out += (lastWasOneLine ? "" : "\n") + title +
               fmt::format(": {} {}\n", p.Red("fails as"),
                           fmt::format("{} does ({})", earlier->second, FailureWords(c)));
        lastWasOneLine = true;
        continue;
      }
    }
    lastWasOneLine = false;
    out += "\n" + title + "\n";
    if (!c.headline.empty()) out += fmt::format("  {} {}\n", p.Red("!"), c.headline);
    for (const auto& note : c.notes) out += fmt::format("  {} {}\n", p.Dim("-"), note);
    CaseLines(out, c, style, p, nameWidth);
    if (!c.childOutput.empty()) {
      out += p.Dim("  your code printed:") + "\n" + Indent(c.childOutput, "  | ");
    }
  }
  out += "\n";
  if (failed == 0) {
    size_t checkpoints = 0;
    for (const auto& c : r.cases) checkpoints += c.checkpoints.size();
    out += p.Green(fmt::format("Every checkpoint passes: {} in {} case{}.", checkpoints, r.cases.size(),
                               r.cases.size() == 1 ? "" : "s"));
    out += fmt::format(" Stage {} is done.\n", r.stage);
    out += KernelVersionLines(r, p);
    if (!r.nextStage.empty()) out += fmt::format("Next: {}\n", r.nextStage);
    return out;
  }
  if (firstFailed->status != CaseStatus::kNotImplemented) {
    out += p.Red(fmt::format("{} of {} case{} failed.", failed, r.cases.size(), r.cases.size() == 1 ? "" : "s")) + " ";
  }
  out += fix + "\n";
  // The slow cases wait for the quick pass (runner/engine/check.h): say so, so that "1 of 5
  // cases failed" is not read as the whole suite.
  if (!r.casesNotRun.empty()) {
    std::string names;
    for (size_t i = 0; i < r.casesNotRun.size(); ++i) names += (i == 0 ? "" : ", ") + r.casesNotRun[i];
    out += fmt::format("Not run yet: {} ({}), the full pass, runs once every case above passes.\n",
                       Plural(r.casesNotRun.size(), "slow case"), names);
  }
  out += KernelVersionLines(r, p);
  if (!style.verbose) out += p.Dim(fmt::format("./workbook check {} --verbose shows every buffer in full.", r.stage)) + "\n";
  return out;
}

}  // namespace wb
