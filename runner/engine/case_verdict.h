// The status ladder: how a case's status follows from what its calls did, the same for
// every stage.
//
// Contract: a case that stopped (a call crashed, hung or exited) has that status, with the
// stop's headline and notes; else a write in front of a buffer fails it (the first such
// write is the headline); else a case whose buffers are all untouched is not implemented;
// else it passes when every checkpoint passes. Printing more than the output limit then
// fails a case that would have passed (or was not implemented), and is the headline unless
// something else already is. firstFailure is the first failing checkpoint.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../isolation/child_process.h"
#include "../report/report.h"
#include "../stages/stage_table.h"

namespace wb {

struct CaseStop {
  CaseStatus status = CaseStatus::kCrash;
  std::string headline;
  std::vector<std::string> notes;
};

struct CaseFindings {
  std::optional<CaseStop> stop;
  std::vector<std::string> canaryNotes;  // writes in front of a buffer, in order
  bool allUnwritten = true;              // no call wrote one element of a checked buffer
  std::string outputFlood;               // DescribeOutputFlood of the first call that flooded
  size_t leftoverProcesses = 0;          // processes the calls left running (all killed)
};

// Sets report.status, headline, notes and firstFailure from the findings and checkpoints; a
// case that stopped or printed past the output limit scores 0 (ZeroCase), whatever it wrote.
void Conclude(const CaseFindings& findings, CaseReport& report);

// Every checkpoint of the case scores 0, and the case says why (zeroedBecause, and a note
// when some buffer had scored).
void ZeroCase(CaseReport& report, const std::string& why);

// The checkpoints that pass when nothing was done (the row's guards, and its case
// checkpoints, such as "decode steps allocate nothing") score only when the case's first
// checkpoint passed; else they score 0 and name it (gatedBy). RunCase applies it to every case.
void GateGuards(const StageInfo& stage, CaseReport& report);

// A kernel case whose two runs on the same inputs disagree in `differing` of `total` units
// ("elements", "blocks"), the first at `firstWhere`: a race (or state kept between calls).
// Fails `checkpoint` if it passed (with the race as its observation), else adds the race to
// its observation, and adds it to the case's notes.
void RecordRace(size_t differing, size_t total, std::string_view unit, const std::string& firstWhere,
                CheckpointReport& checkpoint, CaseReport& report);

// The status of a case stopped by a child that ended this way; nullopt when it returned.
std::optional<CaseStatus> StatusOfEnding(ChildOutcome::Ending ending);

// The child's stdout then its stderr, trimmed, as one text.
std::string ChildOutputText(const ChildOutcome& outcome);

}  // namespace wb
