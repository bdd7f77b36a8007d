// Stage 1, solved: one pre-norm decoder block in float, written as plain loops.
//
// The contract (sizes, packed offsets, the signature) is contracts/stage01_block.h.
// Every buffer is row-major; token t's row of a D-wide buffer starts at t * D.
#include <cmath>
#include <cstddef>
#include <vector>

#include "stage01_block.h"

void decoder_block(int T, const float* w, const float* x,
                   const float* ropeCos, const float* ropeSin,
                   float* norm1, float* q, float* k, float* v, float* attnOut,
                   float* residual1, float* norm2, float* ffnOut, float* output) {
  std::vector<float> scores(T);  // one query's scores, then its softmax weights, over keys 0..t
  std::vector<float> hidden(F);  // one token's SiLU(gate) * up

  // RMSNorm of one D-wide row: out = in / sqrt(mean(in^2) + eps) * weight.
  auto rmsNorm = [](const float* in, const float* weight, float* out) {
    float sumSquares = 0.0f;
    for (int c = 0; c < D; ++c) sumSquares += in[c] * in[c];
    const float inverseRms = 1.0f / std::sqrt(sumSquares / D + RMS_EPS);
    for (int c = 0; c < D; ++c) out[c] = in[c] * inverseRms * weight[c];
  };

  // out = matrix . in, for a row-major (rows, width) matrix: out[o] = sum_i matrix[o][i] in[i].
  auto matVec = [](const float* matrix, int rows, int width, const float* in, float* out) {
    for (int o = 0; o < rows; ++o) {
      const float* row = matrix + static_cast<std::size_t>(o) * width;
      float sum = 0.0f;
      for (int i = 0; i < width; ++i) sum += row[i] * in[i];
      out[o] = sum;
    }
  };

  // RoPE on every head of one row at position t: pair (f, f + 32) turns by angle(t, f).
  auto rotateHeads = [&](float* row, int heads, int t) {
    for (int h = 0; h < heads; ++h) {
      float* head = row + h * DH;
      for (int f = 0; f < ROPE_PAIRS; ++f) {
        const float c = ropeCos[t * ROPE_PAIRS + f];
        const float s = ropeSin[t * ROPE_PAIRS + f];
        const float a = head[f];
        const float b = head[f + ROPE_PAIRS];
        head[f] = a * c - b * s;
        head[f + ROPE_PAIRS] = a * s + b * c;
      }
    }
  };

  // 1. norm1: normalise each input row, then scale by rms1.
  for (int t = 0; t < T; ++t) rmsNorm(x + t * D, w + OFF_RMS1, norm1 + t * D);

  // 2. The three projections of norm1.
  for (int t = 0; t < T; ++t) {
    matVec(w + OFF_WQ, D, D, norm1 + t * D, q + t * D);
    matVec(w + OFF_WK, KV, D, norm1 + t * D, k + t * KV);
    matVec(w + OFF_WV, KV, D, norm1 + t * D, v + t * KV);
  }

  // 3. RoPE on q and k (never v), at each token's own position.
  for (int t = 0; t < T; ++t) {
    rotateHeads(q + t * D, HQ, t);
    rotateHeads(k + t * KV, HKV, t);
  }

  // 4. Causal attention: query head h reads key/value head h / (HQ / HKV), keys 0..t only.
  const float scale = 1.0f / std::sqrt(static_cast<float>(DH));
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < HQ; ++h) {
      const int kvHead = h / (HQ / HKV);
      const float* query = q + t * D + h * DH;
      float maxScore = -INFINITY;
      for (int j = 0; j <= t; ++j) {
        const float* key = k + j * KV + kvHead * DH;
        float dot = 0.0f;
        for (int c = 0; c < DH; ++c) dot += query[c] * key[c];
        scores[j] = dot * scale;
        if (scores[j] > maxScore) maxScore = scores[j];
      }
      // Subtracting the row maximum keeps every exponent <= 0, so exp cannot overflow.
      float total = 0.0f;
      for (int j = 0; j <= t; ++j) {
        scores[j] = std::exp(scores[j] - maxScore);
        total += scores[j];
      }
      float* out = attnOut + t * D + h * DH;
      for (int c = 0; c < DH; ++c) out[c] = 0.0f;
      for (int j = 0; j <= t; ++j) {
        const float p = scores[j] / total;
        const float* value = v + j * KV + kvHead * DH;
        for (int c = 0; c < DH; ++c) out[c] += p * value[c];
      }
    }
  }

  // 5. residual1 = x + WO . attnOut: the residual adds to the un-normalised stream.
  for (int t = 0; t < T; ++t) {
    matVec(w + OFF_WO, D, D, attnOut + t * D, residual1 + t * D);
    for (int c = 0; c < D; ++c) residual1[t * D + c] += x[t * D + c];
  }

  // 6. The FFN half: norm2, the gated FFN, and the second residual.
  for (int t = 0; t < T; ++t) {
    rmsNorm(residual1 + t * D, w + OFF_RMS2, norm2 + t * D);
    const float* n2 = norm2 + t * D;
    for (int f = 0; f < F; ++f) {
      const float* gateRow = w + OFF_WGATE + static_cast<std::size_t>(f) * D;
      const float* upRow = w + OFF_WUP + static_cast<std::size_t>(f) * D;
      float gate = 0.0f;
      float up = 0.0f;
      for (int c = 0; c < D; ++c) {
        gate += gateRow[c] * n2[c];
        up += upRow[c] * n2[c];
      }
      const float silu = gate / (1.0f + std::exp(-gate));
      hidden[f] = silu * up;
    }
    matVec(w + OFF_WDOWN, D, F, hidden.data(), ffnOut + t * D);
    for (int c = 0; c < D; ++c) output[t * D + c] = residual1[t * D + c] + ffnOut[t * D + c];
  }
}
