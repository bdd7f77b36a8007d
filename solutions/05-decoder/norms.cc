// RMSNorm (Zhang & Sennrich, 2019) and the QK-norm built from it.
//
// One RMSNorm serves every family: y = x / sqrt(mean(x²) + eps) · w, with eps inside the
// square root (transformers' LlamaRMSNorm) and the weight applied. Gemma's norm scales by
// (1 + w) (Gemma3RMSNorm); the model library already stored 1 + w in the weight
// (model/config/weight_source.h), so Gemma needs nothing here.
#include <cmath>
#include <cstddef>

#include "decoder_parts.h"

namespace decoder_parts {

void RmsNormRows(const float* in, int rows, int width, const float* weight, double eps, float* out) {
  const float epsilon = static_cast<float>(eps);
  for (int r = 0; r < rows; ++r) {
    const float* row = in + static_cast<size_t>(r) * width;
    float* result = out + static_cast<size_t>(r) * width;
    // The sum of squares is read in full before any value is written: out may be in.
    float sumSquares = 0.0f;
#pragma omp simd reduction(+ : sumSquares)
    for (int c = 0; c < width; ++c) sumSquares += row[c] * row[c];
    const float inverseRms = 1.0f / std::sqrt(sumSquares / static_cast<float>(width) + epsilon);
#pragma omp simd
    for (int c = 0; c < width; ++c) result[c] = row[c] * inverseRms * weight[c];
  }
}

void QkNormalise(float* x, int n, int heads, int headDim, wb::model::QkNorm kind, const float* weight, double eps) {
  switch (kind) {
    case wb::model::QkNorm::kNone:
      return;
    case wb::model::QkNorm::kPerHead:
      // Qwen3 and Gemma 3 (q_norm / k_norm over head_dim): each head its own row.
      RmsNormRows(x, n * heads, headDim, weight, eps, x);
      return;
    case wb::model::QkNorm::kWholeProjection:
      // OLMoE (q_norm over hidden, k_norm over kv heads · head_dim): one row per token,
      // applied before the projection is split into heads.
      RmsNormRows(x, n, heads * headDim, weight, eps, x);
      return;
  }
}

}  // namespace decoder_parts
