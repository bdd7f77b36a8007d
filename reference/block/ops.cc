#include "ops.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace ref {

void RmsNorm(std::span<const double> x, int rows, int width, std::span<const float> weight,
             double eps, NormEpsilon epsilon, NormWeight applyWeight, std::span<double> out) {
  assert(x.size() == static_cast<size_t>(rows) * width && out.size() == x.size());
  assert(weight.size() == static_cast<size_t>(width));
  for (int r = 0; r < rows; ++r) {
    const double* row = x.data() + static_cast<size_t>(r) * width;
    double sumSquares = 0;
    for (int c = 0; c < width; ++c) sumSquares += row[c] * row[c];
    const double meanSquare = sumSquares / width;
    const double inverseRms =
        1.0 / std::sqrt(epsilon == NormEpsilon::kInside ? meanSquare + eps : meanSquare);
    double* dst = out.data() + static_cast<size_t>(r) * width;
    for (int c = 0; c < width; ++c) {
      const double scale = applyWeight == NormWeight::kApplied ? weight[c] : 1.0;
      dst[c] = row[c] * inverseRms * scale;
    }
  }
}

void Project(std::span<const double> x, int rows, int inWidth, std::span<const float> matrix,
             int outWidth, std::span<double> out) {
  assert(x.size() == static_cast<size_t>(rows) * inWidth);
  assert(matrix.size() == static_cast<size_t>(outWidth) * inWidth);
  assert(out.size() == static_cast<size_t>(rows) * outWidth);
  // Four partial sums, not one: a single running sum waits on each addition before the
  // next (a chain of inWidth dependent adds), four let the adds overlap. The reference is
  // the runner's most frequent work (every case, every diagnosed mistake); in double, the
  // changed order of addition moves a result by ~1e-16 of its size, far below any float
  // tolerance.
  for (int r = 0; r < rows; ++r) {
    const double* in = x.data() + static_cast<size_t>(r) * inWidth;
    for (int o = 0; o < outWidth; ++o) {
      const float* w = matrix.data() + static_cast<size_t>(o) * inWidth;
      double sum[4] = {0, 0, 0, 0};
      int i = 0;
      for (; i + 4 <= inWidth; i += 4) {
        for (int lane = 0; lane < 4; ++lane) sum[lane] += static_cast<double>(w[i + lane]) * in[i + lane];
      }
      for (; i < inWidth; ++i) sum[0] += static_cast<double>(w[i]) * in[i];
      out[static_cast<size_t>(r) * outWidth + o] = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    }
  }
}

std::vector<double> DefaultInverseFrequencies(int headDim, double base) {
  std::vector<double> inverse(headDim / 2);
  for (int f = 0; f < headDim / 2; ++f) {
    inverse[f] = std::pow(base, -2.0 * f / headDim);
  }
  return inverse;
}

RopeTable MakeRopeTable(int firstPosition, int rows, std::span<const double> inverseFrequency,
                        double attentionFactor) {
  RopeTable table;
  table.rows = rows;
  table.pairs = static_cast<int>(inverseFrequency.size());
  table.cos.resize(static_cast<size_t>(rows) * table.pairs);
  table.sin.resize(table.cos.size());
  for (int t = 0; t < rows; ++t) {
    for (int f = 0; f < table.pairs; ++f) {
      const double angle = static_cast<double>(firstPosition + t) * inverseFrequency[f];
      table.cos[static_cast<size_t>(t) * table.pairs + f] = std::cos(angle) * attentionFactor;
      table.sin[static_cast<size_t>(t) * table.pairs + f] = std::sin(angle) * attentionFactor;
    }
  }
  return table;
}

void ApplyRope(std::span<double> x, int rows, int heads, int headDim, std::span<const double> cos,
               std::span<const double> sin, RopePairing pairing, RopeDirection direction) {
  const int pairs = headDim / 2;
  assert(x.size() == static_cast<size_t>(rows) * heads * headDim);
  assert(cos.size() == static_cast<size_t>(rows) * pairs && sin.size() == cos.size());
  const double sign = direction == RopeDirection::kForward ? 1.0 : -1.0;
  for (int r = 0; r < rows; ++r) {
    for (int h = 0; h < heads; ++h) {
      double* head = x.data() + (static_cast<size_t>(r) * heads + h) * headDim;
      for (int f = 0; f < pairs; ++f) {
        // Pair f is (f, f + pairs) in the half-split layout, (2f, 2f + 1) in the adjacent one.
        const int first = pairing == RopePairing::kHalfSplit ? f : 2 * f;
        const int second = pairing == RopePairing::kHalfSplit ? f + pairs : 2 * f + 1;
        const double c = cos[static_cast<size_t>(r) * pairs + f];
        const double s = sign * sin[static_cast<size_t>(r) * pairs + f];
        const double a = head[first];
        const double b = head[second];
        head[first] = a * c - b * s;
        head[second] = a * s + b * c;
      }
    }
  }
}

int KvHeadFor(int queryHead, const BlockShape& shape, HeadMap map) {
  return map == HeadMap::kGrouped ? queryHead / shape.group() : queryHead % shape.kvHeads;
}

