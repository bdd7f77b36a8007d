// The normalizers of a tokenizer.json (HF tokenizers' "normalizer"): text transformations
// applied to each piece of text between special tokens before it is pre-tokenized.
//
// Contract: ApplyNormalizers applies the steps in order; none fails, on any bytes. The steps, as HF
// tokenizers documents them (docs "Normalizers", tokenizers/src/normalizers/):
//   kNfc, kNfd, kNfkc, kNfkd  the Unicode normalization forms (UAX #15)
//   kLowercase                full Unicode lower-case mapping
//   kReplace                  every occurrence of a literal string, left to right, replaced
//   kPrepend                  a string put in front of a non-empty text
//   kStrip                    White_Space characters taken off the left and/or right end
// A tokenizer.json "Sequence" is the list itself. Bytes that are not UTF-8 (which a
// tokenizer.json text never holds) pass through every step unchanged.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wb::tokenizer {

struct NormalizerStep {
  enum class Kind { kNfc, kNfd, kNfkc, kNfkd, kLowercase, kReplace, kPrepend, kStrip };
  Kind kind = Kind::kNfc;
  std::string pattern;  // kReplace: the literal text replaced
  std::string content;  // kReplace: its replacement; kPrepend: the prefix
  bool left = false;    // kStrip
  bool right = false;   // kStrip
};

std::string ApplyNormalizers(const std::vector<NormalizerStep>& steps, std::string_view text);

// "NFC", "Lowercase", "Replace(' ' -> '▁')", ... for messages and `inspect`.
std::string DescribeNormalizer(const NormalizerStep& step);

}  // namespace wb::tokenizer
