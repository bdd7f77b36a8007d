#include "decoder_checks.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "reference/decoder/cache_rows.h"
#include "runner/compare/compare.h"
#include "runner/isolation/shared_layout.h"

namespace wb::stage05 {

namespace {

using L = DecoderCall;

// The chain's tolerance, for every float checkpoint. The decoder is float32 arithmetic over
// weights that are exact floats, so each operator's own error is a few float roundings
// (about 6e-8 relative) times the length of its sums (a few thousand terms at most in a real
// model), and the chain adds up every layer's: on the toy models the solution stays under
// 1e-5 of each buffer's RMS (the lesson's table), on a 22-layer model under 1e-3. 2e-3 of the
// RMS, and 2e-3 relative, leaves that room and still separates every misconception the
// runner names by orders of magnitude (each changes its buffer by 1 % or more).
constexpr Tolerance kChainTolerance{.absoluteOfRms = 2e-3, .relative = 2e-3};

ref::CacheRowType RowTypeOf(CacheType type) {
  switch (type) {
    case CacheType::kF16: return ref::CacheRowType::kF16;
    case CacheType::kInt8: return ref::CacheRowType::kInt8;
    default: return ref::CacheRowType::kF32;
  }
}

std::vector<double> ToDouble(std::span<const float> values) { return {values.begin(), values.end()}; }

// The layer buffer each float checkpoint of a layer reads from the child, by name.
struct LayerCheckpoint {
  const char* name;
  L::Buffer buffer;
  LayerBuffer reference;
};
constexpr LayerCheckpoint kNorm1{"norm1", L::kNorm1, LayerBuffer::kNorm1};
constexpr LayerCheckpoint kQ{"q", L::kQ, LayerBuffer::kQ};
constexpr LayerCheckpoint kK{"k", L::kK, LayerBuffer::kK};
constexpr LayerCheckpoint kV{"v", L::kV, LayerBuffer::kV};
constexpr LayerCheckpoint kAttnOut{"attnOut", L::kAttnOut, LayerBuffer::kAttnOut};
constexpr LayerCheckpoint kResidual1{"residual1", L::kResidual1, LayerBuffer::kResidual1};
constexpr LayerCheckpoint kNorm2{"norm2", L::kNorm2, LayerBuffer::kNorm2};
constexpr LayerCheckpoint kFfnOut{"ffnOut", L::kFfnOut, LayerBuffer::kFfnOut};
constexpr LayerCheckpoint kOutput{"output", L::kOutput, LayerBuffer::kOutput};

class CaseChecker {
 public:
  CaseChecker(const DecoderCase& data, ChildRun& run, const StageInfo& stage, double points)
      : data_(data), run_(run), stage_(stage), points_(points), rowBytes_(CacheRowBytes(data.geometry)),
        arenaBytes_(CacheArenaBytes(data.geometry)), group_(Int8GroupSize(data.config.headDim)) {}

  ChainResult Run();

 private:
  size_t Add(CheckpointDescriptor d) {
    descriptors_.push_back(std::move(d));
    return descriptors_.size() - 1;
  }
  std::span<const float> Keep(std::vector<float> values) {
    kept_.push_back(std::move(values));
    return kept_.back();
  }
  std::string Name(const std::string& name, int call) const { return stage_.Reported(name, call + 1); }
  std::string Name(const std::string& name, int call, int layer) const {
    return stage_.Reported(name, call + 1, layer);
  }

  // A float checkpoint of rows x width values against the reference's rows of the call.
  CheckpointDescriptor Value(std::string name, std::span<const float> got, std::vector<double> expected, int call,
                             int width, int headDim, const char* unit) const;
  void DescribeCall(int call);
  void DescribeLayer(int call, int layer);
  // The call's rows of a layer's k or v as the cache holds them after the call (decoded).
  std::vector<float> StoredRows(int call, int layer, int which) const;
  // The contract's rounding of rows (as the cache would store and read them back).
  std::vector<double> Rounded(std::span<const double> rows) const;
  std::vector<double> Rounded(std::span<const float> rows) const;
  CheckpointReport CheckOtherRows(int call) const;
  std::span<const unsigned char> ArenaAfter(int call) {
    return run_.Bytes(L::kArenaAfter).subspan(static_cast<size_t>(call) * arenaBytes_, arenaBytes_);
  }
  // Byte offset of (layer, which, position) in the arena, through the case's page table.
  size_t RowOffset(int layer, int which, int position) const {
    const CacheGeometry& g = data_.geometry;
    const size_t page = static_cast<size_t>(data_.pageTable[static_cast<size_t>(position / g.pageSize)]);
    const size_t row = ((page * g.layers + layer) * 2 + which) * g.pageSize + position % g.pageSize;
    return row * rowBytes_;
  }

