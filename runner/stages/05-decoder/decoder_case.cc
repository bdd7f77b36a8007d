#include "decoder_case.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "common/splitmix64.h"
#include "decoder_call.h"

namespace wb::stage05 {

namespace fsys = std::filesystem;
using wb::TensorType;

CacheType CacheTypeOf(const std::string& name) {
  if (name == "f16") return CacheType::kF16;
  if (name == "int8") return CacheType::kInt8;
  return CacheType::kF32;
}

int DecoderCase::Width(LayerBuffer b) const {
  switch (b) {
    case LayerBuffer::kQ:
    case LayerBuffer::kAttnOut: return config.qWidth();
    case LayerBuffer::kK:
    case LayerBuffer::kV: return config.kvWidth();
    default: return config.hidden;
  }
}

std::span<const double> DecoderCase::Rows(std::span<const double> all, const CallSpan& call, int width) const {
  return all.subspan(static_cast<size_t>(call.position) * width, static_cast<size_t>(call.tokens) * width);
}

std::span<const double> DecoderCase::LogitRows(std::span<const double> all, const CallSpan& call, int width) const {
  const std::span<const double> rows = Rows(all, call, width);
  return lastLogitsOnly ? rows.last(static_cast<size_t>(width)) : rows;
}

ref::DecoderOptions DecoderCase::Options() const {
  ref::DecoderOptions options;
  // The provided kernels quantize a Q8_0 or Q4_0 product's input rows (stage05_kernels.h).
  options.quantizeProductInputs = true;
  switch (geometry.type) {
    case CacheType::kF32: options.cache.type = ref::CacheRowType::kF32; break;
    case CacheType::kF16: options.cache.type = ref::CacheRowType::kF16; break;
    case CacheType::kInt8: options.cache.type = ref::CacheRowType::kInt8; break;
  }
  return options;
}

Expected<std::string> ModelPathOf(const CaseSpec& spec, const WorkbookPaths& paths) {
  // `check 5 --model PATH` puts the path itself in the case.
  if (spec.model.find('/') != std::string::npos) {
    std::error_code ec;
    const fsys::path path = fsys::absolute(spec.model, ec).lexically_normal();
    if (ec || !fsys::exists(path, ec)) return BadUsage(fmt::format("{}: no such model file or folder", spec.model));
    return path.string();
  }
  const std::string path = paths.Source(ToyModelPath(spec));
  std::error_code ec;
  if (!fsys::exists(path, ec)) {
    if (!spec.variant.empty()) {
      return BadData(fmt::format("{}: the toy model of '{}' has no variant '{}' in this workbook's data", path,
                                 spec.model, spec.variant));
    }
    return BadData(fmt::format("{}: the toy model of '{}' is missing from this workbook's data", path, spec.model));
  }
  return path;
}

std::string ToyModelPath(const CaseSpec& spec) {
  if (spec.variant.empty()) return fmt::format("data/models/{}/{}", spec.model, spec.format == "hf" ? "hf" : "model.gguf");
  return spec.format == "hf" ? fmt::format("data/models/{}/hf-{}", spec.model, spec.variant)
                             : fmt::format("data/models/{}/model-{}.gguf", spec.model, spec.variant);
}

namespace {

std::string LabelOf(const CaseSpec& spec, const model::ModelConfig& config) {
  if (spec.model.find('/') != std::string::npos) {
    return fmt::format("{} ({})", spec.model, config.format == model::WeightFormat::kGguf ? "GGUF" : "Hugging Face");
  }
  const std::string variant = spec.variant.empty() ? "" : ", " + spec.variant;
  return fmt::format("{} ({}{})", spec.model, spec.format == "hf" ? "Hugging Face" : "GGUF", variant);
}

}  // namespace

Expected<Expectations> ComputeExpectations(const DecoderCase& c, const model::ModelConfig& config,
                                           const model::ModelWeights& weights, const ref::DecoderOptions& options) {
  auto trace = ref::RunDecoderTrace(config, weights, std::span<const int>(c.tokens.data(), c.tokens.size()),
                                    ref::LogitPositions::kAll, options);
  if (!trace) return trace.error();
  Expectations e;
  e.embedding = std::move(trace->embeddings);
  e.layers.resize(trace->layers.size());
  const std::array<ref::Checkpoint, kLayerBufferCount> order = {
      ref::Checkpoint::kNorm1,     ref::Checkpoint::kQ,     ref::Checkpoint::kK,
      ref::Checkpoint::kV,         ref::Checkpoint::kAttnOut, ref::Checkpoint::kResidual1,
      ref::Checkpoint::kNorm2,     ref::Checkpoint::kFfnOut, ref::Checkpoint::kOutput};
  for (size_t l = 0; l < trace->layers.size(); ++l) {
    for (int b = 0; b < kLayerBufferCount; ++b) e.layers[l][b] = std::move(trace->layers[l][ref::Index(order[b])]);
  }
  for (auto& routing : trace->routing) {
    e.expertIds.push_back(std::move(routing.expertIds));
    e.expertWeights.push_back(std::move(routing.expertWeights));
  }
  e.expertIds.resize(trace->layers.size());
  e.expertWeights.resize(trace->layers.size());
  e.finalNorm = std::move(trace->finalNorm);
  e.logits = std::move(trace->logits.values);
  return e;
}

Expected<DecoderCase> PrepareDecoderCase(const CaseSpec& spec, const WorkbookPaths& paths) {
  auto path = ModelPathOf(spec, paths);
  if (!path) return path.error();
  auto opened = model::WeightSource::Open(*path);
  if (!opened) return BadData(opened.error().message);
  DecoderCase c;
  c.modelPath = *path;
  c.source = std::make_unique<model::WeightSource>(std::move(opened).value());
  c.config = c.source->config();
  c.modelLabel = LabelOf(spec, c.config);
  auto bound = model::BindWeights(c.config, *c.source);
  if (!bound) return BadData(bound.error().message);
  c.weights = std::move(bound).value();
  auto blockQuantized = [](const model::WeightMatrix& m) {
    return m.tensor.type == TensorType::kQ8_0 || m.tensor.type == TensorType::kQ4_0;
  };
  auto note = [&c, &blockQuantized](const model::WeightMatrix& m) {
    if (m.rows == 0) return;  // a matrix this layer does not have
    c.quantizedProducts = c.quantizedProducts || blockQuantized(m);
    const std::string type(TensorTypeName(m.tensor.type));
    if (std::find(c.matrixTypes.begin(), c.matrixTypes.end(), type) == c.matrixTypes.end()) {
      c.matrixTypes.push_back(type);
    }
  };
  for (const auto& layer : c.weights.layers) {
    for (const model::WeightMatrix* m : {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down,
                                         &layer.router}) {
      note(*m);
    }
    for (const auto& expert : layer.experts) {
      for (const model::WeightMatrix* m : {&expert.gate, &expert.up, &expert.down}) note(*m);
    }
  }
  note(c.weights.head);

  SplitMix64 random(spec.seed);
  for (int i = 0; i < spec.Tokens(); ++i) {
    c.tokens.push_back(static_cast<int32_t>(random.Next() % static_cast<uint64_t>(c.config.vocab)));
  }
  // The prompt the user gave (`check 5 --model --tokens`); the decode steps' tokens stay seeded.
  for (size_t i = 0; i < spec.tokens.size() && i < c.tokens.size(); ++i) {
    if (spec.tokens[i] < 0 || spec.tokens[i] >= c.config.vocab) {
      return BadUsage(fmt::format("--tokens: {} is not a token id of {} (its vocabulary is 0 to {})", spec.tokens[i],
                                  c.modelPath, c.config.vocab - 1));
    }
    c.tokens[i] = spec.tokens[i];
  }
  int position = 0;
  for (int n : spec.steps) {
    c.calls.push_back({.position = position, .tokens = n});
    position += n;
  }
  if (static_cast<int>(c.calls.size()) > kMaxCalls) {
    return BadUsage(fmt::format("case '{}': {} calls; a case makes at most {}", spec.name, c.calls.size(), kMaxCalls));
  }
  c.geometry.layers = c.config.layerCount();
  c.geometry.kvHeads = c.config.kvHeads;
  c.geometry.headDim = c.config.headDim;
  c.geometry.pageSize = spec.pageSize;
  c.lastLogitsOnly = spec.lastLogitsOnly;
  c.geometry.pages = (c.Tokens() + spec.pageSize - 1) / spec.pageSize;
  c.geometry.type = CacheTypeOf(spec.cache);
  c.pageTable.resize(static_cast<size_t>(c.geometry.pages));
  std::iota(c.pageTable.begin(), c.pageTable.end(), 0);
  // Sattolo's shuffle from the case's seed: a random single cycle, so with two pages or more no
  // logical page is its own physical page, and a decoder that skips the page table is caught.
  SplitMix64 shuffle(spec.seed ^ 0x9A6E7AB1Eull);
  for (size_t i = c.pageTable.size(); i > 1; --i) std::swap(c.pageTable[i - 1], c.pageTable[shuffle.Next() % (i - 1)]);

  auto expected = ComputeExpectations(c, c.config, c.weights, c.Options());
  if (!expected) return expected.error();
  c.expected = std::move(expected).value();
  return c;
}

}  // namespace wb::stage05
