// JUnit XML: one <testsuite> per case, one <testcase> per checkpoint, so CI systems and
// graders that read JUnit show each checkpoint as a test. A case that crashed or hung gets
// an extra <testcase name="run"> carrying an <error>; a compile error is one <error>.
// Hidden cases carry only names, pass/fail and the error size (the model is redacted).
#include <fmt/format.h>

#include "renderers.h"

namespace wb {
namespace {

// The length of the well-formed UTF-8 sequence at text[at] (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0 when the bytes there are not one.
size_t Utf8SequenceAt(const std::string& text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the allowed range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (at + length > text.size() || byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
  }
  return length;
}

// Text for an XML 1.0 attribute or element: the five markup characters escaped, and every
// byte XML cannot hold (a control character but tab, newline and carriage return, or a byte
// of no well-formed UTF-8 sequence: the student's output may be anything) written as \xNN.
std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const char ch = text[at];
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: {
        const size_t length = Utf8SequenceAt(text, at);
        if (length == 0 || (c < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out.append(text, at, length);
          at += length;
          continue;
        }
      }
    }
    ++at;
  }
  return out;
}

// A hidden checkpoint's failure: never written, or the error's power of ten.
std::string HiddenError(const CheckpointReport& cp) {
  if (cp.total > 0 && cp.unwritten == cp.total) return "never written";
  return fmt::format("max error about {:.0e}", cp.maxAbsError);
}

std::string FailureText(const CheckpointReport& c) {
  std::string text = fmt::format("{} of {} elements off; max error {:.3e}", c.failing, c.total, c.maxAbsError);
  if (c.worst) {
    text += fmt::format("\nworst: {}: expected {:.6g}, got {}", c.worst->where, c.worst->expected,
                        c.worst->gotNote.empty() ? fmt::format("{:.6g}", c.worst->got) : c.worst->gotNote);
  }
  if (c.misconception) text += fmt::format("\n{}\nRead: {}", c.misconception->sentence, c.misconception->lesson);
  if (!c.observation.empty()) text += "\n" + c.observation;
  return text;
}

}  // namespace

std::string RenderJunit(const RunReport& r) {
  const std::string suiteName = fmt::format("workbook stage {}", r.stage);
  std::string body;
  size_t tests = 0, failures = 0, errors = 0;
  if (r.status == RunStatus::kCompileError) {
    tests = errors = 1;
    body += fmt::format("  <testsuite name=\"{}\" tests=\"1\" failures=\"0\" errors=\"1\">\n", Escape(suiteName));
    body += fmt::format("    <testcase classname=\"stage{}\" name=\"compile\">\n", r.stage);
    body += fmt::format("      <error message=\"{} does not compile\">{}</error>\n", Escape(r.source),
                        Escape(r.compilerOutput));
    body += "    </testcase>\n  </testsuite>\n";
  }
  for (const CaseReport& c : r.cases) {
    const bool stopped = c.status == CaseStatus::kCrash || c.status == CaseStatus::kTimeout ||
                         c.status == CaseStatus::kExitedEarly;
    size_t caseFailures = 0;
    for (const auto& cp : c.checkpoints) caseFailures += cp.status == CheckStatus::kFail ? 1 : 0;
    const size_t caseTests = c.checkpoints.size() + (stopped ? 1 : 0);
    tests += caseTests;
    failures += caseFailures;
    errors += stopped ? 1 : 0;
    body += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.6f}\">\n",
                        Escape(fmt::format("{} / case {}", suiteName, c.name)), caseTests, caseFailures,
                        stopped ? 1 : 0, c.callSeconds);
    const std::string classname = Escape(fmt::format("stage{}.{}", r.stage, c.name));
    if (stopped) {
      body += fmt::format("    <testcase classname=\"{}\" name=\"run\">\n", classname);
      body += fmt::format("      <error message=\"{}\" type=\"{}\"/>\n", Escape(c.headline), ToString(c.status));
      body += "    </testcase>\n";
    }
    for (const auto& cp : c.checkpoints) {
      body += fmt::format("    <testcase classname=\"{}\" name=\"{}\"", classname, Escape(cp.name));
      if (cp.status == CheckStatus::kPass) {
        body += "/>\n";
        continue;
      }
      body += ">\n";
      body += fmt::format("      <failure message=\"{}\" type=\"mismatch\">{}</failure>\n",
                          Escape(c.hidden ? HiddenError(cp) : fmt::format("{} of {} elements off", cp.failing, cp.total)),
                          Escape(c.hidden ? HiddenError(cp) : FailureText(cp)));
      body += "    </testcase>\n";
    }
    if (!c.hidden && !c.childOutput.empty()) {
      body += fmt::format("    <system-out>{}</system-out>\n", Escape(c.childOutput));
    }
    body += "  </testsuite>\n";
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n{}</testsuites>\n",
                     Escape(suiteName), tests, failures, errors, body);
}

}  // namespace wb
