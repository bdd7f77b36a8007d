// Attention over the paged cache in one pass, with an online softmax.
//
// softmax(s)·V needs the largest score before the first weight can be formed, which in the
// textbook form means a second pass (or an array of every score). The online softmax
// (Milakov & Gimelshein, 2018; the core of FlashAttention, Dao et al., 2022) keeps instead,
// after keys first .. j, with m the largest score so far:
//   normaliser = Σ exp(s_i - m),   accumulator = Σ exp(s_i - m) · v_i.
// When a score s exceeds m, both sums are re-weighted by exp(m - s) for the new maximum; at
// the end accumulator / normaliser is the softmax-weighted sum of the values, and no exp ever
// sees a positive argument, so none overflows. One pass, no score array: the state of a head
// is hd + 2 floats, whatever the length of the context.
//
// Grouped-query attention (Ainslie et al., 2023): heads / kvHeads query heads share each kv
// head. One task is one query row and one kv head, and serves all the query heads of that
// group in the same pass, so each key and value row is read from the cache (and widened to
// float) once for the group, not once per query head: at decode the cache is the largest
// thing attention reads, and this divides that traffic by the group size.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "decoder_parts.h"
#include "stage05_kernels.h"

namespace decoder_parts {

namespace {

// The dot product of two vectors of `count` floats.
float Dot(const float* a, const float* b, int count) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int c = 0; c < count; ++c) sum += a[c] * b[c];
  return sum;
}

// One query row's `count` consecutive query heads (queries: count x hd), all reading kv head
// `kvHead`, over the positions first .. last of the cache, into out (count x hd). The state of
// every head lives on this task's stack: no allocation, nothing shared between threads.
void AttendGroup(const KvCache& cache, int layer, int kvHead, int first, int last, const float* queries,
                 int count, float scale, float* out) {
  const int hd = cache.geometry.headDim;
  alignas(64) float key[kMaxHeadDim];
  alignas(64) float value[kMaxHeadDim];
  alignas(64) float accumulator[kMaxGroupHeads][kMaxHeadDim];
  float runningMax[kMaxGroupHeads];
  float normaliser[kMaxGroupHeads];
  for (int h = 0; h < count; ++h) {
    runningMax[h] = -INFINITY;  // the first score always exceeds it: exp(-inf) = 0 clears the sums
    normaliser[h] = 0.0f;
    std::fill_n(accumulator[h], hd, 0.0f);
  }
  for (int j = first; j <= last; ++j) {
    // Read back from the cache, not from this call's k and v: an f16 or int8 cache changes the
    // values, and every position, this call's own included, must be seen as the cache holds it.
    LoadHead(cache, layer, KvPart::kKeys, j, kvHead, key);
    LoadHead(cache, layer, KvPart::kValues, j, kvHead, value);
    for (int h = 0; h < count; ++h) {
      float* acc = accumulator[h];
      const float score = Dot(queries + static_cast<size_t>(h) * hd, key, hd) * scale;
      if (score > runningMax[h]) {
        const float rescale = std::exp(runningMax[h] - score);
        normaliser[h] *= rescale;
#pragma omp simd
        for (int c = 0; c < hd; ++c) acc[c] *= rescale;
        runningMax[h] = score;
      }
      const float weight = std::exp(score - runningMax[h]);
      normaliser[h] += weight;
#pragma omp simd
      for (int c = 0; c < hd; ++c) acc[c] += weight * value[c];
    }
  }
  for (int h = 0; h < count; ++h) {
    float* dst = out + static_cast<size_t>(h) * hd;
    for (int c = 0; c < hd; ++c) dst[c] = accumulator[h][c] / normaliser[h];
  }
}

// Multiply-adds below which attention runs on the calling thread alone (see Attend).
constexpr int64_t kMinSharedWork = 64 * 1024;

}  // namespace

void Attend(const KvCache& cache, int layer, int n, int heads, const float* q, int window, float scale,
            float* attnOut, int threads) {
  const int hd = cache.geometry.headDim;
  const int kvHeads = cache.geometry.kvHeads;
  if (hd > kMaxHeadDim) {
    std::fprintf(stderr, "attention: head_dim %d is more than the %d this code keeps on the stack\n", hd, kMaxHeadDim);
    std::abort();
  }
  const int group = heads / kvHeads;  // query heads per kv head
  const size_t qWidth = static_cast<size_t>(heads) * hd;
  // One task: query row i, kv head kvHead, every query head of its group.
  auto task = [&](int t) {
    const int i = t / kvHeads;
    const int kvHead = t % kvHeads;
    const int position = cache.size + i;
    // The causal mask, and on sliding layers the window: p - W < j <= p.
    const int first = window > 0 ? std::max(0, position - window + 1) : 0;
    // A group wider than the stack's kMaxGroupHeads is served in slices, each a pass.
    for (int h0 = 0; h0 < group; h0 += kMaxGroupHeads) {
      const int count = std::min(kMaxGroupHeads, group - h0);
      const size_t offset = i * qWidth + static_cast<size_t>(kvHead * group + h0) * hd;
      AttendGroup(cache, layer, kvHead, first, position, q + offset, count, scale, attnOut + offset);
    }
  };
  const int tasks = n * kvHeads;
  // Shared out by the provided share_out (contracts/stage05_kernels.h), which waits for the
  // tasks and not for the helper threads: on a busy machine a helper without a core costs
  // nothing. A decode step at a short context is too little work to be worth a second thread:
  // below kMinSharedWork multiply-adds (about a microsecond's) the calling thread does it all.
  const int64_t positions = static_cast<int64_t>(cache.size) + n;
  const int64_t work = static_cast<int64_t>(n) * heads * positions * hd * 2;  // q·k and weight·v
  share_out(tasks, work < kMinSharedWork ? 1 : threads, task);
}

}  // namespace decoder_parts
