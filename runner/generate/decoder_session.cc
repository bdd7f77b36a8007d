#include "runner/generate/decoder_session.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "model/config/rope_frequencies.h"
#include "runner/stages/05-decoder/child/packed_model.h"
#include "runner/stages/05-decoder/child/work_pool.h"

namespace wb::generate {

namespace {

// A quiet NaN with a payload no arithmetic produces: "not written yet".
constexpr uint32_t kUnwrittenBits = 0x7FA5A5A5u;

float Unwritten() {
  float f;
  std::memcpy(&f, &kUnwrittenBits, sizeof f);
  return f;
}

bool IsUnwritten(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits == kUnwrittenBits;
}

uint64_t MatrixBytes(const model::WeightMatrix& m) {
  return m.rows == 0 || m.tensor.RowCount() == 0 ? 0 : m.tensor.data.size() / m.tensor.RowCount() * m.rows;
}

}  // namespace

DecoderSession::DecoderSession(model::WeightSource source, model::ModelWeights weights)
    : source_(std::move(source)),
      weights_(std::move(weights)),
      model_{source_.config(), weights_, model::ComputeRopeFrequencies(source_.config().rope, source_.config().headDim),
             source_.config().hasLocalRope
                 ? model::ComputeRopeFrequencies(source_.config().localRope, source_.config().headDim)
                 : model::RopeFrequencies{}} {}

Expected<std::unique_ptr<DecoderSession>> DecoderSession::Open(const std::string& path, int contextTokens,
                                                               int maxCallTokens, CacheType cacheType, int threads) {
  // The weights read into memory of their own, not left in the file's mapping: a decode step
  // streams all of them, and from anonymous (huge) pages it streams them faster.
  auto source = model::WeightSource::Open(path, Residence::kInMemory);
  if (!source) return source.error();
  auto weights = model::BindWeights(source->config(), *source);
  if (!weights) return weights.error();
  std::unique_ptr<DecoderSession> s(new DecoderSession(std::move(source).value(), std::move(weights).value()));
  // Stage 4's optional step, when the kernels take it: the quantized matrices packed once, now.
  PackQuantizedWeights(s->weights_);
  const model::ModelConfig& c = s->source_.config();
  if (contextTokens < 1) return BadUsage("the context must hold at least one token");
  contextTokens = std::min(contextTokens, std::max(1, c.maxPositions));
  s->maxCallTokens_ = std::clamp(maxCallTokens, 1, contextTokens);
  s->threads_ = std::max(1, threads);
  // share_out's helpers started before the first call, as the stage-5 harness starts them: a
  // decode step allocates nothing, even the first that shares work out.
  share_out(1, s->threads_, [](int) {});

  const int pages = (contextTokens + kPageSize - 1) / kPageSize;
  s->cache_.geometry = {.layers = c.layerCount(), .kvHeads = c.kvHeads, .headDim = c.headDim, .pageSize = kPageSize,
                        .pages = pages, .type = cacheType};
  s->arena_.assign(CacheArenaBytes(s->cache_.geometry), std::byte{0});
  s->pageTable_.resize(static_cast<size_t>(pages));
  for (int p = 0; p < pages; ++p) s->pageTable_[static_cast<size_t>(p)] = p;
  s->cache_.arena = s->arena_.data();
  s->cache_.pageTable = s->pageTable_.data();

  // One set of layer buffers for every layer (the contract's generate mode), each
  // maxCallTokens rows.
  const size_t n = static_cast<size_t>(s->maxCallTokens_);
  const size_t h = static_cast<size_t>(c.hidden), q = static_cast<size_t>(c.qWidth());
  const size_t kv = static_cast<size_t>(c.kvWidth()), top = static_cast<size_t>(c.expertsPerToken);
  const size_t widths[] = {h, q, kv, kv, q, h, h, h, h, top};  // norm1 q k v attnOut residual1 norm2 ffnOut output expertWeights
  size_t total = 0;
  for (size_t w : widths) total += w * n;
  s->layerFloats_.assign(total, 0.0f);
  s->expertIds_.assign(top * n, 0);
  float* next = s->layerFloats_.data();
  auto take = [&next, n](size_t width) {
    float* p = next;
    next += width * n;
    return p;
  };
  LayerBuffers shared;
  shared.norm1 = take(h);
  shared.q = take(q);
  shared.k = take(kv);
  shared.v = take(kv);
  shared.attnOut = take(q);
  shared.residual1 = take(h);
  shared.norm2 = take(h);
  shared.ffnOut = take(h);
  shared.output = take(h);
  shared.expertWeights = top > 0 ? take(top) : nullptr;
  shared.expertIds = top > 0 ? s->expertIds_.data() : nullptr;
  s->layers_.assign(static_cast<size_t>(c.layerCount()), shared);
  s->embedding_.assign(n * h, 0.0f);
  s->finalNorm_.assign(h, 0.0f);
  s->logits_.assign(static_cast<size_t>(c.vocab), 0.0f);
  s->scratchFloats_.assign(ScratchFloats(c, s->maxCallTokens_), 0.0f);
  s->buffers_.embedding = s->embedding_.data();
  s->buffers_.layers = s->layers_.data();
  s->buffers_.finalNorm = s->finalNorm_.data();
  s->buffers_.logits = s->logits_.data();
  s->buffers_.scratch = CarveScratch(c, s->maxCallTokens_, s->scratchFloats_.data());
  return s;
}

std::span<const float> DecoderSession::Forward(std::span<const int32_t> tokens) {
  problem_ = ForwardProblem::kNone;
  if (tokens.empty()) return {};
  if (cache_.size + static_cast<int>(tokens.size()) > capacity()) {
    problem_ = ForwardProblem::kContextFull;
    return {};
  }
  while (!tokens.empty()) {
    const size_t n = std::min(tokens.size(), static_cast<size_t>(maxCallTokens_));
    std::fill(logits_.begin(), logits_.end(), Unwritten());
    const int before = cache_.size;
    // The session's first call: every helper thread takes its share (work_pool.h), so that the
    // kernels' per-thread buffers grow here and not in a decode step.
    SetEveryThreadTakesItsShare(!calledBefore_);
    decoder_forward(model_, cache_, tokens.first(n), Logits::kLast, buffers_, threads_);
    SetEveryThreadTakesItsShare(false);
    calledBefore_ = true;
    if (std::any_of(logits_.begin(), logits_.end(), IsUnwritten)) {
      problem_ = ForwardProblem::kNotWritten;
      return {};
    }
    if (cache_.size != before + static_cast<int>(n)) {
      problem_ = ForwardProblem::kCacheNotAdvanced;
      return {};
    }
    if (!std::all_of(logits_.begin(), logits_.end(), [](float v) { return std::isfinite(v); })) {
      problem_ = ForwardProblem::kNotFinite;
      return {};
    }
    tokens = tokens.subspan(n);
  }
  return logits_;
}

uint64_t DecoderSession::WeightBytesPerToken() const {
  const model::ModelConfig& c = source_.config();
  uint64_t bytes = MatrixBytes(weights_.head);
  if (weights_.embedding.rows > 0) bytes += MatrixBytes(weights_.embedding) / weights_.embedding.rows;
  for (const model::LayerWeights& l : weights_.layers) {
    for (const model::WeightMatrix* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down, &l.router}) {
      bytes += MatrixBytes(*m);
    }
    // A token reads only the experts it is routed to: expertsPerToken of them.
    if (!l.experts.empty() && c.experts > 0) {
      uint64_t expertBytes = 0;
      for (const model::ExpertWeights& e : l.experts) {
        expertBytes += MatrixBytes(e.gate) + MatrixBytes(e.up) + MatrixBytes(e.down);
      }
      bytes += expertBytes / l.experts.size() * static_cast<uint64_t>(c.expertsPerToken);
    }
  }
  return bytes;
}

}  // namespace wb::generate
