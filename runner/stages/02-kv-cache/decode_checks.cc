#include "decode_checks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "decode_misconceptions.h"
#include "reference/decode/call_checkpoints.h"
#include "runner/blocks/block_weights.h"
#include "runner/compare/block_tolerances.h"
#include "runner/compare/compare.h"
#include "runner/diagnose/misconceptions.h"
#include "runner/diagnose/observations.h"

namespace wb::stage02 {
namespace {

using ref::CallCheckpoint;
using ref::Checkpoint;

constexpr size_t kSamplesShown = 3;
// The block's own mistakes are explained in stage 1's lesson, whichever stage finds them.
constexpr const char* kBlockLesson = "docs/stages/01-block.md";

std::vector<double> ToDouble(std::span<const float> values) { return {values.begin(), values.end()}; }

std::span<const float> CacheRows(const std::vector<float>& cache, int firstRow, int rows) {
  return std::span(cache).subspan(static_cast<size_t>(firstRow) * kCacheWidth, static_cast<size_t>(rows) * kCacheWidth);
}

int Width(CallCheckpoint c, const ref::BlockShape& s) {
  if (const auto block = ref::BlockCheckpointOf(c)) return ref::CheckpointWidth(*block, s);
  return s.kvWidth();
}

Tolerance ToleranceFor(CallCheckpoint c) {
  if (const auto block = ref::BlockCheckpointOf(c)) return BlockTolerance(*block);
  // Cache rows are copies of k and v: the same values, so the same tolerance.
  return BlockTolerance(c == CallCheckpoint::kVCache ? Checkpoint::kV : Checkpoint::kK);
}

// Positions are absolute: the call's first row is token (or cache row) firstPosition.
std::string Where(CallCheckpoint c, size_t index, int firstPosition, const ref::BlockShape& s) {
  if (const auto block = ref::BlockCheckpointOf(c)) return BlockElement(*block, index, s, firstPosition);
  const int position = firstPosition + static_cast<int>(index / s.kvWidth());
  const int col = static_cast<int>(index % s.kvWidth());
  return fmt::format("row {}, KV head {}, channel {}", position, col / s.headDim, col % s.headDim);
}

BufferGeometry Geometry(CallCheckpoint c, int rows, int firstPosition, const ref::BlockShape& s) {
  if (const auto block = ref::BlockCheckpointOf(c)) return BlockGeometry(*block, rows, s, firstPosition);
  return BufferGeometry{.rows = rows, .width = s.kvWidth(), .headDim = s.headDim, .rowName = "row",
                        .firstRow = firstPosition};
}

// One entry of either catalogue that a call checkpoint may match.
struct Variant {
  const DecodeMisconception* decode = nullptr;
  const BlockMisconception* block = nullptr;
};

// The checks of one call, with everything they share computed once.
class CallChecker {
 public:
  explicit CallChecker(const CallCheckInput& in);
  // The checkers of every call of the case, this one among them, for Recognise to consult.
  void SetCase(std::span<const std::unique_ptr<CallChecker>> calls) { case_ = calls; }
  ChainResult Run();

 private:
  CheckpointDescriptor Describe(CallCheckpoint c) const;
  CheckpointReport CheckOtherRows() const;
  bool OtherRowsUnchanged() const;

  std::string Label(CallCheckpoint c, int number) const {
    return in_.stage->Reported(std::string(ref::CallCheckpointName(c)), number);
  }
  std::string Label(CallCheckpoint c) const { return Label(c, in_.number); }
  std::span<const float> Got(CallCheckpoint c) const;
  std::vector<double> ChainExpected(CallCheckpoint c) const;
  std::vector<CallCheckpoint> Upstream(CallCheckpoint c) const;
  std::vector<std::string> AlsoComputedFrom(CallCheckpoint c) const;
  bool UpstreamUsable(CallCheckpoint c) const;
  std::vector<double> Local(CallCheckpoint c) const;
  std::optional<MistakenView> Mistaken(CallCheckpoint c, const ref::DecodeRecipe& recipe, bool onStudent) const;
  std::vector<double> MistakenBlock(CallCheckpoint c, const ref::BlockRecipe& recipe, bool onStudent) const;
  std::optional<MistakenView> Predict(CallCheckpoint c, const Variant& variant, bool onStudent) const;
  bool Contradicts(CallCheckpoint c, const Variant& variant) const;
  bool EveryOtherCallAgrees(CallCheckpoint c, const Variant& variant) const;
  Recognition Recognise(CallCheckpoint c, bool onStudent) const;

