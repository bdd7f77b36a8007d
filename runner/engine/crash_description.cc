#include "crash_description.h"

#include <signal.h>

#include <cstring>

#include <fmt/format.h>

#include "../compare/compare.h"

namespace wb {
namespace {

std::string SignalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "a segmentation fault (SIGSEGV)";
    case SIGBUS: return "a bus error (SIGBUS)";
    case SIGFPE: return "a floating-point or integer arithmetic trap (SIGFPE)";
    case SIGILL: return "an illegal instruction (SIGILL)";
    case SIGABRT: return "an abort (SIGABRT)";
    case SIGTRAP: return "a trap (SIGTRAP)";
    case SIGXCPU: return "the CPU-time limit (SIGXCPU)";
    case SIGKILL: return "SIGKILL (killed from outside, perhaps by the out-of-memory killer)";
    default: return fmt::format("signal {} ({})", sig, strsignal(sig));
  }
}

std::string FpeDetail(int code) {
  switch (code) {
    case FPE_INTDIV: return ": an integer division by zero";
    case FPE_INTOVF: return ": an integer overflow";
    case FPE_FLTDIV: return ": a float division by zero with traps enabled";
    case FPE_FLTOVF: return ": a float overflow with traps enabled";
    case FPE_FLTUND: return ": a float underflow with traps enabled";
    case FPE_FLTINV: return ": an invalid float operation (such as 0/0) with traps enabled";
    default: return "";
  }
}

std::string Elements(int64_t bytes) {
  const int64_t elements = bytes / static_cast<int64_t>(sizeof(float));
  return elements == 1 ? "1 element" : fmt::format("{} elements", elements);
}

std::string FaultPlace(const ChildOutcome& o, const SharedRegion& region, uint64_t memoryLimitBytes) {
  const auto& r = o.report;
  const char* verb = r.faultIsWrite == 1 ? "wrote" : r.faultIsWrite == 0 ? "read" : "accessed memory";
  const char* verbPast = r.faultIsWrite == 1 ? "writing" : r.faultIsWrite == 0 ? "reading" : "accessing";
  if (r.faultInRegion) {
    const RegionLocation at = region.Locate(r.faultOffset);
    const std::string name = at.slot != nullptr ? at.slot->name : "?";
    const int64_t count = at.slot != nullptr ? static_cast<int64_t>(at.slot->dataBytes / sizeof(float)) : 0;
    switch (at.kind) {
      case RegionLocation::Kind::kGuardAfter:
        return fmt::format("your code {} past the end of {}: element {} of a buffer of {} (valid indices 0 to {})",
                           verb, name, count + at.distance / 4, count, count - 1);
      case RegionLocation::Kind::kGuardBefore:
      case RegionLocation::Kind::kSlackBefore:
        return fmt::format("your code {} before the start of {}: {} in front of element 0", verb, name,
                           Elements(at.distance));
      case RegionLocation::Kind::kData:
        return fmt::format("your code wrote into {}, which is an input and read-only (element {})", name,
                           at.distance / 4);
      case RegionLocation::Kind::kHeader:
        return fmt::format("your code {} the runner's own bookkeeping page: a stray pointer", verb);
      case RegionLocation::Kind::kOutside: break;
    }
  }
  std::string place;
  if (r.faultAddress < 65536) {
    place = fmt::format("{} address {:#x}, next to the null pointer", verbPast, static_cast<uint64_t>(r.faultAddress));
  } else {
    place = fmt::format("{} address {:#x}, which is in none of the buffers the runner gave you (a stray pointer "
                        "or an index far out of range)",
                        verbPast, static_cast<uint64_t>(r.faultAddress));
  }
  // The child's own limit also covers the shared region it maps.
  const uint64_t childLimit = memoryLimitBytes + region.totalBytes();
  if (memoryLimitBytes > 0 && r.addressSpaceBytes >= childLimit / 10 * 9) {
    place += fmt::format("; the process had used nearly all of its {} MiB memory limit, so an allocation "
                         "probably returned null",
                         memoryLimitBytes >> 20);
  }
  return place;
}

}  // namespace

