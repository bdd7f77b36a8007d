#include "decode_checks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "../../reference/decode/call_checkpoints.h"
#include "../compare/block_tolerances.h"
#include "../compare/compare.h"
#include "../diagnose/decode_misconceptions.h"
#include "../diagnose/misconceptions.h"
#include "../diagnose/observations.h"
#include "case_outcome.h"

namespace wb {
namespace {

using ref::CallCheckpoint;
using ref::Checkpoint;

constexpr size_t kSamplesShown = 3;
// The block's own mistakes are explained in stage 1's lesson, whichever stage finds them.
constexpr const char* kBlockLesson = "docs/stages/01-block.md";

std::vector<double> ToDouble(std::span<const float> values) { return {values.begin(), values.end()}; }

// Usable as upstream for a local check: every element written and finite.
bool Usable(std::span<const float> values) {
  return std::all_of(values.begin(), values.end(), [](float v) {
    return StateOf(v) == ElementState::kWritten && std::isfinite(v);
  });
}

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

std::string Where(CallCheckpoint c, size_t index, int firstPosition, const ref::BlockShape& s) {
  const int width = Width(c, s);
  const int position = firstPosition + static_cast<int>(index / width);
  const int col = static_cast<int>(index % width);
  switch (c) {
    case CallCheckpoint::kQ:
    case CallCheckpoint::kAttnOut:
      return fmt::format("token {}, head {}, channel {}", position, col / s.headDim, col % s.headDim);
    case CallCheckpoint::kK:
    case CallCheckpoint::kV:
      return fmt::format("token {}, KV head {}, channel {}", position, col / s.headDim, col % s.headDim);
    case CallCheckpoint::kKCache:
    case CallCheckpoint::kVCache:
      return fmt::format("row {}, KV head {}, channel {}", position, col / s.headDim, col % s.headDim);
    default:
      return fmt::format("token {}, channel {}", position, col);
  }
}

ElementDetail Detail(std::string where, double expected, float got) {
  ElementDetail d;
  d.where = std::move(where);
  d.expected = expected;
  d.got = got;
  switch (StateOf(got)) {
    case ElementState::kUnwritten: d.gotNote = "never written"; break;
    case ElementState::kFromUnwritten: d.gotNote = "NaN computed from an element that was never written"; break;
    case ElementState::kWritten:
      if (std::isnan(got)) d.gotNote = "NaN";
      break;
  }
  return d;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : " and ") + n;
  return joined;
}

// The checks of one call, with everything they share computed once.
class CallChecker {
 public:
  explicit CallChecker(const CallCheckInput& in);
  CallChecks Run();

 private:
  CheckpointReport CheckOtherRows();
  CheckpointReport CheckBuffer(CallCheckpoint c);

