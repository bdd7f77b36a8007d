// Stage 2, solved: one decoder step over n new tokens, with a KV cache and one-pass
// (online-softmax) attention, in float, written as plain loops.
//
// The contract (MAX_T, the cache, the signature) is contracts/stage02_decode.h; the sizes
// and packed offsets are stage 1's. Token t of this call sits at position pos + t.
#include <cmath>
#include <cstddef>
#include <vector>

#include "stage02_decode.h"

void decoder_step(int n, int pos, const float* w, const float* x,
                  const float* ropeCos, const float* ropeSin,
                  float* kCache, float* vCache,
                  float* norm1, float* q, float* k, float* v, float* attnOut,
                  float* residual1, float* norm2, float* ffnOut, float* output) {
  std::vector<float> accumulator(DH);  // one query head's running weighted sum of values
  std::vector<float> hidden(F);        // one token's SiLU(gate) * up

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

  // RoPE on every head of one row at absolute position p: pair (f, f + 32) turns by angle(p, f).
  auto rotateHeads = [&](float* row, int heads, int p) {
    for (int h = 0; h < heads; ++h) {
      float* head = row + h * DH;
      for (int f = 0; f < ROPE_PAIRS; ++f) {
        const float c = ropeCos[p * ROPE_PAIRS + f];
        const float s = ropeSin[p * ROPE_PAIRS + f];
        const float a = head[f];
        const float b = head[f + ROPE_PAIRS];
        head[f] = a * c - b * s;
        head[f + ROPE_PAIRS] = a * s + b * c;
      }
    }
  };

  // 1. norm1: normalise each new input row, then scale by rms1.
  for (int t = 0; t < n; ++t) rmsNorm(x + t * D, w + OFF_RMS1, norm1 + t * D);

  // 2. The three projections of norm1.
  for (int t = 0; t < n; ++t) {
    matVec(w + OFF_WQ, D, D, norm1 + t * D, q + t * D);
    matVec(w + OFF_WK, KV, D, norm1 + t * D, k + t * KV);
    matVec(w + OFF_WV, KV, D, norm1 + t * D, v + t * KV);
  }

  // 3. RoPE on q and k at each token's absolute position, pos + t: the position in the
  //    sequence, not in this call.
  for (int t = 0; t < n; ++t) {
    rotateHeads(q + t * D, HQ, pos + t);
    rotateHeads(k + t * KV, HKV, pos + t);
  }

  // 4. Append the new keys (already rotated) and values to the cache: token t goes to row
  //    pos + t. Earlier rows belong to earlier calls and later rows to later ones.
  for (int t = 0; t < n; ++t) {
    float* keyRow = kCache + (pos + t) * KV;
    float* valueRow = vCache + (pos + t) * KV;
    for (int c = 0; c < KV; ++c) {
      keyRow[c] = k[t * KV + c];
      valueRow[c] = v[t * KV + c];
    }
  }

  // 5. Attention in one pass over the cache rows 0 .. p, with an online softmax
  //    (Milakov & Gimelshein, "Online normalizer calculation for softmax", 2018). After
  //    rows 0 .. j, with m the largest score so far:
  //      normaliser  = sum_i exp(s_i - m),   accumulator = sum_i exp(s_i - m) v_i.
  //    When a score s exceeds m, both sums are still weighted for the old maximum; the
  //    factor exp(m - s) turns them into sums for the new one. At the end,
  //    accumulator / normaliser is the softmax-weighted sum of the values, and no exp
  //    ever sees a positive argument, so none can overflow.
  const float scale = 1.0f / std::sqrt(static_cast<float>(DH));
  for (int t = 0; t < n; ++t) {
    const int position = pos + t;
    for (int h = 0; h < HQ; ++h) {
      const int kvHead = h / (HQ / HKV);
      const float* query = q + t * D + h * DH;
      float runningMax = -INFINITY;
      float normaliser = 0.0f;
      for (int c = 0; c < DH; ++c) accumulator[c] = 0.0f;
      for (int j = 0; j <= position; ++j) {
        const float* key = kCache + j * KV + kvHead * DH;
        float dot = 0.0f;
        for (int c = 0; c < DH; ++c) dot += query[c] * key[c];
        const float score = dot * scale;
        if (score > runningMax) {
          const float rescale = std::exp(runningMax - score);  // exp(-inf) = 0 at the first row
          normaliser *= rescale;
          for (int c = 0; c < DH; ++c) accumulator[c] *= rescale;
          runningMax = score;
        }
        const float weight = std::exp(score - runningMax);
        normaliser += weight;
        const float* value = vCache + j * KV + kvHead * DH;
        for (int c = 0; c < DH; ++c) accumulator[c] += weight * value[c];
      }
      float* out = attnOut + t * D + h * DH;
      for (int c = 0; c < DH; ++c) out[c] = accumulator[c] / normaliser;
    }
  }

  // 6. residual1 = x + WO . attnOut: the residual adds to the un-normalised stream.
  for (int t = 0; t < n; ++t) {
    matVec(w + OFF_WO, D, D, attnOut + t * D, residual1 + t * D);
    for (int c = 0; c < D; ++c) residual1[t * D + c] += x[t * D + c];
  }

  // 7. The FFN half: norm2, the gated FFN, and the second residual.
  for (int t = 0; t < n; ++t) {
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
