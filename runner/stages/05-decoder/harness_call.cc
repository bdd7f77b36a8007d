// Stage 5's call: every call of a case (decoder_call.h) in one child, in order, over one KV
// cache. The child opens the model itself, through the model library it is linked with, so
// the decoder reads the file as any program using it would.
//
// Allocations are counted (runner/harness/allocation_count.h, linked into the child): the
// count of each call goes back to the runner, which reports a decode step that allocated.
// (Not under AddressSanitizer, which replaces malloc itself: a sanitized child reports no count.)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "decoder_call.h"
#include "runner/harness/allocation_count.h"
#include "model/config/model_weights.h"
#include "model/config/weight_source.h"
#include "runner/harness/harness.h"
#include "runner/stages/05-decoder/child/packed_model.h"
#include "runner/stages/05-decoder/child/work_pool.h"
#include "stage05_decoder.h"

namespace wb::harness {

namespace {

using L = stage05::DecoderCall;

// Elements per row of each checkpoint buffer, and whether it has one slice per layer.
struct Widths {
  size_t of[L::kBufferCount] = {};
  bool perLayer[L::kBufferCount] = {};
};

Widths WidthsOf(const model::ModelConfig& c) {
  Widths w;
  auto set = [&w](L::Buffer b, size_t width, bool perLayer) {
    w.of[b] = width;
    w.perLayer[b] = perLayer;
  };
  const size_t h = c.hidden;
  set(L::kEmbedding, h, false);
  for (L::Buffer b : {L::kNorm1, L::kResidual1, L::kNorm2, L::kFfnOut, L::kOutput}) set(b, h, true);
  set(L::kQ, c.qWidth(), true);
  set(L::kAttnOut, c.qWidth(), true);
  set(L::kK, c.kvWidth(), true);
  set(L::kV, c.kvWidth(), true);
  set(L::kExpertIds, c.expertsPerToken, true);
  set(L::kExpertWeights, c.expertsPerToken, true);
  set(L::kFinalNorm, h, false);
  set(L::kLogits, c.vocab, false);
  return w;
}

}  // namespace

void CallStage(Region& region) {
  region.Bind<L>();
  const L::Params params = region.Params<L>();
  if (params.calls < 1 || params.calls > stage05::kMaxCalls) Fail("the runner asked for no calls");

  const unsigned char* pathBytes = region.As<L, unsigned char>(L::kModelPath);
  const std::string path(reinterpret_cast<const char*>(pathBytes), static_cast<size_t>(params.pathBytes));
  auto source = model::WeightSource::Open(path);
  if (!source) Fail(("the child cannot open the model: " + source.error().message).c_str());
  const model::ModelConfig& config = source->config();
  auto weights = model::BindWeights(config, *source);
  if (!weights) Fail(("the child cannot bind the model's weights: " + weights.error().message).c_str());
  const Model model{config, *weights, model::ComputeRopeFrequencies(config.rope, config.headDim),
                    config.hasLocalRope ? model::ComputeRopeFrequencies(config.localRope, config.headDim)
                                        : model::RopeFrequencies{}};

  KvCache cache;
  cache.geometry = {.layers = config.layerCount(), .kvHeads = config.kvHeads, .headDim = config.headDim,
                    .pageSize = params.pageSize, .pages = params.pages,
                    .type = static_cast<CacheType>(params.cacheType)};
  cache.arena = region.As<L, std::byte>(L::kArena);
  cache.pageTable = region.As<L, int32_t>(L::kPageTable);
  cache.size = 0;
  const size_t arenaBytes = CacheArenaBytes(cache.geometry);

  const int32_t* tokens = region.As<L, int32_t>(L::kTokens);
  const int32_t* callTokens = region.As<L, int32_t>(L::kCallTokens);
  int widest = 0;
  for (int c = 0; c < params.calls; ++c) widest = std::max(widest, static_cast<int>(callTokens[c]));
  const Scratch scratch = CarveScratch(config, widest, region.Floats<L>(L::kScratch));
  const Widths widths = WidthsOf(config);
  const int layers = config.layerCount();
  // Reserved before the first call, so the harness's own bookkeeping allocates nothing later.
  std::vector<LayerBuffers> layerBuffers(static_cast<size_t>(layers));
  // Stage 4's optional step, when the stage-4 kernels take it: the model's quantized matrices
  // packed now, before the first call and outside its timing.
  PackQuantizedWeights(*weights);
  // share_out's helper threads started now: a decoder whose first call shares nothing out (a
  // prompt whose products are stage 4's, attention too short to share) would otherwise start
  // them in a decode step, and starting a thread allocates.
  share_out(1, params.threads, [](int) {});

  auto slice = [&](L::Buffer b, size_t rowsBefore, int rows, int layer) {
    const size_t slices = widths.perLayer[b] ? static_cast<size_t>(layers) : 1;
    return (rowsBefore * slices + static_cast<size_t>(layer) * rows) * widths.of[b];
  };
  auto floats = [&](L::Buffer b, size_t rowsBefore, int rows, int layer) {
    return region.Floats<L>(b) + slice(b, rowsBefore, rows, layer);
  };

  // A call's rows start after the earlier calls' tokens in every buffer; with Logits::kLast
  // its one row of finalNorm and logits is the first of its rows there.
  size_t rowsBefore = 0;   // tokens of the earlier calls
  uint64_t* allocations = region.As<L, uint64_t>(L::kAllocations);
  std::byte* arenaAfter = region.As<L, std::byte>(L::kArenaAfter);
  for (int c = 0; c < params.calls; ++c) {
    const int n = callTokens[c];
    const int logitRows = params.allLogits ? n : 1;
    for (int l = 0; l < layers; ++l) {
      LayerBuffers& b = layerBuffers[static_cast<size_t>(l)];
      b.norm1 = floats(L::kNorm1, rowsBefore, n, l);
      b.q = floats(L::kQ, rowsBefore, n, l);
      b.k = floats(L::kK, rowsBefore, n, l);
      b.v = floats(L::kV, rowsBefore, n, l);
      b.attnOut = floats(L::kAttnOut, rowsBefore, n, l);
      b.residual1 = floats(L::kResidual1, rowsBefore, n, l);
      b.norm2 = floats(L::kNorm2, rowsBefore, n, l);
      b.ffnOut = floats(L::kFfnOut, rowsBefore, n, l);
      b.output = floats(L::kOutput, rowsBefore, n, l);
      const bool moe = config.layers[static_cast<size_t>(l)].moe;
      b.expertIds = moe ? region.As<L, int32_t>(L::kExpertIds) + slice(L::kExpertIds, rowsBefore, n, l) : nullptr;
      b.expertWeights = moe ? floats(L::kExpertWeights, rowsBefore, n, l) : nullptr;
    }
    DecoderBuffers buffers;
    buffers.embedding = floats(L::kEmbedding, rowsBefore, n, 0);
    buffers.layers = layerBuffers.data();
    buffers.finalNorm = floats(L::kFinalNorm, rowsBefore, logitRows, 0);
    buffers.logits = floats(L::kLogits, rowsBefore, logitRows, 0);
    buffers.scratch = scratch;

    WatchFirstAllocation();
    const uint64_t before = AllocationsSoFar();
    region.BeginCall(static_cast<unsigned>(c));
    // The first call, whose allocations are not counted: every helper thread takes its share
    // (work_pool.h), so that per-thread buffers grow here and not in a decode step.
    SetEveryThreadTakesItsShare(c == 0);
    decoder_forward(model, cache, std::span<const int32_t>(tokens + rowsBefore, static_cast<size_t>(n)),
                    params.allLogits ? Logits::kAll : Logits::kLast, buffers, params.threads);
    SetEveryThreadTakesItsShare(false);
    region.EndCall();
    allocations[2 * c] = AllocationsSoFar() - before;
    allocations[2 * c + 1] = static_cast<uint64_t>(FirstAllocationSite());
    std::memcpy(arenaAfter + static_cast<size_t>(c) * arenaBytes, cache.arena, arenaBytes);
    rowsBefore += static_cast<size_t>(n);
  }
}

}  // namespace wb::harness