namespace {

// The visible keys of a query at `position`: [first, last], empty when last < first.
void VisibleKeys(int position, const AttentionSpan& span, Mask mask, int& first, int& last) {
  switch (mask) {
    case Mask::kCausal: last = position; break;
    case Mask::kNone: last = span.keys - 1; break;
    case Mask::kExcludesSelf: last = position - 1; break;
  }
  if (last > span.keys - 1) last = span.keys - 1;
  first = span.window > 0 ? position - span.window + 1 : 0;
  if (first < 0) first = 0;
}

}  // namespace

void Attend(std::span<const double> q, std::span<const double> k, std::span<const double> v,
            const AttentionSpan& span, const BlockShape& shape, const BlockRecipe& recipe,
            std::span<double> out) {
  const int dh = shape.headDim;
  assert(q.size() == static_cast<size_t>(span.queries) * shape.qWidth());
  assert(k.size() == static_cast<size_t>(span.keys) * shape.kvWidth() && v.size() == k.size());
  assert(out.size() == q.size());
  const double scale = recipe.scoreScale == ScoreScale::kApplied ? shape.attentionScale : 1.0;
  std::vector<double> weights(span.keys);
  for (int i = 0; i < span.queries; ++i) {
    int first = 0;
    int last = -1;
    VisibleKeys(span.firstQueryPosition + i, span, recipe.mask, first, last);
    for (int h = 0; h < shape.qHeads; ++h) {
      const double* qh = q.data() + static_cast<size_t>(i) * shape.qWidth() + static_cast<size_t>(h) * dh;
      const int kvHead = KvHeadFor(h, shape, recipe.headMap);
      double* dst = out.data() + static_cast<size_t>(i) * shape.qWidth() + static_cast<size_t>(h) * dh;
      if (last < first) {
        for (int c = 0; c < dh; ++c) dst[c] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      // Scores, then softmax over the visible keys.
      double maxScore = -std::numeric_limits<double>::infinity();
      for (int j = first; j <= last; ++j) {
        const double* kj = k.data() + static_cast<size_t>(j) * shape.kvWidth() + static_cast<size_t>(kvHead) * dh;
        double dot = 0;
        for (int c = 0; c < dh; ++c) dot += qh[c] * kj[c];
        weights[j] = dot * scale;
        if (weights[j] > maxScore) maxScore = weights[j];
      }
      double total = 0;
      for (int j = first; j <= last; ++j) {
        if (recipe.softmax == Softmax::kMaxSubtracted) {
          weights[j] = std::exp(weights[j] - maxScore);
        } else {
          // What float code computes without the max: exp overflows to inf above ~88.7.
          weights[j] = static_cast<float>(std::exp(weights[j]));
        }
        total += weights[j];
      }
      if (recipe.softmax == Softmax::kNaiveFloat) total = static_cast<float>(total);
      for (int c = 0; c < dh; ++c) dst[c] = 0;
      for (int j = first; j <= last; ++j) {
        const double p = weights[j] / total;
        const double* vj = v.data() + static_cast<size_t>(j) * shape.kvWidth() + static_cast<size_t>(kvHead) * dh;
        for (int c = 0; c < dh; ++c) dst[c] += p * vj[c];
      }
    }
  }
}

double Silu(double x) { return x / (1.0 + std::exp(-x)); }

double GeluTanh(double x) {
  const double kSqrtTwoOverPi = 0.7978845608028654;  // sqrt(2 / pi)
  return 0.5 * x * (1.0 + std::tanh(kSqrtTwoOverPi * (x + 0.044715 * x * x * x)));
}

double Activate(Activation activation, double x) {
  return activation == Activation::kSilu ? Silu(x) : GeluTanh(x);
}

void GatedProduct(std::span<const double> gate, std::span<const double> up, Activation activation,
                  GatedBranch branch, std::span<double> hidden) {
  assert(gate.size() == up.size() && hidden.size() == gate.size());
  // Element i reads gate[i] and up[i] before it writes hidden[i], so hidden may alias either.
  for (size_t i = 0; i < hidden.size(); ++i) {
    hidden[i] = branch == GatedBranch::kGate ? Activate(activation, gate[i]) * up[i]
                                             : gate[i] * Activate(activation, up[i]);
  }
}

void GatedFfn(std::span<const double> x, int rows, int width, int ffn,
              std::span<const float> gate, std::span<const float> up, std::span<const float> down,
              Activation activation, GatedBranch branch, std::span<double> out) {
  std::vector<double> gateRows(static_cast<size_t>(rows) * ffn);
  std::vector<double> upRows(gateRows.size());
  Project(x, rows, width, gate, ffn, gateRows);
  Project(x, rows, width, up, ffn, upRows);
  std::vector<double> hidden(gateRows.size());
  GatedProduct(gateRows, upRows, activation, branch, hidden);
  Project(hidden, rows, ffn, down, width, out);
}

void Add(std::span<const double> a, std::span<const double> b, std::span<double> out) {
  assert(a.size() == b.size() && out.size() == a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
}

}  // namespace ref
