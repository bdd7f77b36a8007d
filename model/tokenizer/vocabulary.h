// What a Tokenizer holds (internal to model/tokenizer/): the loaders fill the first half,
// FinishVocabulary checks it and derives the lookup tables.
//
// Contract: FinishVocabulary fails (wb::BadData, message starting with fileName) on an empty
// vocabulary, lists of different lengths, special ids out of range, a token that is not valid
// UTF-8 (naming its id, the token's index in the file), and merges that name a
// token not in the vocabulary or make one that is not in it (HF tokenizers' BPE rejects those
// too). A text that several ids share maps to the last of them (llama.cpp's token_to_id).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/expected.h"
#include "model/tokenizer/normalizer.h"
#include "model/tokenizer/pre_tokenizer.h"
#include "model/tokenizer/tokenizer.h"

namespace wb::tokenizer {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct MergeResult {
  int32_t rank = 0;
  int32_t id = 0;
};

struct Vocabulary {
  // Filled by a loader.
  std::string fileName;  // for messages
  TokenizerKind kind = TokenizerKind::kSentencePiece;
  PreTokenizerKind pre = PreTokenizerKind::kGpt2;  // byte-level BPE only
  std::string preName;                               // "" for SentencePiece
  bool ignoreMerges = false;                         // byte-level: a piece that is a token stays whole
  std::vector<std::string> tokens;
  std::vector<TokenType> types;                      // as many as tokens
  std::vector<float> scores;                         // SentencePiece from GGUF; empty: rank merges
  std::vector<std::pair<std::string, std::string>> mergeList;  // rank order
  bool addSpacePrefix = true;                        // SentencePiece
  // tokenizer.json's normalizer, applied to each text between special tokens; for
  // SentencePiece without its Prepend("▁") and Replace(" " -> "▁"), which the encoder does.
  std::vector<NormalizerStep> normalizers;
  std::string normalizerText;                        // "NFC", "none", ... for messages
  bool addBos = false;
  bool addEos = false;
  std::optional<int32_t> bos, eos, unk, pad;
  std::vector<int32_t> extraEndOfGeneration;        // GGUF eot/eom ids
  std::string chatTemplate;

  // Derived by FinishVocabulary.
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> idOf;
  std::unordered_map<uint64_t, MergeResult> merges;  // (left id << 32 | right id)
  // Byte-level: the token of each byte's character; SentencePiece: the <0xXX> tokens. -1: none.
  std::array<int32_t, 256> byteTokens{};
  // Control, unknown and user-defined tokens, by their first byte, longest first.
  std::array<std::vector<int32_t>, 256> specialsByFirstByte;
  std::vector<int32_t> endOfGeneration;  // sorted

  std::optional<int32_t> Find(std::string_view text) const {
    auto it = idOf.find(text);
    return it == idOf.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
};

Expected<std::shared_ptr<const Vocabulary>> FinishVocabulary(Vocabulary v);

// The byte of a token written "<0xXX>" (two hex digits, either case), or -1.
int ByteOfByteToken(std::string_view text);

}  // namespace wb::tokenizer
