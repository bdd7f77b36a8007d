// Runs a harness executable in a child process over a shared region, under limits; and a
// whole program that runs student code under the same walls (RunConfinedProgram).
//
// Contract: RunInChild always returns an outcome for anything the student's code does
// (returns, crashes, hangs, exits early, floods its output); an error only when the runner
// itself cannot start it (kSystem) or the child's harness refuses the region (kInternal: a
// bug in the workbook, never blamed on the student). The child gets its own process group, so a hang is ended together with
// anything it forked. Its stdout and stderr are kept trimmed: the head and the tail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

#include <string>
#include <vector>

#include "../../common/expected.h"
#include "shared_layout.h"
#include "shared_region.h"

namespace wb {

struct ChildLimits {
  double wallSeconds = 10.0;
  uint64_t memoryBytes = 0;         // address-space limit beyond the shared region; 0: none
  size_t keepOutputBytes = 4096;    // kept from each end of stdout and of stderr
  uint64_t outputLimitBytes = 1 << 20;  // more than this, stdout and stderr together, fails the case
  // Files and folders the child may read besides the system's (absolute paths; stage 5's
  // model), visible read-only at the same path in its view.
  std::vector<std::string> readablePaths;
  // The version of the solution's kernels to run (WB_KERNEL_VERSION in the child's
  // environment, runner/engine/kernel_versions.h); "": the code's own choice.
  std::string kernelVersion;
  // A bench child stops itself (SIGSTOP) when its timed calls begin: the runner writes a fresh
  // random seed for their inputs into the region (shm::Header::timedSeed), resumes it, and
  // times it from there to its end (ChildOutcome::timedSeconds). Any later stop is resumed
  // too, without moving the start or the seed. Off: a child that stops stays stopped until its
  // time limit.
  bool resumeStops = false;
};

// A stream the child wrote, trimmed to its head and tail.
struct CapturedOutput {
  std::string head;
  std::string tail;
  uint64_t totalBytes = 0;
  std::string Text() const;  // head, a "[... N bytes not shown ...]" line, tail
};

struct ChildOutcome {
  enum class Ending {
    kReturned,       // every stage call returned and the harness exited cleanly
    kSignal,         // killed by a signal it raised (segfault, abort, FPE, ...)
    kTimeLimit,      // still running at the wall-clock limit; killed
    kExitedEarly,    // exited (any status) before the stage function returned
  };
  Ending ending = Ending::kReturned;
  int signal = 0;
  int exitStatus = 0;
  double wallSeconds = 0;
  // With ChildLimits::resumeStops: from the child's first stop (the runner's resuming it) to
  // its reaping, by the runner's clock; -1 when it never stopped. What a bench times from
  // outside (runner/stages/bench_engine.h).
  double timedSeconds = -1;
  // With ChildLimits::resumeStops: the seed written at that first stop (0 when it never stopped).
  uint64_t timedSeed = 0;
  double callSeconds = 0;  // time inside the stage function, as the child measured it
  size_t leftoverProcesses = 0;  // processes the child left running, killed after it ended
  shm::ChildReport report{};
  CapturedOutput stdoutText;
  CapturedOutput stderrText;
};

// Kills and reaps the processes that ended up this process's children (it is a subreaper
// once RunInChild has run, or once it asks for it) and run the student's code (the sandbox
// uid's, or any when there is none), but those in `spare`; returns how many. For a process
// that starts runners of its own (`grade`), after one of them was killed.
size_t KillLeftoverProcesses(const std::vector<pid_t>& spare);

// A whole program that runs student code (generate --mine, bench 5's timed decoder), confined
// as a harness is: the same sandbox (runner/isolation/sandbox.h), its own private copy, an
// environment of its own, stdin /dev/null, a process group of its own, the files of
// `readablePaths` readable and nothing else of the workbook's or the caller's. Its stdout is
// passed on to `relayStdout` as it comes (kept in stdoutText when -1), its stderr to this
// process's; an interrupt (Ctrl-C) of this process is passed on to it. wallSeconds 0: no time
// limit (an interactive program, which Ctrl-C ends); memoryBytes 0: no address-space limit.
struct ProgramLimits {
  double wallSeconds = 0;
  uint64_t memoryBytes = 0;
  std::vector<std::string> readablePaths;
  // The version of the solution's kernels to run (WB_KERNEL_VERSION in the child's
  // environment, runner/engine/kernel_versions.h); "": the code's own choice.
  std::string kernelVersion;
  // The program stops itself (SIGSTOP) where each span of timed work begins and again where it
  // ends (runner/harness/stop_self.h): the runner resumes it each time and times each span by
  // its own clock, from the resuming to the next stop (ProgramRun::spanSeconds); the stop wakes
  // the runner at once (SIGCHLD, read from a signalfd). Off: a program that stops stays
  // stopped until its time limit.
  bool timedSpans = false;
};

struct ProgramRun {
  int exitStatus = 0;  // its exit status, or 128 + the signal that ended it
  bool timedOut = false;
  bool interrupted = false;
  std::string stdoutText;  // with relayStdout -1
  // With ProgramLimits::timedSpans: each span's seconds, in order, and how many times the
  // program stopped (twice a span, when it keeps to the protocol; the caller checks the count).
  std::vector<double> spanSeconds;
  int stops = 0;
};

Expected<ProgramRun> RunConfinedProgram(const std::vector<std::string>& argv, const ProgramLimits& limits,
                                        int relayStdout);

Expected<ChildOutcome> RunInChild(const std::string& harnessPath, SharedRegion& region,
                                  const ChildLimits& limits);

}  // namespace wb
