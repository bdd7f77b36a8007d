#include "decoder_checks.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "decoder_misconceptions.h"
#include "reference/decoder/cache_rows.h"
#include "reference/decoder/layer_steps.h"
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
// A model with Q8_0 or Q4_0 matrices: the provided kernels quantize each product's input rows
// to Q8_0, and the reference does the same (DecoderCase::Options), but a value near a code's
// rounding boundary can land on either side in float and in double, and one flipped code
// moves a product by a step of its block. On the generated TinyLlama-shape model such flips
// carry the chain 5.5 % of a buffer's RMS away by layer 1. So there the chain view is a coarse
// one, and the local view decides: the reference step on the student's own inputs quantizes
// exactly what the kernels quantized, leaving only float roundings, at kChainTolerance. Except
// inside the FFN, whose down product quantizes the hidden rows the step itself computed: there
// a code may still flip (on kjv-llama-2m's leaderboard run, 255 steps, one did at step 197,
// moving 8 of 192 ffnOut elements by up to 0.5 % of the RMS), so a failing local view of
// ffnOut is compared again with each element allowed the code steps of the hidden codes that
// sit at a boundary (ref::StepFfnFlipSlack).
constexpr Tolerance kQuantizedChainTolerance{.absoluteOfRms = 1e-1, .relative = 1e-1};

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
  // A buffer of the call's rows; with `onlyRow` >= 0, of that one token's row alone (the last
  // token's finalNorm and logits of a call that asks for Logits::kLast).
  CheckpointDescriptor Value(std::string name, std::span<const float> got, std::vector<double> expected, int call,
                             int width, int headDim, const char* unit, int onlyRow = -1) const;
  // The token whose row is the first of a call's rows with logits.
  int FirstLogitToken(const CallSpan& span) const { return data_.lastLogitsOnly ? span.tokens - 1 : -1; }
  void DescribeCall(int call);
  void DescribeLayer(int call, int layer);
  // Rows of positions first .. first + count - 1 of a layer's keys (which 0) or values (1), as
  // the cache holds them after call `afterCall`, read back through the page table with the
  // int8 group `group` (the contract's when 0); a row never stored reads as the poison word.
  std::vector<float> DecodedRows(int afterCall, int layer, int which, int first, int count, int group = 0) const;
  // The call's own rows, and the rows of every position up to the call's last (what its
  // attention reads), after the call.
  std::vector<float> StoredRows(int call, int layer, int which, int group = 0) const {
    return DecodedRows(call, layer, which, data_.calls[call].position, data_.calls[call].tokens, group);
  }
  std::vector<float> StoredRowsUpTo(int call, int layer, int which) const {
    return DecodedRows(call, layer, which, 0, data_.calls[call].position + data_.calls[call].tokens);
  }
  ref::StepContext Context(int call, int layer) const {
    return ref::StepContext{data_.config, data_.weights, options_, layer, data_.calls[call].position,
                            data_.calls[call].tokens};
  }
  // The value of a local step, or an empty vector when the reference cannot run it (the
  // local view is then not shown).
  static std::vector<double> Value(wb::Expected<std::vector<double>> step) {
    return step ? std::move(*step) : std::vector<double>{};
  }
  // The reference with misconception `entry` (of DecoderMisconceptions()); nullptr when the
  // mistake cannot show in this case's model.
  const Expectations* VariantOf(size_t entry);
  // Lets the engine ask which misconception a failing buffer matches.
  void Hook(CheckpointDescriptor& d, const std::string& base, int call, int layer) {
    const std::span<const float> student = d.got;
    const std::string name = d.name;
    d.recognise = [this, base, name, call, layer, student](bool) { return Recognise(base, name, call, layer, student); };
  }
  // A call asking for Logits::kLast gets one row of finalNorm and logits; one left unwritten
  // while the row where the call's last token would sit holds the expected values was
  // written at row n - 1, not row 0. That row lies in the buffer's later rows, which the
  // runner laid out for every token, so the mistake is seen, not a crash.
  void HookLastRow(CheckpointDescriptor& d, L::Buffer b, int call) {
    const CallSpan& span = data_.calls[call];
    if (!data_.lastLogitsOnly || span.tokens < 2) return;
    const size_t width = RowWidth(data_, b);
    const std::span<const float> rowOfLastToken =
        run_.Floats(b).subspan(SliceStart(data_, b, call, 0) + (static_cast<size_t>(span.tokens) - 1) * width, width);
    const std::vector<double> expected = d.expected;
    const std::string name = d.name;
    const Tolerance tolerance = tolerance_;
    const std::string lesson = stage_.lesson;
    d.recogniseUnwritten = [rowOfLastToken, expected, name, tolerance, lesson] {
      Recognition r;
      if (FitOf(rowOfLastToken, expected, tolerance) <= 1.0) {
        r.hit = MisconceptionHit{
            std::string(kLastRowNotAtRowZero),
            fmt::format("Your {} is right but one row too far: this call asked for Logits::kLast, so the buffer holds one "
                        "row, and the last token's row goes at row 0, not at row n - 1.",
                        name),
            lesson + "#last-row-not-at-row-0"};
      }
      return r;
    };
  }
  // The rows of a checkpoint (base name, call, layer) in expectations e.
  std::vector<double> RowsOf(const Expectations& e, const std::string& base, int call, int layer) const;
  Recognition Recognise(const std::string& base, const std::string& name, int call, int layer,
                        std::span<const float> got);
  CheckpointReport CheckExperts(int call, int layer);
  // Whether the first earlier call with a row past position 0 has its q (or k) of `layer`
  // right; nullopt when no earlier call has one.
  std::optional<bool> EarlierRowsRight(const std::string& base, int call, int layer) const;
  std::span<const int32_t> ExpertIds(int call, int layer) {
    return run_.Ints(L::kExpertIds).subspan(SliceStart(data_, L::kExpertIds, call, layer),
                                            static_cast<size_t>(data_.calls[call].tokens) * data_.config.expertsPerToken);
  }
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
  std::map<size_t, std::optional<Expectations>> variants_;     // by entry, computed when first asked
  ref::DecoderOptions options_ = data_.Options();
  Tolerance tolerance_ = data_.quantizedProducts ? kQuantizedChainTolerance : kChainTolerance;
};

