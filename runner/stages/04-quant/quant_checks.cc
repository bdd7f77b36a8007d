#include "quant_checks.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "model/files/tensor_types.h"
#include "runner/isolation/shared_layout.h"

namespace wb::stage04 {
namespace {

constexpr std::array<std::string_view, 6> kIds = {"q8-signed-max",  "q8-truncated", "q8-ties-to-even",
                                                  "q8-inverse-from-half", "q8-zero-block",
                                                  "quantized-first-row-only"};

// How a mistaken quantizer differs from ggml's quantize_row_q8_0_ref.
enum class Rule { kReference, kTruncated, kTiesToEven, kInverseFromHalf };

struct Block {
  uint16_t d = 0;
  std::array<int8_t, kQK> qs{};
};

Block ReadBlock(std::span<const unsigned char> buffer, size_t b) {
  Block block;
  std::memcpy(&block.d, buffer.data() + b * kQ8Bytes, sizeof(block.d));
  std::memcpy(block.qs.data(), buffer.data() + b * kQ8Bytes + 2, kQK);
  return block;
}

// One block by ggml's rule, or by one of the mistaken rules. Inputs are finite.
Block QuantizeBlock(const float* x, Rule rule) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  Block block;
  block.d = FloatToHalf(d);
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  if (rule == Rule::kInverseFromHalf) {
    const float half = HalfToFloat(block.d);
    id = half != 0.0f ? 1.0f / half : 0.0f;
  }
  for (int j = 0; j < kQK; ++j) {
    const float scaled = x[j] * id;
    float level = std::round(scaled);
    if (rule == Rule::kTruncated) level = std::trunc(scaled);
    if (rule == Rule::kTiesToEven) level = std::nearbyint(scaled);
    // Within -127 .. 127 by construction; clamped only against a 1/d that overflowed.
    block.qs[j] = static_cast<int8_t>(std::clamp(level, -127.0f, 127.0f));
  }
  return block;
}

std::vector<unsigned char> QuantizeAll(std::span<const float> values, Rule rule) {
  std::vector<unsigned char> out(values.size() / kQK * kQ8Bytes);
  for (size_t b = 0; b < values.size() / kQK; ++b) {
    const Block block = QuantizeBlock(values.data() + b * kQK, rule);
    std::memcpy(out.data() + b * kQ8Bytes, &block.d, 2);
    std::memcpy(out.data() + b * kQ8Bytes + 2, block.qs.data(), kQK);
  }
  return out;
}

bool SameBlock(std::span<const unsigned char> a, std::span<const unsigned char> b, size_t index) {
  return std::memcmp(a.data() + index * kQ8Bytes, b.data() + index * kQ8Bytes, kQ8Bytes) == 0;
}

std::string HalfText(uint16_t bits) { return fmt::format("{:.6g} (half 0x{:04x})", HalfToFloat(bits), bits); }

// The mistake every wrong block is explained by, if one is.
std::optional<MisconceptionHit> Recognise(const BlockCheck& c, std::span<const unsigned char> expected,
                                          const std::vector<size_t>& wrong) {
  const std::string lesson = c.lesson;
  const size_t blocks = expected.size() / kQ8Bytes;
  auto hit = [&](size_t id, std::string sentence, std::string anchor) {
    return MisconceptionHit{std::string(kIds[id]), std::move(sentence), lesson + "#" + anchor};
  };
  // The rows after the first never written, the first right: the activation quantized for one
  // row only.
  if (c.rows > 1) {
    const size_t firstRowBlocks = static_cast<size_t>(c.blocksPerRow);
    bool firstRight = true, restUnwritten = true;
    for (size_t b = 0; b < blocks; ++b) {
      if (b < firstRowBlocks) firstRight = firstRight && SameBlock(c.got, expected, b);
      else restUnwritten = restUnwritten && BlockUnwritten(c.got, b);
    }
    if (firstRight && restUnwritten) {
      return hit(5, fmt::format("{} holds the first {}'s blocks only: the rows after it were never written. Each "
                                "of the T rows is quantized, one call per row or one call over all T rows.",
                                c.name, c.rowName),
                 "the-quantized-block");
    }
  }
  for (size_t b : wrong) {
    if (BlockUnwritten(c.got, b)) return std::nullopt;  // nothing to explain in a block never written
  }
  struct Whole {
    Rule rule;
    size_t id;
    const char* sentence;
    const char* anchor;
  };
  const std::array<Whole, 3> wholes = {{
      {Rule::kTruncated, 1,
       "every wrong code is x * id truncated toward zero: the rule rounds to the nearest integer (std::round).",
       "the-q8_0-block"},
      {Rule::kTiesToEven, 2,
       "every wrong code is a halfway case rounded to even (nearbyint, rint or lrint): the rule rounds halves away "
       "from zero, as std::round and roundf do.",
       "the-q8_0-block"},
      {Rule::kInverseFromHalf, 3,
       "every wrong code is what 1 / half(d) gives: the inverse is taken from the float d, before it is rounded to "
       "the half the block stores.",
       "the-q8_0-block"},
  }};
  for (const Whole& w : wholes) {
    const std::vector<unsigned char> variant = QuantizeAll(c.source, w.rule);
    if (std::equal(variant.begin(), variant.end(), c.got.begin(), c.got.end())) {
      return hit(w.id, fmt::format("{}: {}", c.name, w.sentence), w.anchor);
    }
  }
  // Every wrong block is a block of zeros: 1 / d with d = 0.
  const bool allZeroBlocks = std::all_of(wrong.begin(), wrong.end(), [&](size_t b) {
    return std::all_of(c.source.begin() + b * kQK, c.source.begin() + (b + 1) * kQK, [](float v) { return v == 0.0f; });
  });
  if (allZeroBlocks) {
    return hit(4, fmt::format("{}: the only wrong blocks are blocks of zeros. There d = 0, and 1 / d is infinite: "
                              "0 * inf is NaN, and a NaN converted to an integer is anything. The rule takes id = 0 "
                              "when d == 0.",
                              c.name),
               "the-q8_0-block");
  }
  // Every wrong block's scale is its largest value / 127, not its largest magnitude / 127.
  const bool signedMax = std::all_of(wrong.begin(), wrong.end(), [&](size_t b) {
    const float* x = c.source.data() + b * kQK;
    float largest = x[0];
    for (int j = 1; j < kQK; ++j) largest = std::max(largest, x[j]);
    const uint16_t got = ReadBlock(c.got, b).d;
    const uint16_t right = ReadBlock(expected, b).d;
    return got != right && (got == FloatToHalf(largest / 127.0f) || got == FloatToHalf(std::max(largest, 0.0f) / 127.0f));
  });
  if (signedMax) {
    return hit(0, fmt::format("{}: every wrong block's scale is its largest VALUE / 127. A block whose largest "
                              "magnitude is negative needs max |x|: the scale comes from the value farthest from "
                              "zero, whatever its sign.",
                              c.name),
               "the-q8_0-block");
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<unsigned char>> ReferenceQ8_0(std::span<const float> values) {
  if (!std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); })) return std::nullopt;
  std::vector<unsigned char> out(values.size() / kQK * kQ8Bytes);
  const Status done = QuantizeRowQ8_0(values, std::as_writable_bytes(std::span(out)));
  if (!done.ok()) return std::nullopt;
  return out;
}

