// One stage-2 case, prepared once: the inputs every call of the student's code reads (as
// the floats it reads them) and the float64 reference of the whole sequence.
//
// Contract: the inputs are the stage-1 generator's (reference/gen/block_data.h): the
// block's weights scaled by w_scale, Tokens() input rows from the case seed (token p's row
// does not depend on how the case splits the sequence into calls), and RoPE tables for all
// MAX_T positions. The reference is ref::RunBlock over every token of the case; call s's
// expected buffers are its rows pos_s .. pos_s + n_s - 1 (reference/decode/decode.h).
#pragma once

#include <span>
#include <vector>

#include "common/packed_weights.h"
#include "reference/block/block.h"
#include "reference/decode/decode.h"
#include "decode_call.h"
#include "runner/cases/case_file.h"

namespace wb::stage02 {

static_assert(kCacheRows == kMaxCaseTokens, "a case's tokens must fit in the cache");

struct DecodeCase {
  ref::BlockShape shape;
  std::vector<ref::DecodeCall> calls;
  int tokens = 0;
  std::vector<float> weights;                  // packed, matrices scaled by w_scale
  std::vector<float> x;                        // tokens x D
  std::vector<float> ropeCos, ropeSin;         // kCacheRows x 32
  std::vector<double> xd, cosd, sind;          // the same values as doubles
  ref::BlockState reference;                   // the whole sequence: tokens rows per buffer

  ref::BlockWeights Weights() const { return ref::ViewPacked(shape, weights); }
  // The call's rows of the student's x, and of the reference's x.
  std::span<const float> X(const ref::DecodeCall& call) const;
  std::span<const double> Xd(const ref::DecodeCall& call) const;
  // Rows pos .. pos + n - 1 of a reference buffer.
  std::span<const double> Expected(ref::Checkpoint c, const ref::DecodeCall& call) const;
};

DecodeCase PrepareDecodeCase(const CaseSpec& spec, const PackedWeights& weights);

// The student's cache between calls: two kCacheRows x kCacheWidth float arrays, every
// element the poison word until a call writes it.
struct CacheState {
  std::vector<float> keys;
  std::vector<float> values;
  static CacheState Poisoned();
};

}  // namespace wb::stage02