std::string DescribeEnding(const ChildOutcome& o, const SharedRegion& region, const std::string& function,
                           double timeLimitSeconds, uint64_t memoryLimitBytes) {
  using Ending = ChildOutcome::Ending;
  switch (o.ending) {
    case Ending::kReturned: return "";
    case Ending::kTimeLimit:
      return fmt::format("{} was still running after {:.3g} s, the time limit, and was stopped: an endless loop, "
                         "or far more work than the case needs",
                         function, timeLimitSeconds);
    case Ending::kExitedEarly:
      if (o.report.phase < shm::kCalling) {
        return fmt::format("your code ended the process (exit status {}) before {} was even called: code that runs "
                           "before main, such as the constructor of a global object, called exit(), quick_exit() or "
                           "_exit()",
                           o.exitStatus, function);
      }
      return fmt::format("your code ended the process (exit status {}) before {} returned: remove the call to "
                         "exit(), quick_exit() or _exit()",
                         o.exitStatus, function);
    case Ending::kSignal: break;
  }
  const auto& r = o.report;
  // A rule the file broke, which the harness stopped on (harness.h, FailYourFile).
  if (r.signal == SIGABRT && std::strncmp(r.note, "your file", 9) == 0) {
    return std::string(r.note, strnlen(r.note, sizeof(r.note)));
  }
  std::string text = fmt::format("{} crashed with {}", function, SignalName(o.signal));
  if ((r.signal == SIGSEGV || r.signal == SIGBUS) && r.faultNearStack) {
    text += ": a stack overflow: the stack ran out, from a recursion that does not end or a large local array "
            "(put big buffers in a std::vector instead)";
  } else if (r.signal == SIGSEGV || r.signal == SIGBUS) {
    text += ": " + FaultPlace(o, region, memoryLimitBytes);
  } else if (r.signal == SIGFPE) {
    text += FpeDetail(r.signalCode);
  } else if (r.signal == SIGABRT && r.note[0] != '\0') {
    const std::string note(r.note, strnlen(r.note, sizeof(r.note)));
    text += ": " + note;
    if (note.find("bad_alloc") != std::string::npos && memoryLimitBytes > 0) {
      text += fmt::format(" (your code reached its memory limit of {} MiB)", memoryLimitBytes >> 20);
    }
  } else if (o.signal == SIGKILL && memoryLimitBytes > 0) {
    text += fmt::format(" (its memory limit is {} MiB)", memoryLimitBytes >> 20);
  }
  if (r.phase < shm::kCalling) text += " (before your function was even called)";
  return text;
}

std::string DescribeOutputFlood(const ChildOutcome& outcome, uint64_t limitBytes) {
  const uint64_t printed = outcome.stdoutText.totalBytes + outcome.stderrText.totalBytes;
  if (limitBytes == 0 || printed <= limitBytes) return "";
  return fmt::format("your code printed {} KiB, more than the {} KiB limit: remove the debugging output (what it "
                     "printed is trimmed below)",
                     printed >> 10, limitBytes >> 10);
}

std::vector<std::string> DescribeCanaryDamage(const SharedRegion& region) {
  std::vector<std::string> notes;
  for (uint32_t i = 0; i < region.bufferCount(); ++i) {
    int64_t farthest = 0;
    const size_t damaged = region.CanaryDamage(region.slot(i), &farthest);
    if (damaged == 0) continue;
    notes.push_back(fmt::format("your code wrote before the start of {}: memory up to {} in front of element 0 "
                                "was changed",
                                region.slot(i).name, Elements(farthest < 4 ? 4 : farthest)));
  }
  return notes;
}

std::string DescribeWritten(SharedRegion& region, std::span<const uint32_t> outputs) {
  std::string text;
  for (uint32_t slot : outputs) {
    const std::string name = region.slot(slot).name;
    const auto values = region.SlotFloats(slot);
    size_t written = 0;
    for (float v : values) written += StateOf(v) != ElementState::kUnwritten ? 1 : 0;
    std::string part;
    if (written == values.size()) {
      part = fmt::format("{} complete", name);
    } else if (written == 0) {
      part = fmt::format("{} not written", name);
    } else {
      part = fmt::format("{} {} of {} elements written", name, written, values.size());
    }
    text += (text.empty() ? "" : ", ") + part;
  }
  return text;
}

CaseFindings FindingsOfChild(const ChildOutcome& outcome, SharedRegion& region, const std::string& function,
                             const ChildLimits& limits, std::span<const uint32_t> outputs, bool allUnwritten) {
  CaseFindings findings;
  findings.allUnwritten = allUnwritten;
  findings.canaryNotes = DescribeCanaryDamage(region);
  findings.outputFlood = DescribeOutputFlood(outcome, limits.outputLimitBytes);
  findings.leftoverProcesses = outcome.leftoverProcesses;
  if (const auto stopped = StatusOfEnding(outcome.ending)) {
    CaseStop stop{.status = *stopped,
                  .headline = DescribeEnding(outcome, region, function, limits.wallSeconds, limits.memoryBytes),
                  .notes = findings.canaryNotes};
    stop.notes.push_back("when it stopped: " + DescribeWritten(region, outputs));
    findings.stop = std::move(stop);
  }
  return findings;
}

}  // namespace wb
