// One stage-5 case, prepared once in the runner: the model (opened by the runner's own copy
// of the model library), the tokens, the calls, the cache's geometry and page table, and the
// float64 reference of the whole sequence with the cache's rounding emulated.
//
// Contract: the model is data/models/NAME/model.gguf or data/models/NAME/hf/ for a case's
// "model" and "format", or the path `check 5 --model` gave. Tokens come from the case seed
// (SplitMix64, uniform over the vocabulary), so token p does not depend on how the case splits
// the sequence into calls. The page table is a permutation of the pages from the same seed,
// so a decoder that maps positions to pages without it is caught. The reference is
// ref::RunDecoderTrace over every token with the case's cache rows; because attention reads
// every key and value as the cache stores it, call s's expected buffers are rows
// pos_s .. pos_s + n_s - 1 of it, however the calls split the sequence.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/expected.h"
#include "model/config/model_weights.h"
#include "model/config/weight_source.h"
#include "reference/decoder/decoder.h"
#include "reference/decoder/decoder_options.h"
#include "runner/cases/case_file.h"
#include "runner/engine/paths.h"
#include "stage05_decoder.h"

namespace wb::stage05 {

// The per-layer float buffers of the contract's LayerBuffers, in the order a layer computes
// them (the reference trace's stage-1 order).
enum class LayerBuffer { kNorm1, kQ, kK, kV, kAttnOut, kResidual1, kNorm2, kFfnOut, kOutput };
constexpr int kLayerBufferCount = 9;
constexpr std::array<const char*, kLayerBufferCount> kLayerBufferNames = {
    "norm1", "q", "k", "v", "attnOut", "residual1", "norm2", "ffnOut", "output"};

struct CallSpan {
  int position = 0;  // the first position of the call: cache.size when it starts
  int tokens = 0;    // n
};

// What the reference says every position holds (T = every token of the case).
struct Expectations {
  std::vector<double> embedding;                                             // T x H
  std::vector<std::array<std::vector<double>, kLayerBufferCount>> layers;   // per layer, T rows each
  std::vector<std::vector<int>> expertIds;        // per layer: T x K (empty on dense layers)
  std::vector<std::vector<double>> expertWeights;  // per layer: T x K
  std::vector<double> finalNorm;                  // T x H
  std::vector<double> logits;                     // T x V
};

struct DecoderCase {
  std::string modelPath;    // absolute
  std::string modelLabel;   // "qwen3 (GGUF)", for headlines
  std::unique_ptr<model::WeightSource> source;  // the views of `weights` point into it
  model::ModelConfig config;
  model::ModelWeights weights;
  std::vector<int32_t> tokens;
  std::vector<CallSpan> calls;
  CacheGeometry geometry;
  std::vector<int32_t> pageTable;
  Expectations expected;
  bool quantizedProducts = false;  // some matrix is Q8_0 or Q4_0: its products quantize their inputs
  // The stored types of the matrices products are taken with ("Q8_0", "F16"), each once, in
  // the order first met: which kernels the provided weight_matmul hands them to.
  std::vector<std::string> matrixTypes;
  // "logits": "last": every call asks for Logits::kLast, so finalNorm and logits hold one row
  // per call, the call's last token's, at row 0 of the call's rows.
  bool lastLogitsOnly = false;

  int Tokens() const { return static_cast<int>(tokens.size()); }
  int Layers() const { return config.layerCount(); }
  // Width of a layer buffer's row.
  int Width(LayerBuffer b) const;
  // The reference's options for this case: the cache's rows emulated, no misconception.
  ref::DecoderOptions Options() const;
  // Rows of the call of a whole-sequence buffer of `width` values per row.
  std::span<const double> Rows(std::span<const double> all, const CallSpan& call, int width) const;
  // The rows with logits of a call: all of them, or the last one (lastLogitsOnly).
  int LogitRowCount(const CallSpan& call) const { return lastLogitsOnly ? 1 : call.tokens; }
  std::span<const double> LogitRows(std::span<const double> all, const CallSpan& call, int width) const;
};

// The absolute path of a case's model, and whether it exists.
Expected<std::string> ModelPathOf(const CaseSpec& spec, const WorkbookPaths& paths);
// A toy case's model, relative to the workbook: data/models/NAME/hf or model.gguf, or the
// case's variant of it (hf-VARIANT, model-VARIANT.gguf).
std::string ToyModelPath(const CaseSpec& spec);

// BadData for a model the workbook cannot run (naming the file and the key or tensor);
// BadUsage for a case that does not fit it (more tokens than the cache a page size allows).
Expected<DecoderCase> PrepareDecoderCase(const CaseSpec& spec, const WorkbookPaths& paths);

CacheType CacheTypeOf(const std::string& name);

// The reference of the case's tokens through a model (the case's own, or a copy with a
// switch flipped, for naming a misconception) with the given options.
Expected<Expectations> ComputeExpectations(const DecoderCase& data, const model::ModelConfig& config,
                                           const model::ModelWeights& weights, const ref::DecoderOptions& options);  // "f32", "f16", "int8"

}  // namespace wb::stage05
