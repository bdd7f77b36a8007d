// Stage 3's benchmark: the student's kernels against this machine's limits and against what
// they would otherwise use, every figure from one run.
//
// Contract: RunFusedBench measures, on the machine it runs on,
//   the probe: the f32 FMA peak and the read bandwidth over a buffer larger than the caches
//     (MemoryPassBytes in runner/stages/bench_support.h: at least twice the last-level cache,
//     which WB_BENCH_LLC_BYTES sets in the workbook's own tests), on 1 and 2 threads (the
//     yardstick);
//   OpenBLAS at its best: the yardstick is started once per OPENBLAS_CORETYPE this CPU can
//     run, and the fastest core type (by a 512 x 768 x 512 sgemm) times every OpenBLAS figure;
//   for each T and threads 1 and 2: the student's matmul at the block's four projection
//     shapes and fused_block (the bench children, timed from outside: runner/stages/
//     bench_engine.h; each timed call on inputs of its own, the kept calls' outputs checked
//     for elements never written, the matmul's at 64 elements of calls drawn at random against
//     double sums, fused_block's at one drawn call against the float64 block), cblas_sgemm
//     at the same shapes, a block made
//     of cblas_sgemm calls around the solution's attention, stage 1's loop order at the four
//     shapes and the stage-1 solution's decoder_block (one thread);
//   with `solutions`, the solution's matmul versions 1-4 too (the qkv shape, one thread), each
//     validated on the visible suite before it is timed.
// It prints a table (or, with format "json", one JSON object) and, with plotPath, writes an
// SVG: the roofline with each kernel as a point, and the ratios to OpenBLAS as bars (those three
// are bench_report.h's; the measuring is the engine's, runner/stages/bench_engine.h, and this
// driver says what is measured and how each is checked). Returns 0 measured, 1 when the student's code failed while timed.
#pragma once

#include "common/expected.h"
#include "common/packed_weights.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage03 {

// What RunFusedBench refuses as bad usage, checked before anything runs.
Status CheckFusedBenchOptions(const BenchOptions& options);
Expected<int> RunFusedBench(const PackedWeights& weights, const BenchOptions& options, const StageContext& context);

// The floating-point operations of fused_block at T: 2 per multiply-add of its projections
// and of attention's q.k and weights.v (token t reads t + 1 keys).
double FusedBlockFlops(int T);

}  // namespace wb::stage03