  const DecoderCase& data_;
  ChildRun& run_;
  const StageInfo& stage_;
  double points_;
  size_t rowBytes_;
  size_t arenaBytes_;
  int group_;
  std::vector<CheckpointDescriptor> descriptors_;
  std::deque<std::vector<float>> kept_;  // buffers descriptors point into (a deque never moves them)
  std::map<std::tuple<int, int, std::string>, size_t> index_;  // (call, layer or -1, name) -> descriptor
};

CheckpointDescriptor CaseChecker::Value(std::string name, std::span<const float> got, std::vector<double> expected,
                                        int call, int width, int headDim, const char* unit) const {
  const CallSpan& span = data_.calls[call];
  CheckpointDescriptor d;
  d.name = std::move(name);
  d.shape = fmt::format("{} x {}", span.tokens, width);
  d.got = got;
  d.expected = std::move(expected);
  d.tolerance = kChainTolerance;
  d.geometry = {.rows = span.tokens, .width = width, .headDim = headDim, .rowName = "position",
                .firstRow = span.position};
  d.where = [span, width, headDim, unit](size_t index) {
    const int row = static_cast<int>(index / width);
    const int column = static_cast<int>(index % width);
    std::string text = fmt::format("token {} (position {})", row, span.position + row);
    if (headDim > 0) return text + fmt::format(", head {}, channel {}", column / headDim, column % headDim);
    return text + fmt::format(", {} {}", unit, column);
  };
  return d;
}

std::vector<float> CaseChecker::StoredRows(int call, int layer, int which) const {
  const CallSpan& span = data_.calls[call];
  const int width = data_.config.kvWidth();
  std::vector<float> rows(static_cast<size_t>(span.tokens) * width);
  const auto arena = const_cast<CaseChecker*>(this)->ArenaAfter(call);
  for (int i = 0; i < span.tokens; ++i) {
    const auto bytes = arena.subspan(RowOffset(layer, which, span.position + i), rowBytes_);
    std::span<float> out(rows.data() + static_cast<size_t>(i) * width, width);
    // A row still entirely the poison the arena started as was never stored: say so as the
    // float checks do, with the poison word.
    bool poisoned = true;
    for (size_t b = 0; b + 4 <= bytes.size() && poisoned; b += 4) {
      uint32_t word;
      std::memcpy(&word, bytes.data() + b, 4);
      poisoned = word == shm::kPoisonWord;
    }
    if (poisoned) {
      float poison;
      const uint32_t word = shm::kPoisonWord;
      std::memcpy(&poison, &word, 4);
      std::fill(out.begin(), out.end(), poison);
      continue;
    }
    ref::DecodeCacheRow(RowTypeOf(data_.geometry.type), group_,
                        std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()), out);
  }
  return rows;
}

std::vector<double> CaseChecker::Rounded(std::span<const float> rows) const {
  const int width = data_.config.kvWidth();
  std::vector<double> out(rows.size());
  std::vector<std::byte> stored(rowBytes_);
  std::vector<float> back(width);
  for (size_t r = 0; r * width < rows.size(); ++r) {
    ref::EncodeCacheRow(RowTypeOf(data_.geometry.type), group_, rows.subspan(r * width, width), stored);
    ref::DecodeCacheRow(RowTypeOf(data_.geometry.type), group_, stored, back);
    std::copy(back.begin(), back.end(), out.begin() + static_cast<ptrdiff_t>(r * width));
  }
  return out;
}

std::vector<double> CaseChecker::Rounded(std::span<const double> rows) const {
  std::vector<float> asFloat(rows.begin(), rows.end());
  return Rounded(std::span<const float>(asFloat));
}

void CaseChecker::DescribeLayer(int call, int layer) {
  const model::ModelConfig& c = data_.config;
  const CallSpan& span = data_.calls[call];
  const auto& reference = data_.expected.layers[static_cast<size_t>(layer)];
  auto got = [&](L::Buffer b) {
    return run_.Floats(b).subspan(SliceStart(data_, b, call, layer), static_cast<size_t>(span.tokens) * RowWidth(data_, b));
  };
  auto value = [&](const LayerCheckpoint& cp, std::vector<size_t> upstream) {
    const int width = data_.Width(cp.reference);
    const bool heads = cp.buffer == L::kQ || cp.buffer == L::kK || cp.buffer == L::kV || cp.buffer == L::kAttnOut;
    const auto expected = data_.Rows(reference[static_cast<int>(cp.reference)], span, width);
    CheckpointDescriptor d = Value(Name(cp.name, call, layer), got(cp.buffer), {expected.begin(), expected.end()},
                                   call, width, heads ? c.headDim : 0, "channel");
    d.upstream = std::move(upstream);
    const size_t at = Add(std::move(d));
    index_[{call, layer, cp.name}] = at;
    return at;
  };
  const size_t input = layer == 0 ? index_.at({call, -1, "embedding"}) : index_.at({call, layer - 1, "output"});
  const size_t norm1 = value(kNorm1, {input});
  const size_t q = value(kQ, {norm1});
  const size_t k = value(kK, {norm1});
  const size_t v = value(kV, {norm1});

  // The rows the call stored, read back.
  size_t caches[2];
  for (int which = 0; which < 2; ++which) {
    const size_t source = which == 0 ? k : v;
    const LayerBuffer buffer = which == 0 ? LayerBuffer::kK : LayerBuffer::kV;
    const auto referenceRows = data_.Rows(reference[static_cast<int>(buffer)], span, c.kvWidth());
    const std::span<const float> stored = Keep(StoredRows(call, layer, which));
    const std::span<const float> student = got(which == 0 ? L::kK : L::kV);
    CheckpointDescriptor d = Value(Name(which == 0 ? "kCache" : "vCache", call, layer), stored,
                                   Rounded(referenceRows), call, c.kvWidth(), c.headDim, "channel");
    d.upstream = {source};
    d.local = [this, student] { return Rounded(student); };
    d.localTolerance = Tolerance{};  // the contract's rounding of your own k and v, exactly
    d.localDecides = true;
    caches[which] = Add(std::move(d));
    index_[{call, layer, which == 0 ? "kCache" : "vCache"}] = caches[which];
  }
  const size_t attnOut = value(kAttnOut, {q, caches[0], caches[1]});
  const size_t residual1 = value(kResidual1, {attnOut, input});
  const size_t norm2 = value(kNorm2, {residual1});
  const size_t ffnOut = value(kFfnOut, {norm2});
  value(kOutput, {residual1, ffnOut});
}

CheckpointReport CaseChecker::CheckOtherRows(int call) const {
  CheckpointReport report;
  report.name = Name("cacheOtherRows", call);
  report.shape = fmt::format("{} bytes", arenaBytes_);
  report.maxPoints = points_;
  const CallSpan& span = data_.calls[call];
  const auto after = const_cast<CaseChecker*>(this)->ArenaAfter(call);
  std::vector<unsigned char> before(arenaBytes_);
  if (call == 0) {
    for (size_t b = 0; b < arenaBytes_; ++b) before[b] = static_cast<unsigned char>(shm::kPoisonWord >> (8 * (b % 4)));
  } else {
    const auto earlier = const_cast<CaseChecker*>(this)->ArenaAfter(call - 1);
    std::copy(earlier.begin(), earlier.end(), before.begin());
  }
  // The call's own rows may change; everything else must not.
  std::vector<bool> own(arenaBytes_ / rowBytes_, false);
  for (int layer = 0; layer < data_.Layers(); ++layer) {
    for (int which = 0; which < 2; ++which) {
      for (int i = 0; i < span.tokens; ++i) own[RowOffset(layer, which, span.position + i) / rowBytes_] = true;
    }
  }
  size_t changed = 0;
  std::string first;
  const CacheGeometry& g = data_.geometry;
  for (size_t row = 0; row < own.size(); ++row) {
    report.total += 1;
    if (own[row] || std::memcmp(before.data() + row * rowBytes_, after.data() + row * rowBytes_, rowBytes_) == 0) {
      continue;
    }
    ++changed;
    if (first.empty()) {
      const size_t slot = row % g.pageSize;
      const size_t which = row / g.pageSize % 2;
      const size_t layer = row / g.pageSize / 2 % g.layers;
      const size_t page = row / g.pageSize / 2 / g.layers;
      int position = -1;
      for (size_t p = 0; p < data_.pageTable.size(); ++p) {
        if (static_cast<size_t>(data_.pageTable[p]) == page) position = static_cast<int>(p * g.pageSize + slot);
      }
      first = fmt::format("layer {} {} of {}", layer, which == 0 ? "keys" : "values",
                          position >= 0 ? fmt::format("position {}", position) : fmt::format("page {} slot {}", page, slot));
    }
  }
  report.failing = changed;
  report.status = changed == 0 ? CheckStatus::kPass : CheckStatus::kFail;
  report.points = changed == 0 ? points_ : 0;
  if (changed > 0) {
    report.observation = fmt::format(
        "{} cache row{} outside this call's positions ({}-{}) changed, the first {}: a call stores only its own "
        "positions' rows, at the page the page table gives",
        changed, changed == 1 ? "" : "s", span.position, span.position + span.tokens - 1, first);
  }
  return report;
}

void CaseChecker::DescribeCall(int call) {
  const model::ModelConfig& c = data_.config;
  const CallSpan& span = data_.calls[call];
  auto got = [&](L::Buffer b, int rows) {
    return run_.Floats(b).subspan(SliceStart(data_, b, call, 0), static_cast<size_t>(rows) * RowWidth(data_, b));
  };
  const auto embedding = data_.Rows(data_.expected.embedding, span, c.hidden);
  CheckpointDescriptor e = Value(Name("embedding", call), got(L::kEmbedding, span.tokens),
                                 {embedding.begin(), embedding.end()}, call, c.hidden, 0, "channel");
  index_[{call, -1, "embedding"}] = Add(std::move(e));
  for (int layer = 0; layer < data_.Layers(); ++layer) DescribeLayer(call, layer);
  const size_t last = index_.at({call, data_.Layers() - 1, "output"});
  if (!data_.expected.finalNorm.empty()) {
    const auto finalNorm = data_.Rows(data_.expected.finalNorm, span, c.hidden);
    CheckpointDescriptor f = Value(Name("finalNorm", call), got(L::kFinalNorm, LogitRows(span)),
                                   {finalNorm.begin(), finalNorm.end()}, call, c.hidden, 0, "channel");
    f.upstream = {last};
    index_[{call, -1, "finalNorm"}] = Add(std::move(f));
  }
  const auto logits = data_.Rows(data_.expected.logits, span, c.vocab);
  CheckpointDescriptor g = Value(Name("logits", call), got(L::kLogits, LogitRows(span)),
                                 {logits.begin(), logits.end()}, call, c.vocab, 0, "vocabulary entry");
  g.upstream = {index_.count({call, -1, "finalNorm"}) ? index_.at({call, -1, "finalNorm"}) : last};
  Add(std::move(g));
  CheckpointDescriptor other;
  other.name = Name("cacheOtherRows", call);
  other.custom = [this, call] { return CheckOtherRows(call); };
  Add(std::move(other));
}

ChainResult CaseChecker::Run() {
  const int reached = std::min<int>(static_cast<int>(data_.calls.size()), run_.callsReturned + 1);
  for (int call = 0; call < reached; ++call) DescribeCall(call);
  ChainResult result = CheckChain(descriptors_, points_);
  // Calls after the one that stopped the child: not reached, with the same names.
  for (int call = reached; call < static_cast<int>(data_.calls.size()); ++call) {
    const CallSpan& span = data_.calls[call];
    const model::ModelConfig& c = data_.config;
    auto notReached = [&](const std::string& name, int width) {
      result.checkpoints.push_back(
          NotReached(name, fmt::format("{} x {}", span.tokens, width), static_cast<size_t>(span.tokens) * width, points_));
    };
    notReached(Name("embedding", call), c.hidden);
    for (int layer = 0; layer < data_.Layers(); ++layer) {
      for (const LayerCheckpoint* cp : {&kNorm1, &kQ, &kK, &kV}) notReached(Name(cp->name, call, layer), data_.Width(cp->reference));
      notReached(Name("kCache", call, layer), c.kvWidth());
      notReached(Name("vCache", call, layer), c.kvWidth());
      for (const LayerCheckpoint* cp : {&kAttnOut, &kResidual1, &kNorm2, &kFfnOut, &kOutput}) {
        notReached(Name(cp->name, call, layer), data_.Width(cp->reference));
      }
    }
    if (!data_.expected.finalNorm.empty()) notReached(Name("finalNorm", call), c.hidden);
    notReached(Name("logits", call), c.vocab);
    notReached(Name("cacheOtherRows", call), 1);
  }
  return result;
}

}  // namespace

