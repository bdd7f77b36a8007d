#include "model/tokenizer/normalizer.h"

#include <fmt/format.h>

#include "model/tokenizer/unicode_text.h"

namespace wb::tokenizer {

namespace {

std::string ReplaceAll(std::string_view text, std::string_view pattern, std::string_view content) {
  if (pattern.empty()) return std::string(text);
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(pattern); at != std::string_view::npos; at = text.find(pattern, from)) {
    out.append(text.substr(from, at - from));
    out.append(content);
    from = at + pattern.size();
  }
  out.append(text.substr(from));
  return out;
}

std::string Strip(std::string_view text, bool left, bool right) {
  const std::vector<TextChar> chars = DecodeUtf8Lenient(text);
  size_t first = 0, last = chars.size();
  while (left && first < last && IsWhitespace(chars[first].codePoint)) ++first;
  while (right && last > first && IsWhitespace(chars[last - 1].codePoint)) --last;
  if (first == last) return "";
  const size_t begin = chars[first].offset;
  return std::string(text.substr(begin, chars[last - 1].offset + chars[last - 1].length - begin));
}

}  // namespace

std::string ApplyNormalizers(const std::vector<NormalizerStep>& steps, std::string_view text) {
  std::string out(text);
  for (const NormalizerStep& step : steps) {
    switch (step.kind) {
      case NormalizerStep::Kind::kNfc: out = Normalize(out, NormalizationForm::kNfc); break;
      case NormalizerStep::Kind::kNfd: out = Normalize(out, NormalizationForm::kNfd); break;
      case NormalizerStep::Kind::kNfkc: out = Normalize(out, NormalizationForm::kNfkc); break;
      case NormalizerStep::Kind::kNfkd: out = Normalize(out, NormalizationForm::kNfkd); break;
      case NormalizerStep::Kind::kLowercase: out = ToLower(out); break;
      case NormalizerStep::Kind::kReplace: out = ReplaceAll(out, step.pattern, step.content); break;
      case NormalizerStep::Kind::kPrepend:
        if (!out.empty()) out = step.content + out;  // HF's Prepend leaves an empty text empty
        break;
      case NormalizerStep::Kind::kStrip: out = Strip(out, step.left, step.right); break;
    }
  }
  return out;
}

std::string DescribeNormalizer(const NormalizerStep& step) {
  switch (step.kind) {
    case NormalizerStep::Kind::kNfc: return "NFC";
    case NormalizerStep::Kind::kNfd: return "NFD";
    case NormalizerStep::Kind::kNfkc: return "NFKC";
    case NormalizerStep::Kind::kNfkd: return "NFKD";
    case NormalizerStep::Kind::kLowercase: return "Lowercase";
    case NormalizerStep::Kind::kReplace: return fmt::format("Replace('{}' -> '{}')", step.pattern, step.content);
    case NormalizerStep::Kind::kPrepend: return fmt::format("Prepend('{}')", step.content);
    case NormalizerStep::Kind::kStrip:
      return fmt::format("Strip({})", step.left && step.right ? "both" : step.left ? "left" : "right");
  }
  return "?";
}

}  // namespace wb::tokenizer
