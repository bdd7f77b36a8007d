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
#pragma once

#include <span>
#include <vector>

namespace ref {

struct ExpertChoice {
  int expert = 0;
  double weight = 0;
};

std::vector<ExpertChoice> RouteToken(std::span<const double> routerLogits, int topK, bool renormalise);

}  // namespace ref