ChainResult CheckDecoderCase(const DecoderCase& data, ChildRun& run, const StageInfo& stage, double points) {
  CaseChecker checker(data, run, stage, points);
  return checker.Run();
}

CheckpointReport CheckAllocations(const DecoderCase& data, ChildRun& run, double points) {
  CheckpointReport report;
  report.name = "allocations";
  report.shape = fmt::format("{} decode step{}", data.calls.size() - 1, data.calls.size() == 2 ? "" : "s");
  report.maxPoints = points;
  const auto bytes = run.Bytes(L::kAllocations);
  std::vector<std::string> steps;
  for (int call = 1; call < std::min<int>(run.callsReturned, static_cast<int>(data.calls.size())); ++call) {
    uint64_t count;
    std::memcpy(&count, bytes.data() + static_cast<size_t>(call) * sizeof(uint64_t), sizeof(count));
    report.total += 1;
    if (count == 0) continue;
    report.failing += 1;
    steps.push_back(fmt::format("step {} ({} allocation{})", call + 1, count, count == 1 ? "" : "s"));
  }
  report.status = report.failing == 0 ? CheckStatus::kPass : CheckStatus::kFail;
  report.points = report.failing == 0 ? points : 0;
  if (report.failing > 0) {
    report.observation = fmt::format(
        "{} allocated memory: a decode step must not (everything it needs is in the cache, the buffers and the "
        "scratch, reserved before the first call; a std::vector or new inside decoder_forward allocates)",
        JoinNames(steps));
  }
  return report;
}

}  // namespace wb::stage05
