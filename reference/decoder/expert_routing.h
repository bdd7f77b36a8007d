// Top-k expert routing of one token (`MixtralSparseMoeBlock` and its kin in
// transformers; docs/concepts/families.md).
//
// Contract: RouteToken takes the router's logits over all E experts and returns the k
// chosen experts with their weights:
//   1. p = softmax(logits) over all E experts (max subtracted);
//   2. the k largest p by repeated selection; of equal p the lower expert id wins;
//   3. weight = p_e, or p_e / Σ p_chosen when `renormalise`.
// Mixtral renormalises always, qwen3_moe and olmoe iff norm_topk_prob; none of the eight
// families takes the top-k before the softmax. Experts come out in the order chosen
// (largest p first). k must lie in [1, E].
//
// The overload with a RoutingRule computes the mistaken variants the runner names:
//   softmaxOverTopK  the k largest logits chosen first, p = softmax over those k only (then
//                    step 3 as configured: with renormalisation it is the same routing);
//   tiesToHigherId   of equal p (or logits) the higher expert id wins.
// The default RoutingRule is RouteToken's rule, bit for bit.
#pragma once

#include <span>
#include <vector>

namespace ref {

struct ExpertChoice {
  int expert = 0;
  double weight = 0;
};

// The routing of a layer's rows: K = topK entries per row, in the order chosen. Empty
// (topK 0) on a dense layer.
struct ExpertRouting {
  int topK = 0;
  std::vector<int> expertIds;         // rows x K
  std::vector<double> expertWeights;  // rows x K
};

struct RoutingRule {
  bool softmaxOverTopK = false;
  bool tiesToHigherId = false;
};

std::vector<ExpertChoice> RouteToken(std::span<const double> routerLogits, int topK, bool renormalise);
std::vector<ExpertChoice> RouteToken(std::span<const double> routerLogits, int topK, bool renormalise,
                                     const RoutingRule& rule);

}  // namespace ref