bool BlockUnwritten(std::span<const unsigned char> buffer, size_t b) {
  // The poison word's bytes, laid from the buffer's first byte on (SharedRegion::PoisonOutputs).
  const uint32_t word = shm::kPoisonWord;
  unsigned char pattern[4];
  std::memcpy(pattern, &word, 4);
  for (size_t i = b * kQ8Bytes; i < (b + 1) * kQ8Bytes; ++i) {
    if (buffer[i] != pattern[i % 4]) return false;
  }
  return true;
}

std::vector<float> DequantizeQ8_0(std::span<const unsigned char> blocks) {
  const size_t count = blocks.size() / kQ8Bytes;
  std::vector<float> values(count * kQK);
  for (size_t b = 0; b < count; ++b) {
    const Block block = ReadBlock(blocks, b);
    const float d = HalfToFloat(block.d);
    for (int j = 0; j < kQK; ++j) {
      float& v = values[b * kQK + j];
      if (BlockUnwritten(blocks, b)) v = std::bit_cast<float>(shm::kPoisonWord);
      else if (!std::isfinite(d)) v = std::numeric_limits<float>::quiet_NaN();
      else v = block.qs[j] * d;
    }
  }
  return values;
}

std::vector<double> FloatScaleView(std::span<const float> source, std::span<const unsigned char> blocks) {
  const size_t count = blocks.size() / kQ8Bytes;
  std::vector<double> values(count * kQK);
  for (size_t b = 0; b < count; ++b) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(source[b * kQK + j]));
    const Block block = ReadBlock(blocks, b);
    for (int j = 0; j < kQK; ++j) values[b * kQK + j] = block.qs[j] * double(amax / 127.0f);
  }
  return values;
}

