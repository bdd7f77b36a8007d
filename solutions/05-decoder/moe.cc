// The mixture-of-experts FFN (Shazeer et al., 2017; Mixtral, Jiang et al., 2024): a router
// scores every expert for each token, the token goes through its top K experts only, and their
// outputs are mixed by the router's probabilities.
//
// transformers' MixtralSparseMoeBlock (src/transformers/models/mixtral/modeling_mixtral.py)
// and its kin in qwen3_moe and olmoe:
//   routing_weights = softmax(router_logits)            over ALL experts
//   routing_weights, selected = topk(routing_weights, K)
//   if norm_topk_prob: routing_weights /= routing_weights.sum()
//   out = Σ_k routing_weights[k] · expert_k(x)
// None of the eight families takes the top K before the softmax: over all experts first, so the
// weights are probabilities of the whole distribution, and renormalising (Mixtral always,
// Qwen3-MoE and OLMoE when configured) rescales the chosen ones to sum to 1.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "decoder_parts.h"

namespace decoder_parts {

void RouteTokens(int n, int experts, int topK, bool renormalise, float* router, int32_t* expertIds,
                 float* expertWeights) {
  for (int r = 0; r < n; ++r) {
    float* p = router + static_cast<size_t>(r) * experts;
    // The softmax, largest logit subtracted so no exp overflows.
    const float maxLogit = *std::max_element(p, p + experts);
    float total = 0.0f;
    for (int e = 0; e < experts; ++e) {
      p[e] = std::exp(p[e] - maxLogit);
      total += p[e];
    }
    for (int e = 0; e < experts; ++e) p[e] /= total;

    // The top K by repeated selection: K is small (2 to 8), so K scans of E beat a sort, and
    // keep the order chosen, largest first. A strict > keeps the first of equal probabilities,
    // the lower id, as the contract asks (and reference/decoder/expert_routing.h does).
    int32_t* ids = expertIds + static_cast<size_t>(r) * topK;
    float* weights = expertWeights + static_cast<size_t>(r) * topK;
    float chosenSum = 0.0f;
    for (int k = 0; k < topK; ++k) {
      int best = -1;
      for (int e = 0; e < experts; ++e) {
        if (std::find(ids, ids + k, e) != ids + k) continue;  // chosen already
        if (best < 0 || p[e] > p[best]) best = e;
      }
      ids[k] = best;
      weights[k] = p[best];
      chosenSum += p[best];
    }
    if (renormalise) {
      for (int k = 0; k < topK; ++k) weights[k] /= chosenSum;
    }
  }
}

void MoeFfn(const wb::model::ModelConfig& config, const wb::model::LayerWeights& layer, int n, const float* x,
            int32_t* expertIds, float* expertWeights, const Scratch& scratch, float* out, int threads) {
  const int hidden = config.hidden;
  const int topK = config.expertsPerToken;
  // 1. The router's logits, n x E, then the routing.
  weight_matmul(layer.router, n, x, scratch.router, Accumulate::kOverwrite, threads);
  RouteTokens(n, config.experts, topK, config.renormaliseTopK, scratch.router, expertIds, expertWeights);

  // 2. Each row through its K experts, one token at a time: scratch.hidden holds one row of
  //    act(gate) · up (expertFfn values), scratch.expertOut the expert's output (H values).
  //    Grouping a prefill's rows by expert would read each expert's weights once instead of
  //    once per row routed to it; at decode, one token, it is the same work.
  for (int r = 0; r < n; ++r) {
    const float* row = x + static_cast<size_t>(r) * hidden;
    float* dst = out + static_cast<size_t>(r) * hidden;
    std::fill_n(dst, hidden, 0.0f);
    for (int k = 0; k < topK; ++k) {
      const wb::model::ExpertWeights& expert = layer.experts[expertIds[static_cast<size_t>(r) * topK + k]];
      weight_matmul_gated(expert.gate, expert.up, config.activation, 1, row, scratch.hidden, threads);
      weight_matmul(expert.down, 1, scratch.hidden, scratch.expertOut, Accumulate::kOverwrite, threads);
      // The weight multiplies the expert's output, as transformers does
      // (expert_layer(current_state) * routing_weights), not its input.
      const float weight = expertWeights[static_cast<size_t>(r) * topK + k];
      for (int c = 0; c < hidden; ++c) dst[c] += weight * scratch.expertOut[c];
    }
  }
}

}  // namespace decoder_parts