CheckpointDescriptor CaseChecker::Value(std::string name, std::span<const float> got, std::vector<double> expected,
                                        int call, int width, int headDim, const char* unit, int onlyRow) const {
  const CallSpan& span = data_.calls[call];
  const int rows = onlyRow >= 0 ? 1 : span.tokens;
  const int firstToken = onlyRow >= 0 ? onlyRow : 0;
  CheckpointDescriptor d;
  d.name = std::move(name);
  d.shape = fmt::format("{} x {}", rows, width);
  d.got = got;
  d.expected = std::move(expected);
  d.tolerance = tolerance_;
  if (data_.quantizedProducts) {
    d.localTolerance = kChainTolerance;
    d.localDecides = true;
  }
  d.geometry = {.rows = rows, .width = width, .headDim = headDim, .rowName = "position",
                .firstRow = span.position + firstToken};
  d.where = [span, width, headDim, unit, firstToken, onlyRow](size_t index) {
    const int row = static_cast<int>(index / width);
    const int column = static_cast<int>(index % width);
    const int token = firstToken + row;
    std::string text = onlyRow >= 0 ? fmt::format("row 0 (Logits::kLast: token {}, position {})", token,
                                                  span.position + token)
                                    : fmt::format("token {} (position {})", token, span.position + token);
    if (headDim > 0) return text + fmt::format(", head {}, channel {}", column / headDim, column % headDim);
    return text + fmt::format(", {} {}", unit, column);
  };
  return d;
}

