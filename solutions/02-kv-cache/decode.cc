// Stage 2, solved: one decoder step over n new tokens, with a KV cache and one-pass
// (online-softmax) attention, in float, written as plain loops.
//
// The contract (MAX_T, the cache, the signature) is contracts/stage02_decode.h; the sizes
// and packed offsets are stage 1's. Token t of this call sits at position pos + t: its
// row in x and the nine outputs is row t, in the cache and the RoPE tables row pos + t.
// The kernels come first, each with the shape of every buffer it touches; decoder_step
// at the end is the step as a flat sequence of named steps.
#include <cmath>
#include <cstddef>
#include <vector>

#include "stage02_decode.h"

namespace {

// The dot product of two vectors.  a (count), b (count)
float Dot(const float* a, const float* b, int count) {
  float sum = 0.0f;
  for (int i = 0; i < count; ++i) sum += a[i] * b[i];
  return sum;
}

// out = matrix . in, one dot product per matrix row.
//   matrix (rows, width) row-major, in (width), out (rows)
void MatVec(const float* matrix, int rows, int width, const float* in, float* out) {
  for (int o = 0; o < rows; ++o) out[o] = Dot(matrix + static_cast<std::size_t>(o) * width, in, width);
}

// RMSNorm of one row: out = in / sqrt(mean(in^2) + RMS_EPS) * weight.
//   in (D), weight (D), out (D)
void RmsNorm(const float* in, const float* weight, float* out) {
  float sumSquares = 0.0f;
  for (int c = 0; c < D; ++c) sumSquares += in[c] * in[c];
  const float inverseRms = 1.0f / std::sqrt(sumSquares / D + RMS_EPS);
  for (int c = 0; c < D; ++c) out[c] = in[c] * inverseRms * weight[c];
}

// RoPE on every head of one q or k row, in place: in each head, the pair
// (f, f + ROPE_PAIRS) turns by the angle whose cosine and sine are cosRow[f], sinRow[f].
//   row (heads, DH); cosRow, sinRow (ROPE_PAIRS): the tables' row for the token's position
void ApplyRope(float* row, int heads, const float* cosRow, const float* sinRow) {
  for (int h = 0; h < heads; ++h) {
    float* head = row + h * DH;  // (DH)
    for (int f = 0; f < ROPE_PAIRS; ++f) {
      const float c = cosRow[f];
      const float s = sinRow[f];
      const float a = head[f];
      const float b = head[f + ROPE_PAIRS];
      head[f] = a * c - b * s;
      head[f + ROPE_PAIRS] = a * s + b * c;
    }
  }
}

// Appends the call's keys (already rotated) and values to the cache: token t goes to row
// pos + t. Earlier rows belong to earlier calls and later rows to later ones.
//   k, v (n, KV); kCache, vCache (MAX_T, KV): rows pos .. pos + n - 1 written, no other
void AppendToCache(int n, int pos, const float* k, const float* v, float* kCache, float* vCache) {
  for (int t = 0; t < n; ++t) {
    float* keyRow = kCache + (pos + t) * KV;    // (KV)
    float* valueRow = vCache + (pos + t) * KV;  // (KV)
    for (int c = 0; c < KV; ++c) {
      keyRow[c] = k[t * KV + c];
      valueRow[c] = v[t * KV + c];
    }
  }
}

// One query head's attention over `count` cached rows in one pass, with an online softmax
// (Milakov & Gimelshein, 2018). After rows 0 .. j, with m the largest score so far:
//   normaliser = sum_i exp(s_i - m),   accumulator = sum_i exp(s_i - m) * value_i.
// When a score exceeds m, the factor exp(m - s) re-weights both sums for the new maximum;
// accumulator / normaliser is then the softmax-weighted sum, and no exp can overflow.
//   query (DH); keys, values: count rows of DH values, KV floats apart (one KV head of
//   the caches); out (DH)
void AttendOnline(const float* query, const float* keys, const float* values, int count, float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(DH));
  float runningMax = -INFINITY;
  float normaliser = 0.0f;
  float accumulator[DH] = {};  // (DH)
  for (int j = 0; j < count; ++j) {
    const float score = Dot(query, keys + j * KV, DH) * scale;
    if (score > runningMax) {
      const float rescale = std::exp(runningMax - score);  // exp(-inf) = 0 at the first row
      normaliser *= rescale;
      for (int c = 0; c < DH; ++c) accumulator[c] *= rescale;
      runningMax = score;
    }
    const float weight = std::exp(score - runningMax);
    normaliser += weight;
    for (int c = 0; c < DH; ++c) accumulator[c] += weight * values[j * KV + c];
  }
  for (int c = 0; c < DH; ++c) out[c] = accumulator[c] / normaliser;
}

