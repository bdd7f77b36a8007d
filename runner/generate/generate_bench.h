// The generate program's bench mode (`--bench`), which `workbook bench 5` runs on each model
// file: the decoder's prefill and decode speed, as one JSON object on stdout.
//
// Contract: for each thread count of --bench-threads, one DecoderSession over --bench-prefill
// + --bench-decode positions; a warm-up run, then --bench-repeats runs of: a prefill of
// --bench-prefill pseudo-random tokens (SplitMix64, seed 5, so every run and machine feeds
// the same ids) in one call, then --bench-decode decode steps, each fed the previous step's
// most likely token. Prefill and decode are timed apart (the kernel's clock, checked against
// the C library's), each run's rates kept; allocations during decode steps counted
// (allocation_count.h). With --bench-stops the program also stops itself (StopThisProcess,
// runner/harness/stop_self.h) just before and just after each timed prefill and each timed
// decode, in that order, thread count by thread count: the runner, which resumes it each time,
// times those spans by its own clock (ProgramLimits::timedSpans), and its figures are the ones
// `workbook bench 5` prints; the warm-up run is not stopped. Output:
//   {"model", "decoder", "file_bytes", "weight_bytes_per_token", "cache", "prefill", "decode",
//    "runs": [{"threads", "prefill_tokens_per_second": [per run], "decode_tokens_per_second":
//    [per run], "decode_allocations"}], "peak_rss_bytes"}
// A decoder that fails (DecoderSession's problems) exits 1 with the sentence, as generate does.
#pragma once

#include "runner/generate/generate_options.h"

namespace wb::generate {

int RunBench(const GenerateSettings& settings);

}  // namespace wb::generate