  std::span<const float> Got(CallCheckpoint c) const;
  std::vector<double> ChainExpected(CallCheckpoint c) const;
  std::vector<CallCheckpoint> Upstream(CallCheckpoint c) const;
  bool UpstreamUsable(CallCheckpoint c) const;
  std::vector<double> Local(CallCheckpoint c) const;
  std::optional<MistakenView> Mistaken(CallCheckpoint c, const ref::DecodeRecipe& recipe, bool onStudent) const;
  std::optional<MisconceptionHit> Recognise(CallCheckpoint c, bool onStudent) const;
  CheckpointReport Named(CallCheckpoint c) const;

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
  std::array<bool, ref::kCheckpointCount> usable_{};     // of the nine outputs
  bool cacheUsable_ = false;        // the student's cache rows 0 .. pos + n - 1
  bool earlierRowsMatch_ = true;    // the student's rows 0 .. pos - 1 match the reference's
  std::array<bool, ref::kCallCheckpointCount> failed_{};
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
    usable_[ref::Index(c)] = Usable(got);
    const auto expected = data_.Expected(c, call_);
    reference_[ref::Index(c)].assign(expected.begin(), expected.end());
  }
  const int rows = call_.pos + call_.n;
  const auto keys = CacheRows(in.run->cacheAfter.keys, 0, rows);
  const auto values = CacheRows(in.run->cacheAfter.values, 0, rows);
  studentKeys_ = ToDouble(keys);
  studentValues_ = ToDouble(values);
  cacheUsable_ = Usable(keys) && Usable(values);
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

CallChecks CallChecker::Run() {
  CallChecks checks;
  for (CallCheckpoint c : ref::kCallCheckpointOrder) {
    CheckpointReport cp = c == CallCheckpoint::kCacheOtherRows ? CheckOtherRows() : CheckBuffer(c);
    if (c != CallCheckpoint::kCacheOtherRows) checks.allUnwritten = checks.allUnwritten && cp.unwritten == cp.total;
    failed_[ref::Index(c)] = cp.status == CheckStatus::kFail;
    checks.checkpoints.push_back(std::move(cp));
  }
  return checks;
}

CheckpointReport CallChecker::Named(CallCheckpoint c) const {
  CheckpointReport cp;
  cp.name = CallCheckpointLabel(in_.number, c);
  cp.maxPoints = in_.points;
  return cp;
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

bool CallChecker::UpstreamUsable(CallCheckpoint c) const {
  if (c == CallCheckpoint::kAttnOut) return usable_[ref::Index(Checkpoint::kQ)] && cacheUsable_;
  for (CallCheckpoint u : Upstream(c)) {
    if (!usable_[ref::Index(*ref::BlockCheckpointOf(u))]) return false;
  }
  return true;
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
      return MistakenView{got(c), ref::ComputeCheckpoint(*ref::BlockCheckpointOf(c), shape_, {}, weights_, inputs,
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

std::optional<MisconceptionHit> CallChecker::Recognise(CallCheckpoint c, bool onStudent) const {
  const Tolerance tolerance = ToleranceFor(c);
  auto hit = DiagnoseDecode(c, tolerance, in_.lessonPath, [&](const ref::DecodeRecipe& recipe) {
    return Mistaken(c, recipe, onStudent);
  });
  const auto block = ref::BlockCheckpointOf(c);
  if (hit || !block) return hit;
  const ref::BlockState& upstream = onStudent ? student_ : reference_;
  return Diagnose(*block, Got(c), tolerance, kBlockLesson, [&](const ref::BlockRecipe& recipe) {
    if (c != CallCheckpoint::kAttnOut) return ref::ComputeCheckpoint(*block, shape_, recipe, weights_, inputs_, upstream);
    std::vector<double> out(static_cast<size_t>(call_.n) * shape_.qWidth());
    ref::AttendCached(upstream[ref::Index(Checkpoint::kQ)], onStudent ? studentKeys_ : referenceKeys_,
                      onStudent ? studentValues_ : referenceValues_, call_, shape_, recipe, {}, out);
    return out;
  });
}

CheckpointReport CallChecker::CheckBuffer(CallCheckpoint c) {
  const auto got = Got(c);
  const std::vector<double> expected = ChainExpected(c);
  const Tolerance tolerance = ToleranceFor(c);
  const Comparison chain = Compare(got, expected, tolerance, kSamplesShown);

  CheckpointReport cp = Named(c);
  const int width = Width(c, shape_);
  cp.shape = fmt::format("{} x {}", call_.n, width);
  RecordComparison(chain, in_.points, cp);
  if (chain.hasWorst) {
    cp.worst = Detail(Where(c, chain.worstIndex, call_.pos, shape_), chain.worstExpected, got[chain.worstIndex]);
  }
  for (size_t index : chain.failingSample) {
    if (chain.hasWorst && index == chain.worstIndex) continue;
    cp.samples.push_back(Detail(Where(c, index, call_.pos, shape_), expected[index], got[index]));
  }
  if (chain.pass() || chain.allUnwritten()) return cp;

  // The local check: this step on the student's own upstream buffers.
  const bool upstreamUsable = UpstreamUsable(c);
  std::vector<double> local;
  if (upstreamUsable) {
    local = Local(c);
    cp.local = Compare(got, local, tolerance, 0).pass() ? LocalStatus::kPass : LocalStatus::kFail;
  }
  std::vector<std::string> broken;
  for (CallCheckpoint u : Upstream(c)) {
    if (failed_[ref::Index(u)]) broken.push_back(CallCheckpointLabel(in_.number, u));
  }
  if (c == CallCheckpoint::kAttnOut && !earlierRowsMatch_) broken.emplace_back("the cache rows of earlier calls");

  if (cp.local != LocalStatus::kPass) cp.misconception = Recognise(c, upstreamUsable);
  if (cp.misconception) return cp;
  if (!upstreamUsable && !broken.empty()) {
    cp.observation = fmt::format("not checked on its own: {} {} elements that are unwritten or not finite",
                                 JoinNames(broken), broken.size() == 1 ? "has" : "have");
  } else if (cp.local == LocalStatus::kPass && !broken.empty()) {
    const std::string names = JoinNames(broken);
    cp.observation = fmt::format("your {} step is right for the {} it was given; it is off only because {} {}",
                                 CallCheckpointName(c), names, names, broken.size() == 1 ? "is" : "are");
  } else {
    const bool split = c == CallCheckpoint::kQ || c == CallCheckpoint::kK || c == CallCheckpoint::kV ||
                       c == CallCheckpoint::kAttnOut || c == CallCheckpoint::kKCache ||
                       c == CallCheckpoint::kVCache;
    const bool isCache = c == CallCheckpoint::kKCache || c == CallCheckpoint::kVCache;
    const BufferGeometry geometry{.rows = call_.n,
                                  .width = width,
                                  .headDim = split ? shape_.headDim : 0,
                                  .rowName = isCache ? "row" : "token",
                                  .firstRow = call_.pos};
    cp.observation = Observe(got, upstreamUsable ? local : expected, tolerance, geometry);
  }
  return cp;
}

CheckpointReport CallChecker::CheckOtherRows() {
  CheckpointReport cp = Named(CallCheckpoint::kCacheOtherRows);
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
        (cp.worst ? cp.samples.emplace_back() : cp.worst.emplace()) = Detail(where, expected, now);
      }
    }
  }
  cp.status = cp.failing == 0 ? CheckStatus::kPass : CheckStatus::kFail;
  cp.points = cp.failing == 0 ? in_.points : 0;
  if (cp.failing == 0) return cp;

  const bool kvUsable = usable_[ref::Index(Checkpoint::kK)] && usable_[ref::Index(Checkpoint::kV)];
  cp.misconception = DiagnoseDecode(CallCheckpoint::kCacheOtherRows, ToleranceFor(CallCheckpoint::kKCache),
                                    in_.lessonPath, [&](const ref::DecodeRecipe& recipe) {
                                      return Mistaken(CallCheckpoint::kCacheOtherRows, recipe, kvUsable);
                                    });
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

std::string CallCheckpointLabel(int number, ref::CallCheckpoint checkpoint) {
  return fmt::format("step{}.{}", number, ref::CallCheckpointName(checkpoint));
}

CallChecks CheckCall(const CallCheckInput& input) { return CallChecker(input).Run(); }

std::vector<CheckpointReport> NotReached(const DecodeCase& data, const ref::DecodeCall& call, int number,
                                         double points) {
  std::vector<CheckpointReport> checkpoints;
  for (CallCheckpoint c : ref::kCallCheckpointOrder) {
    CheckpointReport cp;
    cp.name = CallCheckpointLabel(number, c);
    const bool otherRows = c == CallCheckpoint::kCacheOtherRows;
    cp.shape = otherRows ? fmt::format("2 x {} x {}", kCacheRows - call.n, kCacheWidth)
                         : fmt::format("{} x {}", call.n, Width(c, data.shape));
    cp.status = CheckStatus::kFail;
    cp.total = otherRows ? static_cast<size_t>(kCacheRows - call.n) * kCacheWidth * 2
                         : static_cast<size_t>(call.n) * Width(c, data.shape);
    cp.failing = cp.total;
    cp.unwritten = cp.total;
    cp.maxPoints = points;
    checkpoints.push_back(std::move(cp));
  }
  return checkpoints;
}

}  // namespace wb
