// The reference decoder's forward pass as steps: pure functions in double, one per buffer of
// the stage-5 contract (contracts/stage05_decoder.h), each from the buffers upstream of it.
//
// Contract: RunDecoder and RunDecoderTrace (decoder.h) are these steps chained, each fed the
// reference's own upstream buffers; the runner's local check feeds one step the student's
// buffers (floats widened to double) instead, so chain and local check agree by
// construction. Every step honours the DecoderOptions' switches (decoder_options.h).
// A StepContext names the layer and the rows: `rows` rows at positions firstPosition ..
// firstPosition + rows - 1. Widths: H hidden, Q qWidth, KVW kvWidth, K expertsPerToken.
//   StepEmbedding   the token rows of the embedding, times √H when configured       T x H
//   StepNorm1       RMSNorm(x) · attnNorm                                             rows x H
//   StepQkv         norm1 · Wᵀ + bias; q and k QK-normed then RoPE'd at their positions
//   StepStoredRows  k or v rows as attention reads them from the emulated cache (kF32:
//                   unchanged; cache_rows.h otherwise)
//   StepAttention   q over keys/values of positions 0 .. firstPosition + rows - 1, as
//                   stored (the caller has already passed them through StepStoredRows),
//                   causal, windowed on sliding layers, GQA                           rows x Q
//   StepResidual1   x + o, o = attnOut · Woᵀ (+ bias), sandwich-normed when configured rows x H
//   StepNorm2       RMSNorm(residual1) · ffnNorm                                      rows x H
//   StepRouting     each row's K experts and weights (MoE layers; empty on dense ones)
//   StepExpertFfn   ffnOut of an MoE layer for a given routing (the student's own, in a
//                   local check): Σ weight · expert(norm2), experts in id order, each over
//                   the rows routed to it, then the sandwich norm                     rows x H
//   StepFfn         ffnOut (dense, or StepRouting then StepExpertFfn) and the routing
//   StepOutput      residual1 + ffnOut                                                rows x H
//   StepFinal       finalNorm = RMSNorm(rows) · outputNorm, logits = finalNorm · headᵀ,
//                   softcapped when configured (ctx.layer is not read)  rows x H, rows x V
// A step that reads weights returns the file's error when a row cannot be read; StepExpertFfn
// refuses (BadUsage) a routing of the wrong size, an expert id outside [0, E) or a dense layer.
#pragma once

#include <span>
#include <vector>

#include "common/expected.h"
#include "model/config/config.h"
#include "model/config/model_weights.h"
#include "reference/decoder/decoder_options.h"
#include "reference/decoder/expert_routing.h"

namespace ref {

struct StepContext {
  const wb::model::ModelConfig& config;
  const wb::model::ModelWeights& weights;
  const DecoderOptions& options;
  int layer = 0;
  int firstPosition = 0;  // position of row 0
  int rows = 0;
};

struct QkvStep {
  std::vector<double> q;  // rows x Q
  std::vector<double> k;  // rows x KVW
  std::vector<double> v;  // rows x KVW
};

struct FfnStep {
  std::vector<double> ffnOut;  // rows x H, after the sandwich norm
  ExpertRouting routing;       // empty on dense layers
};

struct FinalStep {
  std::vector<double> finalNorm;  // rows x H
  std::vector<double> logits;     // rows x V, softcapped
};

// tokens.size() rows; a token outside [0, vocab) is a BadUsage error.
wb::Expected<std::vector<double>> StepEmbedding(const wb::model::ModelConfig& config,
                                                const wb::model::ModelWeights& weights,
                                                const DecoderOptions& options, std::span<const int> tokens);
std::vector<double> StepNorm1(const StepContext& ctx, std::span<const double> x);
wb::Expected<QkvStep> StepQkv(const StepContext& ctx, std::span<const double> norm1);
std::vector<double> StepStoredRows(const StepContext& ctx, std::span<const double> rows);
std::vector<double> StepAttention(const StepContext& ctx, std::span<const double> q, std::span<const double> keys,
                                  std::span<const double> values);
wb::Expected<std::vector<double>> StepResidual1(const StepContext& ctx, std::span<const double> attnOut,
                                                std::span<const double> x);
std::vector<double> StepNorm2(const StepContext& ctx, std::span<const double> residual1);
wb::Expected<ExpertRouting> StepRouting(const StepContext& ctx, std::span<const double> norm2);
wb::Expected<std::vector<double>> StepExpertFfn(const StepContext& ctx, std::span<const double> norm2,
                                                const ExpertRouting& routing);
wb::Expected<FfnStep> StepFfn(const StepContext& ctx, std::span<const double> norm2);
// For a dense layer whose products quantize their inputs: how far each element of StepFfn's
// ffnOut may move when a code of the hidden rows' quantization that sits at a rounding
// boundary goes the other way (GatedFfnFlipSlack). Empty where that is not worked out: a layer
// of experts, or one with a norm after its FFN (the move is no longer a sum of code steps).
wb::Expected<std::vector<double>> StepFfnFlipSlack(const StepContext& ctx, std::span<const double> norm2);
std::vector<double> StepOutput(std::span<const double> residual1, std::span<const double> ffnOut);
wb::Expected<FinalStep> StepFinal(const StepContext& ctx, std::span<const double> lastOutput);

}  // namespace ref
