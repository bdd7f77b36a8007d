#include "model/tokenizer/vocabulary.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "model/tokenizer/unicode_text.h"

namespace wb::tokenizer {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

Status CheckId(const Vocabulary& v, const std::optional<int32_t>& id, const char* what) {
  if (id && (*id < 0 || static_cast<size_t>(*id) >= v.tokens.size())) {
    return BadData(fmt::format("{}: {} id {} is outside the vocabulary ({} tokens)", v.fileName, what, *id,
                               v.tokens.size()));
  }
  return Status::Ok();
}

}  // namespace

int ByteOfByteToken(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  const int hi = HexDigit(text[3]);
  const int lo = HexDigit(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Expected<std::shared_ptr<const Vocabulary>> FinishVocabulary(Vocabulary v) {
  const std::string& file = v.fileName;
  if (v.tokens.empty()) return BadData(fmt::format("{}: the vocabulary is empty", file));
  if (v.tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return BadData(fmt::format("{}: {} tokens do not fit 32-bit ids", file, v.tokens.size()));
  }
  if (v.types.size() != v.tokens.size()) {
    return BadData(fmt::format("{}: {} token types for {} tokens", file, v.types.size(), v.tokens.size()));
  }
  if (!v.scores.empty() && v.scores.size() != v.tokens.size()) {
    return BadData(fmt::format("{}: {} scores for {} tokens", file, v.scores.size(), v.tokens.size()));
  }
  for (auto [id, what] : {std::pair{&v.bos, "BOS"}, std::pair{&v.eos, "EOS"}, std::pair{&v.unk, "unknown-token"}}) {
    if (Status s = CheckId(v, *id, what); !s.ok()) return s.error();
  }
  for (int32_t id : v.extraEndOfGeneration) {
    if (Status s = CheckId(v, id, "end-of-turn"); !s.ok()) return s.error();
  }

  const int32_t n = static_cast<int32_t>(v.tokens.size());
  // Token texts are UTF-8 in both formats (GGUF's strings, RFC 8259's JSON); a byte that is not
  // would be matched and printed as nothing a text can hold.
  for (int32_t id = 0; id < n; ++id) {
    if (auto bad = FirstInvalidUtf8Byte(v.tokens[id])) {
      return BadData(fmt::format("{}: token {} is not valid UTF-8 (byte {} of its {} is 0x{:02X})", file, id, *bad,
                                 v.tokens[id].size(), static_cast<unsigned char>(v.tokens[id][*bad])));
    }
  }
  v.idOf.reserve(v.tokens.size());
  for (int32_t id = 0; id < n; ++id) {
    if (!v.tokens[id].empty()) v.idOf[v.tokens[id]] = id;
  }

  for (size_t rank = 0; rank < v.mergeList.size(); ++rank) {
    const auto& [left, right] = v.mergeList[rank];
    const auto l = v.Find(left);
    const auto r = v.Find(right);
    const auto result = v.Find(left + right);
    const char* missing = !l ? "its left part" : !r ? "its right part" : !result ? "its result" : nullptr;
    if (missing != nullptr) {
      return BadData(fmt::format("{}: merge {} '{} {}': {} '{}' is not in the vocabulary", file, rank, left, right,
                                 missing, !l ? left : !r ? right : left + right));
    }
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(*l)) << 32) | static_cast<uint32_t>(*r);
    v.merges.try_emplace(key, MergeResult{static_cast<int32_t>(rank), *result});  // the first rank stays
  }

  v.byteTokens.fill(-1);
  for (int b = 0; b < 256; ++b) {
    if (v.kind == TokenizerKind::kByteLevelBpe) {
      if (auto id = v.Find(ByteToUnicode(static_cast<uint8_t>(b)))) v.byteTokens[b] = *id;
    } else {
      // llama.cpp's byte_to_token: the token spelled "<0xXX>" (upper-case hex).
      if (auto id = v.Find(fmt::format("<0x{:02X}>", b))) v.byteTokens[b] = *id;
    }
  }

  for (int32_t id = 0; id < n; ++id) {
    const TokenType t = v.types[id];
    // The unknown token is written out like a special token too: llama.cpp's special-token
    // cache takes LLAMA_TOKEN_ATTR_CONTROL, _USER_DEFINED and _UNKNOWN, and a tokenizer.json
    // lists "<unk>" among its added tokens with "special": true.
    if ((t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUserDefined) &&
        !v.tokens[id].empty()) {
      v.specialsByFirstByte[static_cast<uint8_t>(v.tokens[id][0])].push_back(id);
    }
  }
  for (auto& bucket : v.specialsByFirstByte) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [&](int32_t a, int32_t b) { return v.tokens[a].size() > v.tokens[b].size(); });
  }

  // End of generation: EOS, GGUF's eot/eom, and the end-of-turn markers of the common chat
  // formats (llama.cpp's llama_vocab::impl::load collects the same texts into special_eog_ids).
  if (v.eos) v.endOfGeneration.push_back(*v.eos);
  for (int32_t id : v.extraEndOfGeneration) v.endOfGeneration.push_back(id);
  for (const char* text : {"<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<|endoftext|>", "</s>",
                           "<|eom_id|>"}) {
    if (auto id = v.Find(text)) v.endOfGeneration.push_back(*id);
  }
  std::sort(v.endOfGeneration.begin(), v.endOfGeneration.end());
  v.endOfGeneration.erase(std::unique(v.endOfGeneration.begin(), v.endOfGeneration.end()), v.endOfGeneration.end());

  return std::shared_ptr<const Vocabulary>(std::make_shared<Vocabulary>(std::move(v)));
}

}  // namespace wb::tokenizer