std::vector<float> CaseChecker::DecodedRows(int afterCall, int layer, int which, int first, int count,
                                            int group) const {
  const int width = data_.config.kvWidth();
  const int g = group == 0 ? group_ : group;
  const ref::CacheRowType type = RowTypeOf(data_.geometry.type);
  const size_t bytesOfGroup = ref::CacheRowBytes(type, width, g);
  float poison;
  std::memcpy(&poison, &shm::kPoisonWord, 4);
  std::vector<float> rows(static_cast<size_t>(count) * width);
  const auto arena = const_cast<CaseChecker*>(this)->ArenaAfter(afterCall);
  for (int i = 0; i < count; ++i) {
    const auto bytes = arena.subspan(RowOffset(layer, which, first + i), rowBytes_);
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
      std::fill(out.begin(), out.end(), poison);
      continue;
    }
    ref::DecodeCacheRow(type, g,
                        std::span(reinterpret_cast<const std::byte*>(bytes.data()), std::min(bytes.size(), bytesOfGroup)),
                        out);
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
    const std::span<const float> student = d.got;
    const std::string name = d.name;
    const std::string base = cp.name;
    d.recognise = [this, base, name, call, layer, student](bool) { return Recognise(base, name, call, layer, student); };
    const size_t at = Add(std::move(d));
    index_[{call, layer, cp.name}] = at;
    return at;
  };
  const size_t input = layer == 0 ? index_.at({call, -1, "embedding"}) : index_.at({call, layer - 1, "output"});
  // The student's own buffers, as the local views read them.
  const std::span<const float> x = descriptors_[input].got;
  auto mine = [&](L::Buffer b) { return got(b); };
  auto local = [this](size_t at, std::function<std::vector<double>()> step) { descriptors_[at].local = std::move(step); };
  const ref::StepContext ctx = Context(call, layer);
  const size_t norm1 = value(kNorm1, {input});
  local(norm1, [ctx, x] { return ref::StepNorm1(ctx, ToDouble(x)); });
  const size_t q = value(kQ, {norm1});
  const size_t k = value(kK, {norm1});
  const size_t v = value(kV, {norm1});
  const std::span<const float> myNorm1 = mine(L::kNorm1);
  for (const auto& [at, part] : {std::pair{q, 0}, std::pair{k, 1}, std::pair{v, 2}}) {
    local(at, [ctx, myNorm1, part] {
      auto qkv = ref::StepQkv(ctx, ToDouble(myNorm1));
      if (!qkv) return std::vector<double>{};
      return part == 0 ? std::move(qkv->q) : part == 1 ? std::move(qkv->k) : std::move(qkv->v);
    });
  }

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
    // Attention reads every row up to the call's last, not only the ones the call stored.
    d.readDownstream = Keep(StoredRowsUpTo(call, layer, which));
    d.localTolerance = Tolerance{};  // the contract's rounding of your own k and v, exactly
    d.localDecides = true;
    const std::string base = which == 0 ? "kCache" : "vCache";
    const std::string name = d.name;
    d.recognise = [this, base, name, call, layer, stored](bool) { return Recognise(base, name, call, layer, stored); };
    caches[which] = Add(std::move(d));
    index_[{call, layer, which == 0 ? "kCache" : "vCache"}] = caches[which];
  }
  const size_t attnOut = value(kAttnOut, {q, caches[0], caches[1]});
  {
    const std::span<const float> myQ = mine(L::kQ);
    const std::span<const float> keys = descriptors_[caches[0]].readDownstream;
    const std::span<const float> values = descriptors_[caches[1]].readDownstream;
    local(attnOut, [ctx, myQ, keys, values] {
      return ref::StepAttention(ctx, ToDouble(myQ), ToDouble(keys), ToDouble(values));
    });
    // It reads every row the earlier calls stored too: a wrong row stored then is why this
    // attnOut is off, even where its own q and rows are right.
    for (int earlier = 0; earlier < call; ++earlier) {
      descriptors_[attnOut].alsoComputedFrom.push_back(Name("kCache", earlier, layer));
      descriptors_[attnOut].alsoComputedFrom.push_back(Name("vCache", earlier, layer));
      descriptors_[attnOut].alsoComputedFrom.push_back(Name("cacheOtherRows", earlier));
    }
  }
  const size_t residual1 = value(kResidual1, {attnOut, input});
  {
    const std::span<const float> myAttnOut = mine(L::kAttnOut);
    local(residual1, [ctx, myAttnOut, x] { return Value(ref::StepResidual1(ctx, ToDouble(myAttnOut), ToDouble(x))); });
  }
  const size_t norm2 = value(kNorm2, {residual1});
  {
    const std::span<const float> myResidual1 = mine(L::kResidual1);
    local(norm2, [ctx, myResidual1] { return ref::StepNorm2(ctx, ToDouble(myResidual1)); });
  }
  std::vector<size_t> ffnInputs = {norm2};
  if (c.layers[static_cast<size_t>(layer)].moe && !data_.expected.expertIds[static_cast<size_t>(layer)].empty()) {
    CheckpointDescriptor experts;
    experts.name = Name("experts", call, layer);
    experts.custom = [this, call, layer] { return CheckExperts(call, layer); };
    experts.upstream = {norm2};
    ffnInputs.push_back(Add(std::move(experts)));
  }
  const size_t ffnOut = value(kFfnOut, ffnInputs);
  {
    const std::span<const float> myNorm2 = mine(L::kNorm2);
    const bool moe = ffnInputs.size() > 1;
    const std::span<const int32_t> ids = moe ? ExpertIds(call, layer) : std::span<const int32_t>{};
    const std::span<const float> weights =
        moe ? run_.Floats(L::kExpertWeights).subspan(SliceStart(data_, L::kExpertWeights, call, layer), ids.size())
            : std::span<const float>{};
    const int topK = c.expertsPerToken;
    local(ffnOut, [ctx, myNorm2, moe, ids, weights, topK] {
      if (!moe) {
        auto ffn = ref::StepFfn(ctx, ToDouble(myNorm2));
        return ffn ? std::move(ffn->ffnOut) : std::vector<double>{};
      }
      // The experts the student chose, with the student's weights.
      ref::ExpertRouting routing;
      routing.topK = topK;
      routing.expertIds.assign(ids.begin(), ids.end());
      routing.expertWeights = ToDouble(weights);
      return Value(ref::StepExpertFfn(ctx, ToDouble(myNorm2), routing));
    });
    // Asked for only when the local view fails: a hidden code at a rounding boundary that the
    // student's float arithmetic rounded the other way (a dense layer's; empty otherwise).
    if (!moe) {
      descriptors_[ffnOut].localSlack = [ctx, myNorm2] { return Value(ref::StepFfnFlipSlack(ctx, ToDouble(myNorm2))); };
    }
  }
  const size_t output = value(kOutput, {residual1, ffnOut});
  {
    const std::span<const float> myResidual1 = mine(L::kResidual1);
    const std::span<const float> myFfnOut = mine(L::kFfnOut);
    local(output, [myResidual1, myFfnOut] { return ref::StepOutput(ToDouble(myResidual1), ToDouble(myFfnOut)); });
  }
}

