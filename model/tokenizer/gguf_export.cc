// Tokenizer::GgufKeys: a tokenizer as the tokenizer.ggml.* keys of a GGUF file, for `convert`.
//
// SentencePiece-style BPE (byte fallback, "▁" for spaces: Llama 2, Mistral, Gemma) becomes
// tokenizer.ggml.model "llama", which llama.cpp tokenizes by scores: the adjacent pair whose
// concatenation has the highest score merges first (llm_tokenizer_spm, src/llama-vocab.cpp).
// A tokenizer.json holds merges, not scores, so each token made by a merge scores minus the
// rank of the first merge that makes it: the merges then apply in the tokenizer.json's order.
// (llama.cpp's converter reads SentencePiece's own scores from tokenizer.model in
// _set_vocab_sentencepiece, and writes a placeholder -1000.0 for every token when it has only
// tokenizer.json, in gguf-py's LlamaHfVocab.get_token_score; HF's SentencePieceExtractor
// ordered the merges by those same scores, so -rank keeps their order.) A token no merge
// makes scores below every merge; tokenizer.ggml.pre is "default", as _set_vocab_sentencepiece
// writes it.
// Byte-level BPE becomes "gpt2" with its merges and the name llama.cpp gives its split.
#include <fmt/format.h>

#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/unicode_text.h"
#include "model/tokenizer/vocabulary.h"

namespace wb::tokenizer {

namespace {

// llama.cpp's tokenizer.ggml.pre for a split and ignore_merges (the groups of
// llama_vocab::impl::load); "" where llama.cpp has none.
std::string LlamaCppPreName(PreTokenizerKind kind, bool ignoreMerges) {
  switch (kind) {
    case PreTokenizerKind::kGpt2: return ignoreMerges ? "" : "gpt-2";
    case PreTokenizerKind::kLlama3: return ignoreMerges ? "llama-bpe" : "smaug-bpe";
    case PreTokenizerKind::kQwen2: return ignoreMerges ? "" : "qwen2";
    case PreTokenizerKind::kQwen35: return ignoreMerges ? "" : "qwen35";
    case PreTokenizerKind::kTekken: return ignoreMerges ? "tekken" : "";
    case PreTokenizerKind::kSmolLm: return ignoreMerges ? "" : "smollm";
    case PreTokenizerKind::kDefault: return ignoreMerges ? "" : "default";
  }
  return "";
}

}  // namespace

Expected<GgufTokenizerKeys> Tokenizer::GgufKeys() const {
  const Vocabulary& v = *v_;
  GgufTokenizerKeys keys;
  for (const NormalizerStep& step : v.normalizers) {
    if (step.kind != NormalizerStep::Kind::kNfc) {
      return BadData(fmt::format("{}: the normalizer step {} has no GGUF key (llama.cpp normalizes nothing), so a "
                                 "GGUF would tokenize differently",
                                 v.fileName, DescribeNormalizer(step)));
    }
    keys.notes.push_back(fmt::format("{}: its NFC normalizer has no GGUF key; llama.cpp (and the workbook reading the "
                                     "GGUF) leave text unnormalized, so decomposed accents tokenize differently",
                                     v.fileName));
  }
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    if (v.tokens[id].empty()) return BadData(fmt::format("{}: no token has id {} (ids must run 0..{})", v.fileName, id,
                                                         v.tokens.size() - 1));
  }
  keys.tokens = v.tokens;
  keys.tokenTypes.reserve(v.types.size());
  for (TokenType t : v.types) keys.tokenTypes.push_back(static_cast<int32_t>(t));
  if (v.kind == TokenizerKind::kSentencePiece) {
    keys.model = "llama";
    keys.pre = "default";
    if (!v.scores.empty()) {
      keys.scores = v.scores;  // a GGUF's own
    } else {
      const float unmerged = -static_cast<float>(v.mergeList.size());
      keys.scores.assign(v.tokens.size(), 0.0f);
      for (size_t id = 0; id < v.tokens.size(); ++id) {
        if (v.types[id] == TokenType::kNormal && DecodeUtf8Lenient(v.tokens[id]).size() > 1) keys.scores[id] = unmerged;
      }
      std::vector<bool> scored(v.tokens.size(), false);
      for (size_t rank = 0; rank < v.mergeList.size(); ++rank) {
        const auto id = v.Find(v.mergeList[rank].first + v.mergeList[rank].second);
        if (id && !scored[*id]) keys.scores[*id] = -static_cast<float>(rank), scored[*id] = true;
      }
    }
    keys.addSpacePrefix = v.addSpacePrefix;
  } else {
    keys.model = "gpt2";
    keys.pre = LlamaCppPreName(v.pre, v.ignoreMerges);
    if (keys.pre.empty()) {
      return BadData(fmt::format("{}: the {} split with ignore_merges {} has no tokenizer.ggml.pre name in llama.cpp",
                                 v.fileName, PreTokenizerName(v.pre), v.ignoreMerges));
    }
    keys.merges.reserve(v.mergeList.size());
    for (const auto& [left, right] : v.mergeList) keys.merges.push_back(left + " " + right);
  }
  keys.bos = v.bos;
  keys.eos = v.eos;
  keys.unk = v.unk;
  keys.pad = v.pad;
  keys.addBos = v.addBos;
  keys.addEos = v.addEos;
  keys.chatTemplate = v.chatTemplate;
  return keys;
}

}  // namespace wb::tokenizer
