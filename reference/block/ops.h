// The reference operators, float64, plain loops over spans.
//
// Contract: activations are row-major double buffers (rows x width); weights are the
// float values the student's code reads (every float is exactly a double, so nothing is
// rounded on the way in). Each operator is the definition of its step: written for
// clarity, not speed, and parameterised by the recipe's switches so a test or the
// runner's diagnosis can evaluate the mistaken variants too.
#pragma once

#include <span>
#include <vector>

#include "block_recipe.h"
#include "block_shape.h"

namespace ref {

// out = x / sqrt(mean(x^2) + eps) * weight, row by row.
void RmsNorm(std::span<const double> x, int rows, int width, std::span<const float> weight,
             double eps, NormEpsilon epsilon, NormWeight applyWeight, std::span<double> out);

// out[r, o] = sum_i matrix[o, i] * x[r, i]: a linear layer with a row-major (out, in) matrix.
void Project(std::span<const double> x, int rows, int inWidth, std::span<const float> matrix,
             int outWidth, std::span<double> out);

// Per-pair rotation frequencies base^(-2f / headDim), f = 0 .. headDim/2 - 1.
std::vector<double> DefaultInverseFrequencies(int headDim, double base);

// cos and sin of position * inverseFrequency[f], times attentionFactor (YaRN's; 1 otherwise).
// Row t is position firstPosition + t; each row holds inverseFrequency.size() pairs.
struct RopeTable {
  int rows = 0;
  int pairs = 0;
  std::vector<double> cos;
  std::vector<double> sin;
};
RopeTable MakeRopeTable(int firstPosition, int rows, std::span<const double> inverseFrequency,
                        double attentionFactor = 1.0);

// Rotates every head of every row in place; row r uses row r of cos/sin (rows x pairs).
void ApplyRope(std::span<double> x, int rows, int heads, int headDim, std::span<const double> cos,
               std::span<const double> sin, RopePairing pairing, RopeDirection direction);

// The key/value head that query head h reads.
int KvHeadFor(int queryHead, const BlockShape& shape, HeadMap map);

// Which rows attention covers. Query row i sits at position firstQueryPosition + i; key and
// value row j sits at position j. window > 0 limits a query at p to keys p - window < j <= p.
struct AttentionSpan {
  int queries = 0;
  int firstQueryPosition = 0;
  int keys = 0;
  int window = 0;
};

// Scaled dot-product attention with grouped key/value heads. q: queries x qWidth;
// k, v: keys x kvWidth; out: queries x qWidth (the heads side by side, before WO).
// A query that sees no key gets a row of NaN: the softmax of nothing is undefined.
void Attend(std::span<const double> q, std::span<const double> k, std::span<const double> v,
            const AttentionSpan& span, const BlockShape& shape, const BlockRecipe& recipe,
            std::span<double> out);

double Silu(double x);
double GeluTanh(double x);
// Silu or GeluTanh, as the switch says.
double Activate(Activation activation, double x);

// hidden[i] = act(gate[i]) * up[i] (act(up) for GatedBranch::kUp): the gated FFN between its
// two input projections and its down projection. hidden may be gate or up itself.
void GatedProduct(std::span<const double> gate, std::span<const double> up, Activation activation,
                  GatedBranch branch, std::span<double> hidden);

// out = down(act(gate x) * up x), row by row; gate and up are (ffn, width), down (width, ffn).
void GatedFfn(std::span<const double> x, int rows, int width, int ffn,
              std::span<const float> gate, std::span<const float> up, std::span<const float> down,
              Activation activation, GatedBranch branch, std::span<double> out);

// out = a + b, element by element.
void Add(std::span<const double> a, std::span<const double> b, std::span<double> out);

}  // namespace ref