CheckpointReport CheckQuantizedBlocks(const BlockCheck& c) {
  CheckpointReport cp;
  cp.name = c.name;
  cp.shape = c.shape;
  cp.maxPoints = c.points;
  const size_t blocks = static_cast<size_t>(c.rows) * c.blocksPerRow;
  cp.total = blocks * kQK;
  const auto reference = ReferenceQ8_0(c.source);
  if (!reference) {
    // The caller passes finite floats; a report rather than a crash if it ever does not.
    cp.status = CheckStatus::kFail;
    cp.failing = cp.total;
    cp.observation = "not checked: the floats it quantizes hold values that are not finite";
    return cp;
  }
  const std::vector<unsigned char>& expected = *reference;
  std::vector<size_t> wrong;
  size_t unwrittenBlocks = 0;
  for (size_t b = 0; b < blocks; ++b) {
    if (SameBlock(c.got, expected, b)) continue;
    wrong.push_back(b);
    if (BlockUnwritten(c.got, b)) {
      ++unwrittenBlocks;
      cp.failing += kQK;
      continue;
    }
    const Block got = ReadBlock(c.got, b);
    const Block want = ReadBlock(expected, b);
    for (int j = 0; j < kQK; ++j) {
      if (got.d != want.d || got.qs[j] != want.qs[j]) ++cp.failing;
      const double error = std::fabs(double(got.qs[j]) * HalfToFloat(got.d) - double(want.qs[j]) * HalfToFloat(want.d));
      if (std::isfinite(error)) cp.maxAbsError = std::max(cp.maxAbsError, error);
    }
  }
  cp.unwritten = unwrittenBlocks * kQK;
  cp.status = wrong.empty() ? CheckStatus::kPass : CheckStatus::kFail;
  cp.points = wrong.empty() ? c.points : 0;
  if (wrong.empty() || unwrittenBlocks == blocks) return cp;

  // The first wrong block, by position, with its first wrong value.
  const size_t first = wrong.front();
  const Block want = ReadBlock(expected, first);
  const size_t row = first / c.blocksPerRow;
  const size_t block = first % c.blocksPerRow;
  std::string what;
  if (BlockUnwritten(c.got, first)) {
    what = fmt::format("block {} of {} {} (values {} .. {}) was never written", block, c.rowName, row, block * kQK,
                       block * kQK + kQK - 1);
    cp.worst = ElementDetail{.where = fmt::format("{} {}, block {}", c.rowName, row, block),
                             .expected = want.qs[0] * HalfToFloat(want.d), .got = 0, .gotNote = "never written"};
  } else {
    const Block got = ReadBlock(c.got, first);
    int j = 0;
    while (j < kQK - 1 && got.qs[j] == want.qs[j]) ++j;
    if (got.qs[j] == want.qs[j]) j = 0;  // only the scale differs
    what = fmt::format("the first wrong block is block {} of {} {} (values {} .. {}): value {} is code {} x scale {}, "
                       "and the reference quantizer gives code {} x scale {}",
                       block, c.rowName, row, block * kQK, block * kQK + kQK - 1, j, got.qs[j], HalfText(got.d),
                       want.qs[j], HalfText(want.d));
    if (got.d == want.d) what += " (the same scale)";
    what += fmt::format("; the float it quantizes is {:.9g}", c.source[first * kQK + j]);
    cp.worst = ElementDetail{.where = fmt::format("{} {}, block {}, value {}", c.rowName, row, block, j),
                             .expected = want.qs[j] * double(HalfToFloat(want.d)),
                             .got = got.qs[j] * double(HalfToFloat(got.d)),
                             .gotNote = ""};
  }
  cp.misconception = Recognise(c, expected, wrong);
  cp.observation = fmt::format("{} of {} blocks differ from the reference quantizer's, bit for bit; {}.", wrong.size(),
                               blocks, what);
  if (!c.sourceNote.empty()) cp.observation += " " + c.sourceNote;
  return cp;
}

std::span<const std::string_view> QuantizeMisconceptionIds() { return kIds; }

}  // namespace wb::stage04
