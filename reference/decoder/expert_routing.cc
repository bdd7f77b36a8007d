#include "reference/decoder/expert_routing.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace ref {

std::vector<ExpertChoice> RouteToken(std::span<const double> routerLogits, int topK, bool renormalise) {
  const int experts = static_cast<int>(routerLogits.size());
  assert(topK >= 1 && topK <= experts);
  double maxLogit = routerLogits[0];
  for (double l : routerLogits) maxLogit = std::max(maxLogit, l);
  std::vector<double> probability(experts);
  double total = 0;
  for (int e = 0; e < experts; ++e) {
    probability[e] = std::exp(routerLogits[e] - maxLogit);
    total += probability[e];
  }
  for (double& p : probability) p /= total;

  std::vector<ExpertChoice> chosen;
  std::vector<bool> taken(experts, false);
  double chosenSum = 0;
  for (int k = 0; k < topK; ++k) {
    int best = -1;
    for (int e = 0; e < experts; ++e) {
      // Strictly greater: an equal probability later in the list never displaces a lower id.
      if (!taken[e] && (best < 0 || probability[e] > probability[best])) best = e;
    }
    taken[best] = true;
    chosen.push_back({best, probability[best]});
    chosenSum += probability[best];
  }
  if (renormalise) {
    for (ExpertChoice& c : chosen) c.weight /= chosenSum;
  }
  return chosen;
}

}  // namespace ref