const Expectations* CaseChecker::VariantOf(size_t entry) {
  if (auto found = variants_.find(entry); found != variants_.end()) return found->second ? &*found->second : nullptr;
  Variant variant{data_.config, data_.weights, data_.Options()};
  std::optional<Expectations> computed;
  if (DecoderMisconceptions()[entry].apply(variant, data_.geometry.type)) {
    auto e = ComputeExpectations(data_, variant.config, variant.weights, variant.options);
    if (e) computed = std::move(*e);  // a variant the reference cannot run names nothing
  }
  const auto& stored = variants_.emplace(entry, std::move(computed)).first->second;
  return stored ? &*stored : nullptr;
}

std::vector<double> CaseChecker::RowsOf(const Expectations& e, const std::string& base, int call, int layer) const {
  const CallSpan& span = data_.calls[call];
  const model::ModelConfig& c = data_.config;
  auto rows = [&](std::span<const double> all, int width) {
    const auto r = data_.Rows(all, span, width);
    return std::vector<double>(r.begin(), r.end());
  };
  if (base == "embedding") return rows(e.embedding, c.hidden);
  auto logitRows = [&](std::span<const double> all, int width) {
    const auto r = data_.LogitRows(all, span, width);
    return std::vector<double>(r.begin(), r.end());
  };
  if (base == "finalNorm") return logitRows(e.finalNorm, c.hidden);
  if (base == "logits") return logitRows(e.logits, c.vocab);
  const auto& buffers = e.layers[static_cast<size_t>(layer)];
  if (base == "kCache" || base == "vCache") {
    return Rounded(std::span<const double>(rows(buffers[static_cast<int>(base == "kCache" ? LayerBuffer::kK : LayerBuffer::kV)],
                                               c.kvWidth())));
  }
  for (int b = 0; b < kLayerBufferCount; ++b) {
    if (base == kLayerBufferNames[b]) return rows(buffers[b], data_.Width(static_cast<LayerBuffer>(b)));
  }
  return {};
}

