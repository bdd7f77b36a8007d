#include "block.h"

#include <cassert>
#include <utility>

#include "ops.h"

namespace ref {

std::string_view CheckpointName(Checkpoint c) {
  switch (c) {
    case Checkpoint::kNorm1: return "norm1";
    case Checkpoint::kQ: return "q";
    case Checkpoint::kK: return "k";
    case Checkpoint::kV: return "v";
    case Checkpoint::kAttnOut: return "attnOut";
    case Checkpoint::kResidual1: return "residual1";
    case Checkpoint::kNorm2: return "norm2";
    case Checkpoint::kFfnOut: return "ffnOut";
    case Checkpoint::kOutput: return "output";
  }
  return "?";
}

int CheckpointWidth(Checkpoint c, const BlockShape& shape) {
  switch (c) {
    case Checkpoint::kQ:
    case Checkpoint::kAttnOut: return shape.qWidth();
    case Checkpoint::kK:
    case Checkpoint::kV: return shape.kvWidth();
    default: return shape.model;
  }
}

std::span<const Checkpoint> Upstream(Checkpoint c) {
  static constexpr Checkpoint kNone[] = {Checkpoint::kNorm1};  // unused: norm1 reads x only
  static constexpr Checkpoint kFromNorm1[] = {Checkpoint::kNorm1};
  static constexpr Checkpoint kFromQkv[] = {Checkpoint::kQ, Checkpoint::kK, Checkpoint::kV};
  static constexpr Checkpoint kFromAttention[] = {Checkpoint::kNorm1, Checkpoint::kAttnOut};
  static constexpr Checkpoint kFromResidual1[] = {Checkpoint::kResidual1};
  static constexpr Checkpoint kFromNorm2[] = {Checkpoint::kNorm2};
  static constexpr Checkpoint kFromFfn[] = {Checkpoint::kResidual1, Checkpoint::kFfnOut};
  switch (c) {
    case Checkpoint::kNorm1: return std::span(kNone).first(0);
    case Checkpoint::kQ:
    case Checkpoint::kK:
    case Checkpoint::kV: return kFromNorm1;
    case Checkpoint::kAttnOut: return kFromQkv;
    // residual1 reads x; norm1 only when the mistaken recipe adds the normalised stream.
    case Checkpoint::kResidual1: return kFromAttention;
    case Checkpoint::kNorm2: return kFromResidual1;
    case Checkpoint::kFfnOut: return kFromNorm2;
    case Checkpoint::kOutput: return kFromFfn;
  }
  return {};
}

std::array<size_t, 9> PackedOffsets(const BlockShape& s) {
  const size_t d = s.model;
  const size_t sizes[9] = {d,
                           static_cast<size_t>(s.qWidth()) * d,
                           static_cast<size_t>(s.kvWidth()) * d,
                           static_cast<size_t>(s.kvWidth()) * d,
                           d * s.qWidth(),
                           d,
                           static_cast<size_t>(s.ffn) * d,
                           static_cast<size_t>(s.ffn) * d,
                           d * s.ffn};
  std::array<size_t, 9> offsets{};
  size_t at = 0;
  for (int i = 0; i < 9; ++i) {
    offsets[i] = at;
    at += sizes[i];
  }
  return offsets;
}

size_t PackedFloats(const BlockShape& s) {
  return PackedOffsets(s)[8] + static_cast<size_t>(s.model) * s.ffn;
}

BlockWeights ViewPacked(const BlockShape& s, std::span<const float> packed) {
  assert(packed.size() == PackedFloats(s));
  const auto off = PackedOffsets(s);
  const size_t d = s.model;
  BlockWeights w;
  w.rms1 = packed.subspan(off[0], d);
  w.wq = packed.subspan(off[1], static_cast<size_t>(s.qWidth()) * d);
  w.wk = packed.subspan(off[2], static_cast<size_t>(s.kvWidth()) * d);
  w.wv = packed.subspan(off[3], static_cast<size_t>(s.kvWidth()) * d);
  w.wo = packed.subspan(off[4], d * s.qWidth());
  w.rms2 = packed.subspan(off[5], d);
  w.gate = packed.subspan(off[6], static_cast<size_t>(s.ffn) * d);
  w.up = packed.subspan(off[7], static_cast<size_t>(s.ffn) * d);
  w.down = packed.subspan(off[8], d * s.ffn);
  return w;
}

std::vector<double> ComputeCheckpoint(Checkpoint c, const BlockShape& s, const BlockRecipe& r,
                                      const BlockWeights& w, const BlockInputs& in,
                                      const BlockState& up) {
  const int rows = in.rows;
  std::vector<double> out(static_cast<size_t>(rows) * CheckpointWidth(c, s));
  auto buffer = [&up](Checkpoint b) -> std::span<const double> { return up[Index(b)]; };
  switch (c) {
    case Checkpoint::kNorm1:
      RmsNorm(in.x, rows, s.model, w.rms1, s.rmsEps, r.normEpsilon, r.normWeight, out);
      break;
    case Checkpoint::kQ:
      Project(buffer(Checkpoint::kNorm1), rows, s.model, w.wq, s.qWidth(), out);
      if (r.ropeTargets != RopeTargets::kNone) {
        ApplyRope(out, rows, s.qHeads, s.headDim, in.ropeCos, in.ropeSin, r.ropePairing, r.ropeDirection);
      }
      break;
    case Checkpoint::kK:
      Project(buffer(Checkpoint::kNorm1), rows, s.model, w.wk, s.kvWidth(), out);
      if (r.ropeTargets != RopeTargets::kNone) {
        ApplyRope(out, rows, s.kvHeads, s.headDim, in.ropeCos, in.ropeSin, r.ropePairing, r.ropeDirection);
      }
      break;
    case Checkpoint::kV:
      Project(buffer(Checkpoint::kNorm1), rows, s.model, w.wv, s.kvWidth(), out);
      if (r.ropeTargets == RopeTargets::kQueryKeyValue) {
        ApplyRope(out, rows, s.kvHeads, s.headDim, in.ropeCos, in.ropeSin, r.ropePairing, r.ropeDirection);
      }
      break;
    case Checkpoint::kAttnOut: {
      const AttentionSpan span{.queries = rows, .firstQueryPosition = 0, .keys = rows, .window = 0};
      Attend(buffer(Checkpoint::kQ), buffer(Checkpoint::kK), buffer(Checkpoint::kV), span, s, r, out);
      break;
    }
    case Checkpoint::kResidual1: {
      std::vector<double> projected(out.size());
      Project(buffer(Checkpoint::kAttnOut), rows, s.qWidth(), w.wo, s.model, projected);
      if (r.residualSource == ResidualSource::kNone) {
        out = std::move(projected);
        break;
      }
      const auto stream = r.residualSource == ResidualSource::kInput ? in.x : buffer(Checkpoint::kNorm1);
      Add(stream, projected, out);
      break;
    }
    case Checkpoint::kNorm2:
      RmsNorm(buffer(Checkpoint::kResidual1), rows, s.model, w.rms2, s.rmsEps, r.normEpsilon,
              r.normWeight, out);
      break;
    case Checkpoint::kFfnOut:
      GatedFfn(buffer(Checkpoint::kNorm2), rows, s.model, s.ffn, w.gate, w.up, w.down,
               r.activation, r.gatedBranch, out);
      break;
    case Checkpoint::kOutput: {
      const auto ffn = buffer(Checkpoint::kFfnOut);
      if (r.outputResidual == OutputResidual::kNone) {
        out.assign(ffn.begin(), ffn.end());
        break;
      }
      const auto stream = r.outputResidual == OutputResidual::kResidual1 ? buffer(Checkpoint::kResidual1) : in.x;
      Add(stream, ffn, out);
      break;
    }
  }
  return out;
}

BlockState RunBlock(const BlockShape& shape, const BlockRecipe& recipe,
                    const BlockWeights& weights, const BlockInputs& inputs) {
  BlockState state;
  for (Checkpoint c : kCheckpointOrder) {
    state[Index(c)] = ComputeCheckpoint(c, shape, recipe, weights, inputs, state);
  }
  return state;
}

}  // namespace ref
