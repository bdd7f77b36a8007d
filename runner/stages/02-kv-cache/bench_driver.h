// `bench 2`: what a KV cache buys, measured on the implementation that was just validated.
//
// Contract: for each context length L (default 512 and 4096) the bench children (bench_call.cc,
// built from the student's file or the solution) time a decode step at position L - 1
// against recomputing all L tokens, both with the same decoder_step on the same weights, timed
// from outside by the runner's clock (runner/stages/bench_engine.h: the budget, --budget or
// 6 s, is each measurement's), and this prints the row as soon as both are measured. A context outside 1..MAX_T is a usage
// error; a child that crashes, hangs or exits is reported as the student's code failing.
#pragma once

#include "common/expected.h"
#include "common/packed_weights.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage02 {

// What RunDecodeBench refuses as bad usage, checked before anything runs.
Status CheckDecodeBenchOptions(const BenchOptions& options);
// 0 when every row was measured; 1 when the child failed (the message is printed).
Expected<int> RunDecodeBench(const PackedWeights& weights, const BenchOptions& options, const StageContext& context);

}  // namespace wb::stage02
