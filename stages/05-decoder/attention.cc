// Attention over the paged cache, in one pass.
//
// Every query of the call reads the keys and values of its visible positions from the cache,
// this call's own included, as the cache stores them (LoadHead): with an f16 or int8 cache
// those differ from the call's k and v, and the checkpoint expects the stored ones.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "decoder_parts.h"

namespace decoder_parts {

void Attend(const KvCache& cache, int layer, int n, int heads, const float* q, int window, float scale,
            float* attnOut, int threads) {
  // TODO 7b: attnOut (n x heads * headDim). Row i is the query at position p = cache.size + i
  // (cache.size as the call found it). Its head h reads kv head h / (heads / kvHeads) of the
  // positions j with p - window < j <= p (0 <= j <= p when window is 0), keys and values read
  // back with LoadHead; the scores are q . k times `scale`, and the head's output is the
  // softmax-weighted sum of the values over those positions. Requirements:
  //   - one pass over the positions with an online softmax: no array of scores;
  //   - nothing allocated: each task's running state on the stack (headDim is at most
  //     kMaxHeadDim; decoder_parts.h);
  //   - at most `threads` threads (share_out, contracts/stage05_kernels.h, or OpenMP), and the
  //     same result for any number of them.
  // Lesson: the online softmax was stage 2's; what is new here is the cache's pages and types.
}

}  // namespace decoder_parts
