// Stage 2's driver: one case = a sequence of decoder_step calls over one KV cache.
//
// Contract: RunDecodeCase prepares the case (decode_case.h), runs each call in its own
// child with the cache the earlier calls left (decode_child.h), checks the twelve
// checkpoints of every call in order (decode_checks.h), then runs the whole sequence as one
// call and checks that every token's output agrees (decode_consistency.h). It returns a
// report for anything the student's code does: a call that crashes, hangs or exits ends
// the case there, and the calls it did not reach are reported as not reached.
#pragma once

#include "../cases/case_file.h"
#include "../report/report.h"
#include "stage_driver.h"

namespace wb {

CaseReport RunDecodeCase(const CaseSpec& spec, const StageContext& context);

// The default wall-clock limit for each call of a case: 10 s, more for long sequences.
double DefaultDecodeTimeLimit(const CaseSpec& spec);

}  // namespace wb
