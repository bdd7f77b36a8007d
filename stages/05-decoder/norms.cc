// RMSNorm, and the QK-norm built from it.
//
// One RMSNorm serves every family: a Gemma norm scales by (1 + w), and the model library has
// already stored 1 + w in its weight (model/config/weight_source.h).
#include <cmath>
#include <cstddef>

#include "decoder_parts.h"

namespace decoder_parts {

void RmsNormRows(const float* in, int rows, int width, const float* weight, double eps, float* out) {
  // TODO 2a: out = in / sqrt(mean(in^2) + eps) * weight for each of `rows` rows of `width`
  // values (weight: width values), eps inside the square root. out may be in: the call
  // QkNormalise makes normalises in place.
}

void QkNormalise(float* x, int n, int heads, int headDim, wb::model::QkNorm kind, const float* weight, double eps) {
  // TODO 4a: normalises x (n rows of heads * headDim) in place with RmsNormRows, as `kind`
  // says: kPerHead each head's headDim values (weight of headDim), kWholeProjection each
  // row's heads * headDim values (weight of heads * headDim), kNone not at all (weight may
  // then be empty or null).
}

}  // namespace decoder_parts
