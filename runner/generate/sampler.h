// Picking the next token from a decoder's logits: greedy, or a seeded draw after the
// repetition penalty, top-k, temperature, top-p and min-p.
//
// Contract: Sample() applies, in this order,
//   1. the repetition penalty (Keskar et al. 2019, "CTRL", penalized sampling, as llama.cpp's
//      src/llama-sampling.cpp applies it): each distinct token among the last repeatLastN
//      tokens of the history has its logit divided by repeatPenalty when the logit is
//      positive and multiplied by it otherwise, so a repeated token always loses ground;
//   2. temperature == 0: the argmax of the penalised logits, ties to the lower id (no draw);
//   3. top-k: keep the topK highest logits (all when topK == 0);
//   4. softmax of logit / temperature over what is left, in double, after subtracting the
//      largest logit;
//   5. top-p (Holtzman et al. 2019, "The Curious Case of Neural Text Degeneration"): keep the
//      smallest run of most probable tokens whose probability mass reaches topP (>=); at
//      least one token;
//   6. min-p (Nguyen et al. 2024, "Turning Up the Heat: Min-p Sampling"): drop the tokens
//      whose probability is below minP times the top probability;
//   7. renormalise over what is left and draw one token.
// Candidates are ordered by logit, higher first, then by lower id, so ties never depend on
// the sort. Note on the order: llama.cpp's default chain (common/common.h) is the same up to
// step 6 but applies the temperature last, so its top-p and min-p see temperature-1
// probabilities; here, as in Hugging Face transformers' warpers, they see the
// temperature-scaled ones. With temperature 1 the two agree.
//
// The draw, and the promise built on it: the generator is wb::SplitMix64 seeded with `seed`
// when the Sampler is made; every Sample() with temperature > 0 takes exactly one Next(),
// u = (Next() >> 11) * 2^-53 (a uniform double in [0, 1) from its top 53 bits), and returns
// the first candidate, in the order above, whose running sum of kept probabilities exceeds
// u * (sum of kept probabilities). Greedy calls take none. All of it is integer arithmetic
// and IEEE double operations in a fixed order, so the same seed and the same logits give the
// same tokens on every machine.
//
// The Sampler allocates its work arrays once, in the constructor; Sample() allocates nothing,
// so the generator's decode steps allocate nothing after the prefill.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/expected.h"
#include "common/splitmix64.h"

namespace wb::generate {

struct SamplerSettings {
  float temperature = 0.8f;    // 0: greedy (argmax, ties to the lower id)
  int topK = 40;               // 0: off
  float topP = 0.95f;          // 1: off
  float minP = 0.05f;          // 0: off
  float repeatPenalty = 1.0f;  // 1: off
  int repeatLastN = 64;        // how many recent tokens the penalty looks at (0: none)
  uint64_t seed = 0;
};

// Checks temperature >= 0, topK >= 0, 0 < topP <= 1, 0 <= minP < 1, repeatPenalty > 0 and
// repeatLastN >= 0 (NaN fails every one), as a usage error naming the command-line flag:
// "--top-p must be in (0, 1], got 1.5". The flags: --temperature, --top-k, --top-p, --min-p,
// --repeat-penalty, --repeat-last-n.
Status ValidateSamplerSettings(const SamplerSettings& settings);

class Sampler {
 public:
  // `settings` must have passed ValidateSamplerSettings; vocabSize > 0.
  Sampler(const SamplerSettings& settings, int vocabSize);

  // Picks the next token from `logits` (vocabSize floats, at least one of them finite), given
  // the tokens so far, prompt and generated (each in [0, vocabSize)). Allocates nothing.
  int32_t Sample(std::span<const float> logits, std::span<const int32_t> history);

 private:
  struct Candidate {
    float logit;
    int32_t id;
  };

  void ApplyRepetitionPenalty(std::span<const int32_t> history);
  int32_t Argmax() const;

  SamplerSettings settings_;
  int vocabSize_;
  SplitMix64 generator_;
  std::vector<Candidate> candidates_;       // vocabSize_: the (penalised) logits, then sorted
  std::vector<double> probabilities_;       // vocabSize_: of candidates_[i], same order
  std::vector<uint32_t> penalisedInCall_;   // vocabSize_: the call number that last penalised the token
  uint32_t callNumber_ = 0;
};

}  // namespace wb::generate
