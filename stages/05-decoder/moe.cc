// The mixture-of-experts FFN: a router scores every expert for each token, the token goes
// through its top K experts only, and their outputs are mixed by the router's probabilities.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "decoder_parts.h"

namespace decoder_parts {

void RouteTokens(int n, int experts, int topK, bool renormalise, float* router, int32_t* expertIds,
                 float* expertWeights) {
  // TODO 10a: for each row r of router (n rows of `experts` logits): p = the softmax of the
  // row over ALL experts (left in router); expertIds[r * topK + k] for k = 0 .. topK - 1 the
  // experts of the topK largest p, largest first, of equal p the lower id first; and
  // expertWeights[r * topK + k] their p, divided by the sum of the chosen p when
  // `renormalise`. Checkpoints expertIds and expertWeights.
}

void MoeFfn(const wb::model::ModelConfig& config, const wb::model::LayerWeights& layer, int n, const float* x,
            int32_t* expertIds, float* expertWeights, const Scratch& scratch, float* out, int threads) {
  // TODO 10b: out (n x H) = for each row of x, the sum over the row's chosen experts of
  // weight * expert(row), expert(row) the expert's gated FFN (layer.experts[id]: gate, up,
  // down; config.activation). The router's logits are x . layer.router^T (n x experts, into
  // scratch.router); the routing is RouteTokens into expertIds and expertWeights. Work room:
  // scratch.hidden for one row's act(gate) * up, scratch.expertOut for one expert's output
  // (Scratch in the contract). Nothing allocated.
}

}  // namespace decoder_parts
