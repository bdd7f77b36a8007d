// One model, opened for generation: what decoder_forward (contracts/stage05_decoder.h) needs,
// allocated once, so that decode steps allocate nothing.
//
// Contract: Open() maps the model (a GGUF file or a Hugging Face folder), binds its weights,
// computes the RoPE tables and allocates a paged KV cache for `contextTokens` positions
// (pages of kPageSize positions, the page table the identity), one set of layer buffers
// shared by every layer (the contract's generate mode), and scratch for calls of up to
// `maxCallTokens` tokens. Forward() runs the linked decoder_forward on tokens at positions
// size() onward, longer inputs in calls of maxCallTokens, and returns the last token's
// logits; before each call the logits are set to a marker, so a decoder that never writes
// them (an untouched starter) is told apart from one that writes NaN. Nothing here checks the
// decoder's numbers: that is `workbook check 5`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/expected.h"
#include "model/config/model_weights.h"
#include "model/config/weight_source.h"
#include "stage05_decoder.h"

namespace wb::generate {

inline constexpr int kPageSize = 16;

// Why Forward() gave no logits.
enum class ForwardProblem { kNone, kNotWritten, kCacheNotAdvanced, kNotFinite, kContextFull };

class DecoderSession {
 public:
  static Expected<std::unique_ptr<DecoderSession>> Open(const std::string& path, int contextTokens, int maxCallTokens,
                                                        CacheType cacheType, int threads);

  // The last token's logits (vocab floats, valid until the next call), or empty with
  // problem() saying why.
  std::span<const float> Forward(std::span<const int32_t> tokens);
  ForwardProblem problem() const { return problem_; }
  void Reset() { cache_.size = 0; }

  int size() const { return cache_.size; }
  int capacity() const { return cache_.geometry.capacity(); }
  const model::ModelConfig& config() const { return source_.config(); }
  // Bytes of weights one decoded token reads: every matrix once (the head included), one row
  // of the embedding; norms and biases are left out (they are a few KB).
  uint64_t WeightBytesPerToken() const;
  uint64_t CacheBytes() const { return arena_.size(); }

 private:
  DecoderSession(model::WeightSource source, model::ModelWeights weights);

  model::WeightSource source_;
  model::ModelWeights weights_;
  Model model_;
  KvCache cache_;
  std::vector<std::byte> arena_;
  std::vector<int32_t> pageTable_;
  std::vector<float> layerFloats_, scratchFloats_, embedding_, finalNorm_, logits_;
  std::vector<int32_t> expertIds_;
  std::vector<LayerBuffers> layers_;
  DecoderBuffers buffers_;
  int maxCallTokens_ = 0;
  int threads_ = 1;
  bool calledBefore_ = false;  // Forward has called decoder_forward (work_pool.h)
  ForwardProblem problem_ = ForwardProblem::kNone;
};

}  // namespace wb::generate