// Causal grouped-query attention over the cache: the token at position p = pos + t reads
// cache rows 0 .. p, and its query head h reads KV head h / (HQ / HKV).
//   q (n, D); kCache, vCache (MAX_T, KV), rows 0 .. pos + n - 1 filled; attnOut (n, D)
void AttendCached(int n, int pos, const float* q, const float* kCache, const float* vCache, float* attnOut) {
  for (int t = 0; t < n; ++t) {
    const int visible = pos + t + 1;  // the causal mask: rows 0 .. pos + t
    for (int h = 0; h < HQ; ++h) {
      const int kvHead = h / (HQ / HKV);
      AttendOnline(q + t * D + h * DH, kCache + kvHead * DH, vCache + kvHead * DH, visible,
                   attnOut + t * D + h * DH);
    }
  }
}

// SiLU(g) = g / (1 + exp(-g)).
float Silu(float g) { return g / (1.0f + std::exp(-g)); }

// The gated FFN's hidden row: hidden = SiLU(gate) * up, element by element.
//   gate (F), up (F), hidden (F)
void SwiGlu(const float* gate, const float* up, float* hidden) {
  for (int f = 0; f < F; ++f) hidden[f] = Silu(gate[f]) * up[f];
}

// out = a + b, element by element (a residual add).  a, b, out (count); out may be b
void Add(const float* a, const float* b, float* out, int count) {
  for (int i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

}  // namespace

void decoder_step(int n, int pos, const float* w, const float* x,
                  const float* ropeCos, const float* ropeSin,
                  float* kCache, float* vCache,
                  float* norm1, float* q, float* k, float* v, float* attnOut,
                  float* residual1, float* norm2, float* ffnOut, float* output) {
  std::vector<float> gate(F);    // (F) one token's Wgate . norm2
  std::vector<float> up(F);      // (F) one token's Wup . norm2
  std::vector<float> hidden(F);  // (F) one token's SiLU(gate) * up

  // 1. norm1 (n, D): each new input row normalised, then scaled by rms1.
  for (int t = 0; t < n; ++t) RmsNorm(x + t * D, w + OFF_RMS1, norm1 + t * D);

  // 2. q (n, D), k (n, KV), v (n, KV): the three projections of norm1.
  for (int t = 0; t < n; ++t) {
    MatVec(w + OFF_WQ, D, D, norm1 + t * D, q + t * D);
    MatVec(w + OFF_WK, KV, D, norm1 + t * D, k + t * KV);
    MatVec(w + OFF_WV, KV, D, norm1 + t * D, v + t * KV);
  }

  // 3. RoPE on q and k (never v) at each token's absolute position pos + t.
  for (int t = 0; t < n; ++t) {
    const float* cosRow = ropeCos + (pos + t) * ROPE_PAIRS;  // (ROPE_PAIRS)
    const float* sinRow = ropeSin + (pos + t) * ROPE_PAIRS;  // (ROPE_PAIRS)
    ApplyRope(q + t * D, HQ, cosRow, sinRow);
    ApplyRope(k + t * KV, HKV, cosRow, sinRow);
  }

  // 4. kCache, vCache rows pos .. pos + n - 1: the rotated keys and the values.
  AppendToCache(n, pos, k, v, kCache, vCache);

  // 5. attnOut (n, D): one-pass attention over the cache, rows 0 .. p for position p.
  AttendCached(n, pos, q, kCache, vCache, attnOut);

  // 6. residual1 (n, D) = x + WO . attnOut: the residual adds to the un-normalised stream.
  for (int t = 0; t < n; ++t) MatVec(w + OFF_WO, D, D, attnOut + t * D, residual1 + t * D);
  Add(x, residual1, residual1, n * D);

  // 7. norm2 (n, D): residual1 normalised, then scaled by rms2.
  for (int t = 0; t < n; ++t) RmsNorm(residual1 + t * D, w + OFF_RMS2, norm2 + t * D);

  // 8. ffnOut (n, D) = Wdown . (SiLU(Wgate . norm2) * (Wup . norm2)), token by token.
  for (int t = 0; t < n; ++t) {
    MatVec(w + OFF_WGATE, F, D, norm2 + t * D, gate.data());
    MatVec(w + OFF_WUP, F, D, norm2 + t * D, up.data());
    SwiGlu(gate.data(), up.data(), hidden.data());
    MatVec(w + OFF_WDOWN, D, F, hidden.data(), ffnOut + t * D);
  }

  // 9. output (n, D) = residual1 + ffnOut: the FFN half adds to the stream too.
  Add(residual1, ffnOut, output, n * D);
}