Recognition CaseChecker::Recognise(const std::string& base, const std::string& name, int call, int layer,
                                   std::span<const float> got) {
  std::vector<Candidate> candidates;
  const auto entries = DecoderMisconceptions();
  for (size_t i = 0; i < entries.size(); ++i) {
    const DecoderMisconception& entry = entries[i];
    if (std::find(entry.showsAt.begin(), entry.showsAt.end(), base) == entry.showsAt.end()) continue;
    std::vector<double> predicted;
    std::span<const float> compared = got;
    std::vector<float> regrouped;
    if ((base == "kCache" || base == "vCache") && entry.id == "int8-group-straddles-heads") {
      // The rows as stored with groups of 32, against that rounding of the student's own k or v.
      Variant variant{data_.config, data_.weights, data_.Options()};
      if (!entry.apply(variant, data_.geometry.type)) continue;
      const int which = base == "kCache" ? 0 : 1;
      regrouped = StoredRows(call, layer, which, variant.options.cache.group);
      compared = regrouped;
      const auto own = run_.Floats(which == 0 ? L::kK : L::kV)
                           .subspan(SliceStart(data_, which == 0 ? L::kK : L::kV, call, layer), regrouped.size());
      std::vector<double> asDouble(own.begin(), own.end());
      predicted.resize(asDouble.size());
      ref::RoundTripRows(RowTypeOf(data_.geometry.type), variant.options.cache.group, data_.config.kvWidth(), asDouble,
                         predicted);
    } else {
      const Expectations* variant = VariantOf(i);
      if (variant == nullptr) continue;
      predicted = RowsOf(*variant, base, call, layer);
    }
    if (predicted.size() != compared.size()) continue;
    const double fit = FitOf(compared, predicted, tolerance_);
    if (fit <= 1.0) candidates.push_back({entry.Hit(name, stage_.lesson), fit});
  }
  // A later call's q or k rotated as if the call started at position 0: its positions were
  // not taken from cache.size, or cache.size was never advanced by the calls before it.
  const CallSpan& span = data_.calls[call];
  if ((base == "q" || base == "k") && span.position > 0) {
    const ref::StepContext fromZero{data_.config, data_.weights, options_, layer, 0, span.tokens};
    const auto norm1 = data_.Rows(data_.expected.layers[static_cast<size_t>(layer)][static_cast<int>(LayerBuffer::kNorm1)],
                                  span, data_.config.hidden);
    if (auto qkv = ref::StepQkv(fromZero, std::vector<double>(norm1.begin(), norm1.end()))) {
      const std::vector<double>& predicted = base == "q" ? qkv->q : qkv->k;
      const double fit = predicted.size() == got.size() ? FitOf(got, predicted, tolerance_) : 2.0;
      if (fit <= 1.0) {
        candidates.push_back(
            {MisconceptionHit{std::string(kCacheSizeNotAdvanced),
                              fmt::format("Your {} matches RoPE at positions counted from 0 in this call: a call's "
                                          "positions start at cache.size, which each call advances by its n tokens "
                                          "when it ends.",
                                          name),
                              stage_.lesson + "#cache-size-not-advanced"},
             fit});
      }
    }
  }
  // Telling the two apart where one call cannot: on a call of one token the rotation at
  // position 0 is none at all. A q or k rotated wrongly only from the second call on, after
  // an earlier call whose rows past position 0 are right, was rotated; one wrong there
  // already is the unrotated kind.
  if ((base == "q" || base == "k") && call > 0) {
    if (const std::optional<bool> right = EarlierRowsRight(base, call, layer)) {
      const std::string_view dropped = *right ? std::string_view("rope-skipped") : kCacheSizeNotAdvanced;
      std::erase_if(candidates, [&](const Candidate& c) { return c.hit.id == dropped; });
    }
  }
  return Choose(std::move(candidates));
}