  std::span<const std::unique_ptr<CallChecker>> case_;
  const CallCheckInput& in_;
  const DecodeCase& data_;
  const ref::DecodeCall call_;
  const ref::BlockShape shape_;
  const ref::BlockWeights weights_;
  const ref::BlockInputs inputs_;  // the call's x rows and its (absolute) RoPE rows
  ref::BlockState student_;        // the nine outputs, n rows each, as doubles
  ref::BlockState reference_;      // the reference's rows of this call
  std::vector<double> studentKeys_, studentValues_;      // cache rows 0 .. pos + n - 1 after the call
  std::vector<double> referenceKeys_, referenceValues_;  // the reference's k and v rows 0 .. pos + n - 1
  bool earlierRowsMatch_ = true;    // the student's rows 0 .. pos - 1 match the reference's
};

CallChecker::CallChecker(const CallCheckInput& in)
    : in_(in),
      data_(*in.data),
      call_(in.call),
      shape_(data_.shape),
      weights_(data_.Weights()),
      inputs_(ref::CallInputs(call_, data_.Xd(call_), data_.cosd, data_.sind, shape_.ropePairs(), {})) {
  for (Checkpoint c : ref::kCheckpointOrder) {
    const auto& got = in.run->buffers[ref::Index(c)];
    student_[ref::Index(c)] = ToDouble(got);
    const auto expected = data_.Expected(c, call_);
    reference_[ref::Index(c)].assign(expected.begin(), expected.end());
  }
  const int rows = call_.pos + call_.n;
  const auto keys = CacheRows(in.run->cacheAfter.keys, 0, rows);
  const auto values = CacheRows(in.run->cacheAfter.values, 0, rows);
  studentKeys_ = ToDouble(keys);
  studentValues_ = ToDouble(values);
  const ref::DecodeCall sequence{.pos = 0, .n = rows};
  const auto refKeys = data_.Expected(Checkpoint::kK, sequence);
  const auto refValues = data_.Expected(Checkpoint::kV, sequence);
  referenceKeys_.assign(refKeys.begin(), refKeys.end());
  referenceValues_.assign(refValues.begin(), refValues.end());
  if (call_.pos > 0) {
    const size_t earlier = static_cast<size_t>(call_.pos) * kCacheWidth;
    earlierRowsMatch_ =
        Matches(CacheRows(in.before->keys, 0, call_.pos), std::span(referenceKeys_).first(earlier),
                BlockTolerance(Checkpoint::kK)) &&
        Matches(CacheRows(in.before->values, 0, call_.pos), std::span(referenceValues_).first(earlier),
                BlockTolerance(Checkpoint::kV));
  }
}

ChainResult CallChecker::Run() {
  std::vector<CheckpointDescriptor> descriptors;
  for (CallCheckpoint c : ref::kCallCheckpointOrder) descriptors.push_back(Describe(c));
  return CheckChain(descriptors, in_.points);
}

CheckpointDescriptor CallChecker::Describe(CallCheckpoint c) const {
  CheckpointDescriptor d;
  d.name = Label(c);
  if (c == CallCheckpoint::kCacheOtherRows) {
    d.custom = [this] { return CheckOtherRows(); };
    return d;
  }
  d.shape = fmt::format("{} x {}", call_.n, Width(c, shape_));
  d.got = Got(c);
  d.expected = ChainExpected(c);
  d.tolerance = ToleranceFor(c);
  d.where = [this, c](size_t index) { return Where(c, index, call_.pos, shape_); };
  d.geometry = Geometry(c, call_.n, call_.pos, shape_);
  for (CallCheckpoint u : Upstream(c)) d.upstream.push_back(static_cast<size_t>(ref::Index(u)));
  d.alsoComputedFrom = AlsoComputedFrom(c);
  // Attention reads every cache row up to the call's last, not only the rows it wrote.
  const int rows = call_.pos + call_.n;
  if (c == CallCheckpoint::kKCache) d.readDownstream = CacheRows(in_.run->cacheAfter.keys, 0, rows);
  if (c == CallCheckpoint::kVCache) d.readDownstream = CacheRows(in_.run->cacheAfter.values, 0, rows);
  if (c == CallCheckpoint::kAttnOut && !earlierRowsMatch_) d.brokenInput = "the cache rows of earlier calls";
  d.local = [this, c] { return Local(c); };
  d.recognise = [this, c](bool onStudent) { return Recognise(c, onStudent); };
  return d;
}

std::span<const float> CallChecker::Got(CallCheckpoint c) const {
  if (const auto block = ref::BlockCheckpointOf(c)) return in_.run->buffers[ref::Index(*block)];
  const auto& cache = c == CallCheckpoint::kVCache ? in_.run->cacheAfter.values : in_.run->cacheAfter.keys;
  return CacheRows(cache, call_.pos, call_.n);
}

std::vector<double> CallChecker::ChainExpected(CallCheckpoint c) const {
  if (const auto block = ref::BlockCheckpointOf(c)) return reference_[ref::Index(*block)];
  return reference_[ref::Index(c == CallCheckpoint::kVCache ? Checkpoint::kV : Checkpoint::kK)];
}

std::vector<CallCheckpoint> CallChecker::Upstream(CallCheckpoint c) const {
  switch (c) {
    case CallCheckpoint::kKCache: return {CallCheckpoint::kK};
    case CallCheckpoint::kVCache: return {CallCheckpoint::kV};
    // Attention reads q and the cache, not the k and v buffers.
    case CallCheckpoint::kAttnOut: return {CallCheckpoint::kQ, CallCheckpoint::kKCache, CallCheckpoint::kVCache};
    default: break;
  }
  std::vector<CallCheckpoint> upstream;
  const auto block = ref::BlockCheckpointOf(c);
  if (!block) return upstream;
  for (Checkpoint u : ref::Upstream(*block)) {
    for (CallCheckpoint candidate : ref::kCallCheckpointOrder) {
      if (ref::BlockCheckpointOf(candidate) == u) upstream.push_back(candidate);
    }
  }
  return upstream;
}

// The graph's edges that the local check does not need: attention reads every cache row up
// to its own, which this call's cacheOtherRows and every earlier call's writes decided.
std::vector<std::string> CallChecker::AlsoComputedFrom(CallCheckpoint c) const {
  std::vector<std::string> names;
  if (c != CallCheckpoint::kAttnOut) return names;
  names.push_back(Label(CallCheckpoint::kCacheOtherRows));
  for (int earlier = 1; earlier < in_.number; ++earlier) {
    for (CallCheckpoint cache : {CallCheckpoint::kCacheOtherRows, CallCheckpoint::kKCache, CallCheckpoint::kVCache}) {
      names.push_back(Label(cache, earlier));
    }
  }
  return names;
}

// Everything the local step of c reads from the student is written and finite.
bool CallChecker::UpstreamUsable(CallCheckpoint c) const {
  switch (c) {
    case CallCheckpoint::kCacheOtherRows:
      return UsableAsUpstream(Got(CallCheckpoint::kK)) && UsableAsUpstream(Got(CallCheckpoint::kV));
    case CallCheckpoint::kAttnOut: {
      const int rows = call_.pos + call_.n;
      return UsableAsUpstream(Got(CallCheckpoint::kQ)) &&
             UsableAsUpstream(CacheRows(in_.run->cacheAfter.keys, 0, rows)) &&
             UsableAsUpstream(CacheRows(in_.run->cacheAfter.values, 0, rows));
    }
    default: {
      const std::vector<CallCheckpoint> upstream = Upstream(c);
      return std::all_of(upstream.begin(), upstream.end(),
                         [this](CallCheckpoint u) { return UsableAsUpstream(Got(u)); });
    }
  }
}

std::vector<double> CallChecker::Local(CallCheckpoint c) const {
  switch (c) {
    case CallCheckpoint::kKCache: return student_[ref::Index(Checkpoint::kK)];
    case CallCheckpoint::kVCache: return student_[ref::Index(Checkpoint::kV)];
    case CallCheckpoint::kAttnOut: {
      std::vector<double> out(static_cast<size_t>(call_.n) * shape_.qWidth());
      ref::AttendCached(student_[ref::Index(Checkpoint::kQ)], studentKeys_, studentValues_, call_, shape_, {}, {}, out);
      return out;
    }
    default:
      return ref::ComputeCheckpoint(*ref::BlockCheckpointOf(c), shape_, {}, weights_, inputs_, student_);
  }
}

std::optional<MistakenView> CallChecker::Mistaken(CallCheckpoint c, const ref::DecodeRecipe& recipe,
                                                  bool onStudent) const {
  const ref::BlockState& upstream = onStudent ? student_ : reference_;
  const auto at = [&upstream](Checkpoint b) -> std::span<const double> { return upstream[ref::Index(b)]; };
  const auto got = [this](CallCheckpoint g) {
    const auto values = Got(g);
    return std::vector<float>(values.begin(), values.end());
  };
  switch (c) {
    case CallCheckpoint::kQ:
    case CallCheckpoint::kK: {
      if (recipe.ropePosition == ref::RopePosition::kAbsolute) return std::nullopt;
      const auto inputs = ref::CallInputs(call_, data_.Xd(call_), data_.cosd, data_.sind, shape_.ropePairs(), recipe);
      ref::BlockRecipe block;
      if (recipe.ropePosition == ref::RopePosition::kNone) block.ropeTargets = ref::RopeTargets::kNone;
      return MistakenView{got(c), ref::ComputeCheckpoint(*ref::BlockCheckpointOf(c), shape_, block, weights_, inputs,
                                                         upstream)};
    }
    case CallCheckpoint::kCacheOtherRows: {
      // Rows the mistaken recipe writes are the right rows in a call at position 0.
      if (ref::CacheRowFor(call_, 0, recipe) == call_.pos) return std::nullopt;
      MistakenView view;
      for (const auto* cache : {&in_.run->cacheAfter.keys, &in_.run->cacheAfter.values}) {
        for (int t = 0; t < call_.n; ++t) {
          const auto row = CacheRows(*cache, ref::CacheRowFor(call_, t, recipe), 1);
          view.got.insert(view.got.end(), row.begin(), row.end());
        }
      }
      view.expected.assign(at(Checkpoint::kK).begin(), at(Checkpoint::kK).end());
      view.expected.insert(view.expected.end(), at(Checkpoint::kV).begin(), at(Checkpoint::kV).end());
      return view;
    }
    case CallCheckpoint::kKCache:
      if (recipe.cachedKeys == ref::CachedKeys::kAfterRope) return std::nullopt;
      return MistakenView{got(c), ref::CachedKeyRows(shape_, weights_, call_, at(Checkpoint::kNorm1),
                                                     at(Checkpoint::kK), recipe)};
    case CallCheckpoint::kAttnOut: {
      if (recipe.reach == ref::AttentionReach::kOwnPosition && recipe.rescale == ref::OnlineRescale::kBoth) {
        return std::nullopt;
      }
      std::vector<double> out(static_cast<size_t>(call_.n) * shape_.qWidth());
      ref::AttendCached(at(Checkpoint::kQ), onStudent ? studentKeys_ : referenceKeys_,
                        onStudent ? studentValues_ : referenceValues_, call_, shape_, {}, recipe, out);
      return MistakenView{got(c), std::move(out)};
    }
    default:
      return std::nullopt;
  }
}

// A block checkpoint of this call under a mistaken block recipe, on the student's upstream
// or the reference's; attention reads the cache, as the student's step does.
std::vector<double> CallChecker::MistakenBlock(CallCheckpoint c, const ref::BlockRecipe& recipe, bool onStudent) const {
  const ref::BlockState& upstream = onStudent ? student_ : reference_;
  const auto block = *ref::BlockCheckpointOf(c);
  if (c != CallCheckpoint::kAttnOut) return ref::ComputeCheckpoint(block, shape_, recipe, weights_, inputs_, upstream);
  std::vector<double> out(static_cast<size_t>(call_.n) * shape_.qWidth());
  ref::AttendCached(upstream[ref::Index(Checkpoint::kQ)], onStudent ? studentKeys_ : referenceKeys_,
                    onStudent ? studentValues_ : referenceValues_, call_, shape_, recipe, {}, out);
  return out;
}

std::optional<MistakenView> CallChecker::Predict(CallCheckpoint c, const Variant& variant, bool onStudent) const {
  if (variant.decode != nullptr) return Mistaken(c, variant.decode->Flipped(), onStudent);
  const auto got = Got(c);
  return MistakenView{{got.begin(), got.end()}, MistakenBlock(c, variant.block->Flipped(), onStudent)};
}

// Whether this call shows that the student's code does not make the mistake: its buffer
// differs from what the mistaken recipe predicts here, or, where that recipe predicts what
// the taught one does, from what the taught step gives. A call whose inputs are broken
// cannot tell, and contradicts nothing.
bool CallChecker::Contradicts(CallCheckpoint c, const Variant& variant) const {
  if (!UpstreamUsable(c)) return false;
  if (c != CallCheckpoint::kCacheOtherRows && !UsableAsUpstream(Got(c))) return false;
  const Tolerance tolerance = ToleranceFor(c == CallCheckpoint::kCacheOtherRows ? CallCheckpoint::kKCache : c);
  const std::optional<MistakenView> view = Predict(c, variant, true);
  if (view) return !Matches(view->got, view->expected, tolerance);
  if (c == CallCheckpoint::kCacheOtherRows) return !OtherRowsUnchanged();
  return !Matches(Got(c), Local(c), tolerance);
}

bool CallChecker::EveryOtherCallAgrees(CallCheckpoint c, const Variant& variant) const {
  return std::none_of(case_.begin(), case_.end(), [&](const std::unique_ptr<CallChecker>& other) {
    return other.get() != this && other->Contradicts(c, variant);
  });
}

// The entry a candidate came from: this stage's first, as Recognise consults them.
Variant VariantOf(const Candidate& candidate, CallCheckpoint c) {
  for (const DecodeMisconception& m : DecodeMisconceptions()) {
    if (m.id == candidate.hit.id && m.ShowsAt(c)) return {.decode = &m};
  }
  const auto block = ref::BlockCheckpointOf(c);
  for (const BlockMisconception& m : BlockMisconceptions()) {
    if (block && m.id == candidate.hit.id && m.ShowsAt(*block)) return {.block = &m};
  }
  return {};
}

Recognition CallChecker::Recognise(CallCheckpoint c, bool onStudent) const {
  const Tolerance tolerance = ToleranceFor(c == CallCheckpoint::kCacheOtherRows ? CallCheckpoint::kKCache : c);
  std::vector<Candidate> candidates = DecodeCandidates(
      c, tolerance, in_.stage->lesson, [&](const ref::DecodeRecipe& recipe) { return Mistaken(c, recipe, onStudent); });
  if (const auto block = ref::BlockCheckpointOf(c)) {
    std::vector<Candidate> fromBlock = BlockCandidates(
        *block, Got(c), tolerance, kBlockLesson,
        [&](const ref::BlockRecipe& recipe) { return MistakenBlock(c, recipe, onStudent); },
        [](const BlockMisconception& m) { return !RestatedByStage2(m.id); });
    candidates.insert(candidates.end(), fromBlock.begin(), fromBlock.end());
  }
  // Only what matches this call is put to the others: each of them reruns a step.
  std::erase_if(candidates, [&](const Candidate& candidate) {
    const Variant variant = VariantOf(candidate, c);
    return (variant.decode == nullptr && variant.block == nullptr) || !EveryOtherCallAgrees(c, variant);
  });
  return Choose(std::move(candidates));
}

// Every cache row outside the call's own holds the bits it held before the call.
bool CallChecker::OtherRowsUnchanged() const {
  const size_t first = static_cast<size_t>(call_.pos) * kCacheWidth;
  const size_t end = static_cast<size_t>(call_.pos + call_.n) * kCacheWidth;
  for (const auto& [before, after] : {std::pair{&in_.before->keys, &in_.run->cacheAfter.keys},
                                      std::pair{&in_.before->values, &in_.run->cacheAfter.values}}) {
    if (std::memcmp(before->data(), after->data(), first * sizeof(float)) != 0) return false;
    if (std::memcmp(before->data() + end, after->data() + end, (before->size() - end) * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

CheckpointReport CallChecker::CheckOtherRows() const {
  CheckpointReport cp;
  cp.name = Label(CallCheckpoint::kCacheOtherRows);
  cp.maxPoints = in_.points;
  cp.shape = fmt::format("2 x {} x {}", kCacheRows - call_.n, kCacheWidth);
  const int first = call_.pos;
  const int end = call_.pos + call_.n;
  struct Cache {
    const char* name;
    const std::vector<float>* before;
    const std::vector<float>* after;
    std::set<int> earlier;  // changed rows that earlier calls wrote
    std::set<int> later;    // changed rows that no call has written yet
  };
  std::array<Cache, 2> caches = {Cache{"kCache", &in_.before->keys, &in_.run->cacheAfter.keys, {}, {}},
                                 Cache{"vCache", &in_.before->values, &in_.run->cacheAfter.values, {}, {}}};
  for (Cache& cache : caches) {
    for (int row = 0; row < kCacheRows; ++row) {
      if (row >= first && row < end) continue;
      bool rowShown = false;  // one sample per row: a changed row usually changed in full
      for (int col = 0; col < kCacheWidth; ++col) {
        const size_t i = static_cast<size_t>(row) * kCacheWidth + col;
        ++cp.total;
        const float was = (*cache.before)[i];
        const float now = (*cache.after)[i];
        if (std::memcmp(&was, &now, sizeof(float)) == 0) continue;
        ++cp.failing;
        (row < first ? cache.earlier : cache.later).insert(row);
        if (std::isfinite(was) && std::isfinite(now)) {
          cp.maxAbsError = std::max(cp.maxAbsError, std::fabs(static_cast<double>(now) - was));
        }
        if (rowShown || cp.samples.size() >= kSamplesShown) continue;
        rowShown = true;
        const std::string where = fmt::format("{} row {} ({}), KV head {}, channel {}", cache.name, row,
                                              row < first ? "written by an earlier call" : "no call has written it yet",
                                              col / shape_.headDim, col % shape_.headDim);
        const double expected = StateOf(was) == ElementState::kWritten ? static_cast<double>(was) : std::nan("");
        (cp.worst ? cp.samples.emplace_back() : cp.worst.emplace()) = DescribeElement(where, expected, now);
      }
    }
  }
  cp.status = cp.failing == 0 ? CheckStatus::kPass : CheckStatus::kFail;
  cp.points = cp.failing == 0 ? in_.points : 0;
  if (cp.failing == 0) return cp;

  Recognition recognition = Recognise(CallCheckpoint::kCacheOtherRows, UpstreamUsable(CallCheckpoint::kCacheOtherRows));
  cp.misconception = std::move(recognition.hit);
  if (cp.misconception) return cp;
  // "kCache and vCache rows 0-4 changed: ...", naming each cache apart only when they differ.
  auto rows = [](const std::set<int>& set) {
    return fmt::format("{} {}", set.size() == 1 ? "row" : "rows", Ranges(std::vector<int>(set.begin(), set.end())));
  };
  std::vector<std::string> seen;
  auto describe = [&](std::set<int> Cache::*group, const char* why) {
    const Cache& k = caches[0];
    const Cache& v = caches[1];
    if (!(k.*group).empty() && k.*group == v.*group) {
      seen.push_back(fmt::format("kCache and vCache {} changed: {}", rows(k.*group), why));
      return;
    }
    for (const Cache& c : caches) {
      if (!(c.*group).empty()) seen.push_back(fmt::format("{} {} changed: {}", c.name, rows(c.*group), why));
    }
  };
  describe(&Cache::earlier, "earlier calls wrote them, and they must keep those values");
  describe(&Cache::later, "no call has reached them yet, and they must stay as they were");
  for (const auto& line : seen) cp.observation += (cp.observation.empty() ? "" : "; ") + line;
  cp.observation += fmt::format(". This call may write {} only",
                                call_.n == 1 ? fmt::format("row {}", first) : fmt::format("rows {}-{}", first, end - 1));
  return cp;
}

}  // namespace

std::vector<ChainResult> CheckCalls(std::span<const CallCheckInput> calls) {
  std::vector<std::unique_ptr<CallChecker>> checkers;
  for (const CallCheckInput& input : calls) checkers.push_back(std::make_unique<CallChecker>(input));
  for (auto& checker : checkers) checker->SetCase(checkers);
  std::vector<ChainResult> results;
  for (auto& checker : checkers) results.push_back(checker->Run());
  return results;
}

std::vector<CheckpointReport> CallNotReached(const DecodeCase& data, const StageInfo& stage, const ref::DecodeCall& call,
                                         int number, double points) {
  std::vector<CheckpointReport> checkpoints;
  for (CallCheckpoint c : ref::kCallCheckpointOrder) {
    const std::string name = stage.Reported(std::string(ref::CallCheckpointName(c)), number);
    if (c == CallCheckpoint::kCacheOtherRows) {
      checkpoints.push_back(wb::NotReached(name, fmt::format("2 x {} x {}", kCacheRows - call.n, kCacheWidth),
                                           static_cast<size_t>(kCacheRows - call.n) * kCacheWidth * 2, points));
    } else {
      const int width = Width(c, data.shape);
      checkpoints.push_back(wb::NotReached(name, fmt::format("{} x {}", call.n, width),
                                           static_cast<size_t>(call.n) * width, points));
    }
  }
  return checkpoints;
}

}  // namespace wb::stage02
