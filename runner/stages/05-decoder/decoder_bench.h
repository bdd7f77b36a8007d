// `workbook bench 5`: the whole decoder's speed against this machine's memory bandwidth, and
// with --contention on a machine other programs keep busy (decoder_bench.cc says what it
// measures and how). Stage 5's driver's Bench; `bench` has validated the decoder first.
// The stage's own options travel in BenchOptions (runner/stages/stage_driver.h): --mine,
// --model, --kernels, --contention; --budget is the number of timed runs per figure.
#pragma once

#include "common/expected.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage05 {

// What RunDecoderBench refuses as bad usage, checked before anything runs.
Status CheckDecoderBenchOptions(const BenchOptions& options);
Expected<int> RunDecoderBench(const BenchOptions& options, const StageContext& context);

}  // namespace wb::stage05