std::optional<bool> CaseChecker::EarlierRowsRight(const std::string& base, int call, int layer) const {
  const L::Buffer buffer = base == "q" ? L::kQ : L::kK;
  const LayerBuffer reference = base == "q" ? LayerBuffer::kQ : LayerBuffer::kK;
  const size_t width = RowWidth(data_, buffer);
  for (int earlier = 0; earlier < call; ++earlier) {
    const CallSpan& span = data_.calls[earlier];
    if (span.position + span.tokens < 2) continue;  // position 0 alone: rotated or not, the same
    const auto got = run_.Floats(buffer).subspan(SliceStart(data_, buffer, earlier, layer), span.tokens * width);
    const auto expected = data_.Rows(data_.expected.layers[static_cast<size_t>(layer)][static_cast<int>(reference)],
                                     span, static_cast<int>(width));
    return FitOf(got, expected, tolerance_) <= 1.0;
  }
  return std::nullopt;
}

CheckpointReport CaseChecker::CheckExperts(int call, int layer) {
  const CallSpan& span = data_.calls[call];
  const int k = data_.config.expertsPerToken;
  CheckpointReport report;
  report.name = Name("experts", call, layer);
  report.shape = fmt::format("{} x {}", span.tokens, k);
  report.maxPoints = points_;
  const auto ids = ExpertIds(call, layer);
  const auto weights = run_.Floats(L::kExpertWeights)
                           .subspan(SliceStart(data_, L::kExpertWeights, call, layer), static_cast<size_t>(span.tokens) * k);
  const auto& refIds = data_.expected.expertIds[static_cast<size_t>(layer)];
  const auto refWeights = data_.Rows(data_.expected.expertWeights[static_cast<size_t>(layer)], span, k);
  const Comparison weightCheck = Compare(weights, refWeights, tolerance_);
  report.total = ids.size();
  report.unwritten = weightCheck.unwritten;
  report.rms = weightCheck.rms;
  report.atol = weightCheck.atol;
  report.rtol = weightCheck.rtol;
  report.maxAbsError = weightCheck.maxAbsError;
  std::string firstWrong;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t expected = refIds[static_cast<size_t>(span.position) * k + i];
    const bool weightOk = Matches(weights.subspan(i, 1), refWeights.subspan(i, 1), tolerance_);
    if (ids[i] == expected && weightOk) continue;
    ++report.failing;
    if (!firstWrong.empty()) continue;
    const size_t row = i / k;
    uint32_t word;
    std::memcpy(&word, &ids[i], 4);
    const std::string got = word == shm::kPoisonWord ? std::string("never written") : fmt::format("expert {}", ids[i]);
    firstWrong = fmt::format("token {} (position {}), choice {}: expected expert {} with weight {:.6g}, got {} with "
                             "weight {:.6g}",
                             row, span.position + row, i % k, expected, refWeights[i], got, weights[i]);
  }
  report.status = report.failing == 0 ? CheckStatus::kPass : CheckStatus::kFail;
  report.points = report.failing == 0 ? points_ : 0;
  if (report.failing == 0) return report;
  report.observation = firstWrong;
  // A mistake the runner knows: the ids and weights as the mistaken model chooses them.
  const auto entries = DecoderMisconceptions();
  std::vector<Candidate> candidates;
  for (size_t e = 0; e < entries.size(); ++e) {
    if (std::find(entries[e].showsAt.begin(), entries[e].showsAt.end(), "experts") == entries[e].showsAt.end()) continue;
    const Expectations* variant = VariantOf(e);
    if (variant == nullptr || variant->expertIds[static_cast<size_t>(layer)].empty()) continue;
    const auto& vIds = variant->expertIds[static_cast<size_t>(layer)];
    const auto vWeights = data_.Rows(variant->expertWeights[static_cast<size_t>(layer)], span, k);
    bool same = true;
    for (size_t i = 0; i < ids.size() && same; ++i) same = ids[i] == vIds[static_cast<size_t>(span.position) * k + i];
    if (!same) continue;
    const double fit = FitOf(weights, vWeights, tolerance_);
    if (fit <= 1.0) candidates.push_back({entries[e].Hit(report.name, stage_.lesson), fit});
  }
  const Recognition recognition = Choose(std::move(candidates));
  if (recognition.hit) report.misconception = recognition.hit;
  return report;
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
  Hook(e, "embedding", call, -1);
  index_[{call, -1, "embedding"}] = Add(std::move(e));
  for (int layer = 0; layer < data_.Layers(); ++layer) DescribeLayer(call, layer);
  const size_t last = index_.at({call, data_.Layers() - 1, "output"});
  if (!data_.expected.finalNorm.empty()) {
    const auto finalNorm = data_.LogitRows(data_.expected.finalNorm, span, c.hidden);
    CheckpointDescriptor f = Value(Name("finalNorm", call), got(L::kFinalNorm, data_.LogitRowCount(span)),
                                   {finalNorm.begin(), finalNorm.end()}, call, c.hidden, 0, "channel",
                                   FirstLogitToken(span));
    f.upstream = {last};
    Hook(f, "finalNorm", call, -1);
    HookLastRow(f, L::kFinalNorm, call);
    const std::span<const float> lastOutput = descriptors_[last].got;
    const ref::StepContext ctx = Context(call, data_.Layers() - 1);
    const size_t keep = finalNorm.size();
    f.local = [ctx, lastOutput, keep] {
      auto final = ref::StepFinal(ctx, ToDouble(lastOutput));
      if (!final) return std::vector<double>{};
      // Logits::kLast: the last row's alone, as the call asked for.
      return std::vector<double>(final->finalNorm.end() - static_cast<std::ptrdiff_t>(keep), final->finalNorm.end());
    };
    index_[{call, -1, "finalNorm"}] = Add(std::move(f));
  }
  const auto logits = data_.LogitRows(data_.expected.logits, span, c.vocab);
  CheckpointDescriptor g = Value(Name("logits", call), got(L::kLogits, data_.LogitRowCount(span)),
                                 {logits.begin(), logits.end()}, call, c.vocab, 0, "vocabulary entry",
                                 FirstLogitToken(span));
  g.upstream = {index_.count({call, -1, "finalNorm"}) ? index_.at({call, -1, "finalNorm"}) : last};
  Hook(g, "logits", call, -1);
  HookLastRow(g, L::kLogits, call);
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
    const int logitRows = data_.LogitRowCount(span);
    auto logitsNotReached = [&](const std::string& name, int width) {
      result.checkpoints.push_back(NotReached(name, fmt::format("{} x {}", logitRows, width),
                                              static_cast<size_t>(logitRows) * width, points_));
    };
    if (!data_.expected.finalNorm.empty()) logitsNotReached(Name("finalNorm", call), c.hidden);
    logitsNotReached(Name("logits", call), c.vocab);
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
  uint64_t firstSite = 0;  // harness::AllocationSite of the first step that allocated
  for (int call = 1; call < std::min<int>(run.callsReturned, static_cast<int>(data.calls.size())); ++call) {
    uint64_t words[2];
    std::memcpy(words, bytes.data() + 2 * static_cast<size_t>(call) * sizeof(uint64_t), sizeof(words));
    report.total += 1;
    if (words[0] == 0) continue;
    report.failing += 1;
    if (firstSite == 0) firstSite = words[1];
    steps.push_back(fmt::format("step {} ({} allocation{})", call + 1, words[0], words[0] == 1 ? "" : "s"));
  }
  report.status = report.failing == 0 ? CheckStatus::kPass : CheckStatus::kFail;
  report.points = report.failing == 0 ? points : 0;
  if (report.failing > 0) {
    // Where the first one came from, from the objects on its call stack (the child's
    // harness::AllocationSite: 1 the program, 2 libgomp, 3 libstdc++), and what to do.
    const char* where =
        firstSite == 2 ? "the first came from the OpenMP runtime: an omp parallel region allocates its team of "
                         "threads when it starts with one thread, and an if(threads > 1) clause does not stop that; "
                         "run a plain loop when threads is 1 (the lesson's \"A decode step allocates nothing\")"
        : firstSite == 3 ? "the first came from the C++ library, called from your code (a std::thread, a stream, "
                           "a std::function): keep those out of decoder_forward"
        : firstSite == 1 ? "the first came from your code itself: a std::vector, a std::string or a new inside "
                           "decoder_forward; use the cache, the buffers and the scratch, reserved before the first call"
                         : "everything a step needs is in the cache, the buffers and the scratch, reserved before the "
                           "first call";
    report.observation = fmt::format("{} allocated memory, and a decode step must not: {}", JoinNames(steps), where);
  }
  return report;
}

}  // namespace wb::stage05
