// Tolerances for the nine block checkpoints.
//
// The yardstick is a correct student written the plainest way: float values, float
// accumulators, any summation order. u = 2^-24 ~ 6.0e-8 is float's unit roundoff, and a
// float sum of n terms is off by at most about n*u times the sum of the terms' magnitudes
// (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., eq. 3.5), typically
// by about sqrt(n)*u of it. Every figure below is that bound for the operator, carried
// along the chain, with headroom; the measured errors are in docs/stages/01-block.md.
// Real mistakes (a wrong pairing, a missing scale, a wrong mask) move elements by a
// sizeable fraction of the buffer's RMS, orders of magnitude above these.
#include "block_tolerances.h"

namespace wb {

Tolerance BlockTolerance(ref::Checkpoint c) {
  using ref::Checkpoint;
  switch (c) {
    // RMSNorm: a 512-term float sum of squares (at most 512u ~ 3e-5 relative, typically
    // 1.4e-6), halved by the square root, then two float products. 1e-4 is 6x the bound.
    case Checkpoint::kNorm1:
      return {.absoluteOfRms = 1e-4, .relative = 1e-4};
    // Projections (+ RoPE): 512-term float dot products. The bound is 512u times
    // sum|w_i n_i|, about 16 x rms(q) for these weights, so 5e-4 of the RMS in the worst
    // order; typical orders stay near 2e-5. RoPE adds a few u.
    case Checkpoint::kQ:
    case Checkpoint::kK:
    case Checkpoint::kV:
      return {.absoluteOfRms = 1e-3, .relative = 1e-4};
    // Attention: a score error ds moves a softmax weight by ds relative, and ds grows with
    // the score's size (a float q.k of 64 terms, from q and k already off by 1e-5..5e-4).
    // With weights scaled up until scores reach the hundreds (the hidden overflow case),
    // ds reaches 1e-3; the weighted sum of v carries it over.
    case Checkpoint::kAttnOut:
    // Everything after attention inherits its error, measured against the stream's own
    // size, plus its own 512- or 1408-term float sums (bounded as above). RMSNorm is
    // scale-invariant, so norm2 carries residual1's relative error through unchanged: a
    // tolerance may never shrink along the chain, or an error allowed upstream would be
    // reported downstream as a wrong operator that is not wrong.
    case Checkpoint::kResidual1:
    case Checkpoint::kNorm2:
    case Checkpoint::kFfnOut:
    case Checkpoint::kOutput:
      return {.absoluteOfRms = 5e-3, .relative = 1e-3};
  }
  return {.absoluteOfRms = 1e-3, .relative = 1e-3};
}

}  // namespace wb
