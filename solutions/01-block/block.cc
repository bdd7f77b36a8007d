// Stage 1, solved: one pre-norm decoder block in float, written as plain loops.
//
// The contract (sizes, packed offsets, the signature) is contracts/stage01_block.h.
// Every buffer is row-major; token t's row of a D-wide buffer starts at t * D, of a
// KV-wide buffer at t * KV. The kernels come first, each with the shape of every buffer
// it touches; decoder_block at the end is the block as a flat sequence of named steps.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "stage01_block.h"

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

// Softmax in place. The largest score is subtracted first, so no exp can overflow.
//   scores (count): scores in, weights summing to 1 out
void Softmax(float* scores, int count) {
  float maxScore = -INFINITY;
  for (int j = 0; j < count; ++j) maxScore = std::max(maxScore, scores[j]);
  float total = 0.0f;
  for (int j = 0; j < count; ++j) {
    scores[j] = std::exp(scores[j] - maxScore);
    total += scores[j];
  }
  for (int j = 0; j < count; ++j) scores[j] /= total;
}

// One query head's attention over `count` key/value rows: the softmax of the scaled dot
// products, then the weighted sum of the value heads.
//   query (DH); keys, values: count rows of DH values, KV floats apart (one KV head of
//   k and v); scores (count) scratch; out (DH)
void AttendHead(const float* query, const float* keys, const float* values, int count, float* scores,
                float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(DH));
  for (int j = 0; j < count; ++j) scores[j] = Dot(query, keys + j * KV, DH) * scale;
  Softmax(scores, count);
  for (int c = 0; c < DH; ++c) out[c] = 0.0f;
  for (int j = 0; j < count; ++j) {
    for (int c = 0; c < DH; ++c) out[c] += scores[j] * values[j * KV + c];
  }
}

// Causal grouped-query attention: token t's query head h reads KV head h / (HQ / HKV),
// keys 0 .. t only.
//   q (T, D), k (T, KV), v (T, KV), scores (T) scratch, attnOut (T, D)
void AttendCausal(int T, const float* q, const float* k, const float* v, float* scores, float* attnOut) {
  for (int t = 0; t < T; ++t) {
    const int visible = t + 1;  // the causal mask: keys 0 .. t
    for (int h = 0; h < HQ; ++h) {
      const int kvHead = h / (HQ / HKV);
      AttendHead(q + t * D + h * DH, k + kvHead * DH, v + kvHead * DH, visible, scores,
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

void decoder_block(int T, const float* w, const float* x,
                   const float* ropeCos, const float* ropeSin,
                   float* norm1, float* q, float* k, float* v, float* attnOut,
                   float* residual1, float* norm2, float* ffnOut, float* output) {
  std::vector<float> scores(T);  // (T) one query head's scores, then its softmax weights
  std::vector<float> gate(F);    // (F) one token's Wgate . norm2
  std::vector<float> up(F);      // (F) one token's Wup . norm2
  std::vector<float> hidden(F);  // (F) one token's SiLU(gate) * up

  // 1. norm1 (T, D): each input row normalised, then scaled by rms1.
  for (int t = 0; t < T; ++t) RmsNorm(x + t * D, w + OFF_RMS1, norm1 + t * D);

  // 2. q (T, D), k (T, KV), v (T, KV): the three projections of norm1.
  for (int t = 0; t < T; ++t) {
    MatVec(w + OFF_WQ, D, D, norm1 + t * D, q + t * D);
    MatVec(w + OFF_WK, KV, D, norm1 + t * D, k + t * KV);
    MatVec(w + OFF_WV, KV, D, norm1 + t * D, v + t * KV);
  }

  // 3. RoPE on q and k (never v), each token at its own position t.
  for (int t = 0; t < T; ++t) {
    const float* cosRow = ropeCos + t * ROPE_PAIRS;  // (ROPE_PAIRS)
    const float* sinRow = ropeSin + t * ROPE_PAIRS;  // (ROPE_PAIRS)
    ApplyRope(q + t * D, HQ, cosRow, sinRow);
    ApplyRope(k + t * KV, HKV, cosRow, sinRow);
  }

  // 4. attnOut (T, D): causal attention of q over k and v.
  AttendCausal(T, q, k, v, scores.data(), attnOut);

  // 5. residual1 (T, D) = x + WO . attnOut: the residual adds to the un-normalised stream.
  for (int t = 0; t < T; ++t) MatVec(w + OFF_WO, D, D, attnOut + t * D, residual1 + t * D);
  Add(x, residual1, residual1, T * D);

  // 6. norm2 (T, D): residual1 normalised, then scaled by rms2.
  for (int t = 0; t < T; ++t) RmsNorm(residual1 + t * D, w + OFF_RMS2, norm2 + t * D);

  // 7. ffnOut (T, D) = Wdown . (SiLU(Wgate . norm2) * (Wup . norm2)), token by token.
  for (int t = 0; t < T; ++t) {
    MatVec(w + OFF_WGATE, F, D, norm2 + t * D, gate.data());
    MatVec(w + OFF_WUP, F, D, norm2 + t * D, up.data());
    SwiGlu(gate.data(), up.data(), hidden.data());
    MatVec(w + OFF_WDOWN, D, F, hidden.data(), ffnOut + t * D);
  }

  // 8. output (T, D) = residual1 + ffnOut: the FFN half adds to the stream too.
  Add(residual1, ffnOut, output, T * D);
}
