// The switches of the block recipe.
//
// Contract: the default value of every switch is the model the workbook teaches. Each
// other value is a different model a student can build by accident; the runner flips one
// switch at a time to recognise such a mistake (a "misconception") in a failing buffer,
// and the tests flip each one to prove the checkpoints tell them apart. The full-decoder
// reference uses the same recipe for the family switches (activation, pairing): those two
// enums are the model library's own (model/switches.h), so a ModelConfig's value goes
// into a recipe as it is.
#pragma once

#include "../../model/switches.h"

namespace ref {

// Where the residual of the attention half starts.
enum class ResidualSource {
  kInput,       // residual1 = x + WO.attn (pre-norm: the stream is never normalised)
  kNormalised,  // residual1 = norm1 + WO.attn: the residual added to the normalised stream
  kNone,        // residual1 = WO.attn: the stream dropped, the attention half's output alone
};

// Whether the RMSNorm epsilon sits inside the square root.
enum class NormEpsilon { kInside, kMissing };

// Whether the normalised row is multiplied by the norm's weight vector.
enum class NormWeight { kApplied, kMissing };

// Which values of a head RoPE rotates together: kHalfSplit (f, f + headDim/2), HF's
// rotate_half and llama.cpp's NEOX, or kAdjacent (2f, 2f + 1), the interleaved layout and
// llama.cpp's NORM.
using RopePairing = wb::model::RopePairing;

// The direction of the rotation.
enum class RopeDirection {
  kForward,   // (a, b) -> (a cos - b sin, a sin + b cos)
  kReversed,  // the sign of sin flipped: rotation by -angle
};

// Which projections RoPE rotates.
enum class RopeTargets {
  kQueryKey,
  kQueryKeyValue,
  kNone,  // RoPE not applied: q and k as projected, so attention sees no position at all
};

// Which key/value head a query head reads.
enum class HeadMap {
  kGrouped,      // h / group: consecutive query heads share a KV head (repeat_kv)
  kInterleaved,  // h % kvHeads
};

// Which keys a query sees.
enum class Mask {
  kCausal,        // positions j <= i
  kNone,          // every key, future included
  kExcludesSelf,  // j < i: the loop bound off by one
};

// How the softmax is evaluated.
enum class Softmax {
  kMaxSubtracted,  // exp(s - max): never overflows
  kNaiveFloat,     // exp(s) evaluated in float, as a student's float code would: overflows
                   // to inf past ~88.7, so inf/inf turns whole rows to NaN
};

// Whether scores are multiplied by the attention scale (1/sqrt(headDim)).
enum class ScoreScale { kApplied, kMissing };

// The gated FFN's activation: kSilu, x * sigmoid(x), or kGeluTanh,
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
using Activation = wb::model::Activation;

// Which branch of the gated FFN goes through the activation.
enum class GatedBranch {
  kGate,  // act(gate) * up
  kUp,    // gate * act(up): SiLU on the wrong branch
};

// Where the block's output residual starts.
enum class OutputResidual {
  kResidual1,  // output = residual1 + ffn
  kInput,      // output = x + ffn: the attention half dropped from the stream
  kNone,       // output = ffn: the stream dropped, the FFN half's output alone
};

struct BlockRecipe {
  ResidualSource residualSource = ResidualSource::kInput;
  NormEpsilon normEpsilon = NormEpsilon::kInside;
  NormWeight normWeight = NormWeight::kApplied;
  RopePairing ropePairing = RopePairing::kHalfSplit;
  RopeDirection ropeDirection = RopeDirection::kForward;
  RopeTargets ropeTargets = RopeTargets::kQueryKey;
  HeadMap headMap = HeadMap::kGrouped;
  Mask mask = Mask::kCausal;
  Softmax softmax = Softmax::kMaxSubtracted;
  ScoreScale scoreScale = ScoreScale::kApplied;
  Activation activation = Activation::kSilu;
  GatedBranch gatedBranch = GatedBranch::kGate;
  OutputResidual outputResidual = OutputResidual::kResidual1;
};

}  // namespace ref
