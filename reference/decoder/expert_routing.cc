#include "reference/decoder/expert_routing.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace ref {

namespace {

// softmax of `logits` (max subtracted), into `probability`.
void Softmax(std::span<const double> logits, std::vector<double>& probability) {
  double maxLogit = logits[0];
  for (double l : logits) maxLogit = std::max(maxLogit, l);
  probability.resize(logits.size());
  double total = 0;
  for (size_t e = 0; e < logits.size(); ++e) {
    probability[e] = std::exp(logits[e] - maxLogit);
    total += probability[e];
  }
  for (double& p : probability) p /= total;
}

// The k largest entries of `score` by repeated selection, in the order chosen.
std::vector<int> TopK(std::span<const double> score, int topK, bool tiesToHigherId) {
  const int n = static_cast<int>(score.size());
  std::vector<int> chosen;
  std::vector<bool> taken(n, false);
  for (int k = 0; k < topK; ++k) {
    int best = -1;
    for (int e = 0; e < n; ++e) {
      if (taken[e]) continue;
      // Strictly greater: an equal score later in the list never displaces a lower id
      // (unless the rule says ties go to the higher id).
      if (best < 0 || score[e] > score[best] || (tiesToHigherId && score[e] == score[best])) best = e;
    }
    taken[best] = true;
    chosen.push_back(best);
  }
  return chosen;
}

}  // namespace

std::vector<ExpertChoice> RouteToken(std::span<const double> routerLogits, int topK, bool renormalise) {
  return RouteToken(routerLogits, topK, renormalise, RoutingRule{});
}

std::vector<ExpertChoice> RouteToken(std::span<const double> routerLogits, int topK, bool renormalise,
                                     const RoutingRule& rule) {
  const int experts = static_cast<int>(routerLogits.size());
  assert(topK >= 1 && topK <= experts);
  std::vector<ExpertChoice> chosen;
  std::vector<double> probability;
  if (rule.softmaxOverTopK) {
    const std::vector<int> ids = TopK(routerLogits, topK, rule.tiesToHigherId);
    std::vector<double> logits;
    for (int id : ids) logits.push_back(routerLogits[id]);
    Softmax(logits, probability);
    for (int k = 0; k < topK; ++k) chosen.push_back({ids[k], probability[k]});
  } else {
    Softmax(routerLogits, probability);
    for (int id : TopK(probability, topK, rule.tiesToHigherId)) chosen.push_back({id, probability[id]});
  }
  if (renormalise) {
    double chosenSum = 0;
    for (const ExpertChoice& c : chosen) chosenSum += c.weight;
    for (ExpertChoice& c : chosen) c.weight /= chosenSum;
  }
  return chosen;
}

}  // namespace ref
