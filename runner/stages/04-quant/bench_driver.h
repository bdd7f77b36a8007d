// Stage 4's benchmark: the student's quantized kernels against this machine's memory and
// against the float kernel they replace, every figure from one run.
//
// Contract: RunQuantBench measures, on the machine it runs on, on 1 and 2 threads:
//   the probe: the read bandwidth over a buffer larger than the caches (the yardstick,
//     stage04-yardstick, compiled with the stage's flags);
//   decode (T = 1): matmul_q on Llama-3-8B's FFN shape, 14336 x 4096, in Q8_0 and in Q4_0,
//     each run on the next of as many copies as make that buffer's size (MemoryPassBytes): its
//     GB/s of weight bytes, that as a share of the probe's bandwidth at the same thread count,
//     and the ratio to stage 3's solution `matmul` on the same matrix in f32 (the yardstick,
//     cycled the same way): the tokens/s of a quantized model over a float one's; and the
//     speed of Q4_0 over Q8_0;
//   prefill (T = 128): matmul_q on 4096 x 4096 in each type, in GOP/s (2 integer operations
//     per multiply-add);
//   quant_block on each of the three weight sets at T = 1 and T = 128, in ms and tokens/s.
// The student's kernels are timed from outside their children (runner/stages/bench_engine.h):
// a child per batch of calls of one measurement, timed by the runner's clock from the end of
// its untimed call to its end, less the same child with the calls skipped; each figure is the
// median of three batches grown to the budget (--budget or 0.5 s), shown with the fastest and
// slowest. Each timed call has inputs of its own and an output slot: the kept calls' outputs
// must be written, matmul_q's must match the same sums in double at 64 elements of calls drawn
// at random, and quant_block's one drawn call the float64 reference; else no figure. The probe
// and stage 3's float matmul are the trusted yardstick's, timed by stage 3's Measure
// (runner/stages/03-fused/bench_timing.h), and the runner refuses their timings that cannot be
// (not finite, out of order, too few runs). It prints a table with the two thread counts side
// by side (or, with format "json", one JSON object on stdout and its progress on stderr) and,
// with plotPath, writes an SVG whole (a temporary file, then a rename) of each decode kernel's
// share of the probe's bandwidth (those three are bench_report.h's); an unwritable plotPath
// is refused before anything is measured. Returns 0 measured, 1 when the student's code failed
// while timed; a BadUsage error for another stage's options (--tokens, --contexts).
//
// The last-level cache's size comes from sysfs (/sys/devices/system/cpu/cpu0/cache/index*/,
// the highest `level`), else sysconf(_SC_LEVEL3_CACHE_SIZE), else a fixed 32 MiB, and the
// report names which. For the workbook's own tests only, the environment variable
// WB_BENCH_LLC_BYTES (a byte count) takes its place, so a test can shrink every buffer the
// cache's size decides; the report then names that as the source.
//
// Memory: the bench children's region holds all the copies (over 2 GiB when the cache is 512
// MiB), laid out once and shared by every child. A child's address-space limit is the region
// plus the run's memory limit (ChildLimits) and room for one type's copies packed, so the
// student's own allocations keep the usual headroom.
#pragma once

#include "common/expected.h"
#include "quant_call.h"
#include "quant_weights.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage04 {

// `count` blocks of `type` at `out` that a real file could hold, from `seed` (SplitMix64): a
// random normal half scale, then random codes. For timings, whose speed does not depend on the
// values (the bench's matrices, and the leaderboard's).
void FillRandomBlocks(Weight type, size_t count, unsigned char* out, uint64_t seed);

// What RunQuantBench refuses as bad usage, checked before anything runs.
Status CheckQuantBenchOptions(const BenchOptions& options);
Expected<int> RunQuantBench(const QuantWeightSets& sets, const BenchOptions& options, const StageContext& context);

}  // namespace wb::stage04
