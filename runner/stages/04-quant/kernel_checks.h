// Stage 4's kernel cases: quantize_q8_0 and matmul_q on their own, at shapes and values
// chosen to find the mistakes quantized kernels make.
//
// Contract: RunKernelCase generates the case's inputs from its seed, runs the kernel twice in
// one child on the same inputs and starting contents, and checks the first run as one
// checkpoint named after the kernel; two runs that differ in any bit fail it (a race).
//   quantize_q8_0: T rows of `in` floats (in a multiple of 32), whose first blocks are the
//     special blocks below, checked bit for bit against ggml's reference quantizer
//     (quant_checks.h);
//   matmul_q: T rows of Q8_0 activations (the reference quantizer's blocks of random rows)
//     times an out x in matrix of the case's weight type (ggml's reference quantizers of a
//     random matrix), whose first block pair is all extreme codes, so that an integer sum
//     narrower than 32 bits overflows; checked against the exact sum in float64, where only
//     the float sum over blocks may round.
// The special blocks, in this order over the T x in / 32 blocks, as many as the case has:
//   0 all zeros; 1 random, its largest magnitude a negative value; 2 exact ties (d = 1,
//   values k + 0.5); 3 values near 1e-5, whose half scale is subnormal, and one float
//   subnormal; 4 values near 1e5.
#pragma once

#include <span>
#include <string_view>

#include "quant_call.h"
#include "runner/cases/case_file.h"
#include "runner/report/report.h"
#include "runner/stages/stage_driver.h"

namespace wb::stage04 {

// The ids of matmul_q's mistakes the runner can name (for the course self-check), the last,
// activation-scale-not-half, at the block's checkpoints that a matmul makes.
std::span<const std::string_view> MatmulMisconceptionIds();

Expected<CaseReport> RunKernelCase(const CaseSpec& spec, const StageContext& context);

// The leaderboard's run of matmul_q (check 4 --leaderboard; quant_call.h's LeaderboardCall):
// `calls` products at T = 1 on one thread, each on a new row of activations, of an out x in
// matrix of `type` with random blocks, laid out `copies` times and taken in turn so that the
// weights stream from memory. Checked as a case is: every call's row must be written and
// finite, and `sampled` calls, drawn only after the child has returned, must match the exact
// product in float64 within matmul_q's tolerance. The report's wallSeconds is the child's
// whole life, by the runner's clock.
struct MatmulLeaderboardRun {
  Weight type = Weight::kQ4_0;
  int out = 0;
  int in = 0;
  int calls = 0;
  int copies = 1;
  int sampled = 4;
  uint64_t seed = 0;
};
Expected<CaseReport> RunMatmulLeaderboard(const MatmulLeaderboardRun& run, const StageContext& context);

}  // namespace wb::stage04
