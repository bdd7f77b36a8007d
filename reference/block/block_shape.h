// The sizes of one decoder block, for the float64 reference.
//
// Stage 1 uses the contract's sizes (Stage1Shape); the full-decoder reference builds a
// BlockShape per model from its config. Nothing in the reference hard-codes a size.
#pragma once

#include <cmath>

namespace ref {

struct BlockShape {
  int model = 0;      // width of the residual stream (D)
  int qHeads = 0;     // query heads (HQ)
  int kvHeads = 0;    // key/value heads (HKV); a divisor of qHeads
  int headDim = 0;    // values per head (DH); even, since RoPE rotates pairs
  int ffn = 0;        // hidden width of the gated FFN (F)
  double rmsEps = 0;  // RMSNorm epsilon
  double attentionScale = 0;  // multiplies q.k; 1/sqrt(headDim) unless a family says otherwise

  int qWidth() const { return qHeads * headDim; }
  int kvWidth() const { return kvHeads * headDim; }
  int group() const { return qHeads / kvHeads; }  // query heads per key/value head
  int ropePairs() const { return headDim / 2; }
};

// D=512, 8 query heads and 2 KV heads of 64, FFN 1408, eps 1e-5, scale 1/8.
inline BlockShape Stage1Shape() {
  BlockShape s;
  s.model = 512;
  s.qHeads = 8;
  s.kvHeads = 2;
  s.headDim = 64;
  s.ffn = 1408;
  s.rmsEps = static_cast<double>(1e-5f);  // the float RMS_EPS the student adds, exactly
  s.attentionScale = 1.0 / std::sqrt(64.0);
  return s;
}

}  // namespace ref
