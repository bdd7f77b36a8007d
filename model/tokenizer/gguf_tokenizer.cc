// Tokenizer::FromGguf: the tokenizer.ggml.* keys, read as llama.cpp's llama_vocab::impl::load
// (src/llama-vocab.cpp) reads them.
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/vocabulary.h"

namespace wb::tokenizer {

namespace {

// An optional token id key: absent gives `fallback`.
Status ReadId(const GgufFile& file, std::string_view key, std::optional<int32_t> fallback, std::optional<int32_t>& id) {
  if (!file.HasKey(key)) {
    id = fallback;
    return Status::Ok();
  }
  auto value = file.GetI64(key);
  if (!value.ok()) return value.error();
  if (*value < 0 || *value > std::numeric_limits<int32_t>::max()) {
    return BadData(fmt::format("{}: key '{}' is {}, not a token id", file.name(), key, *value));
  }
  id = static_cast<int32_t>(*value);
  return Status::Ok();
}

}  // namespace

Expected<Tokenizer> Tokenizer::FromGguf(const GgufFile& file) {
  const std::string& name = file.name();
  Vocabulary v;
  v.fileName = name;

  auto model = file.GetStringOr("tokenizer.ggml.model", "");
  if (!model.ok()) return model.error();
  if (model->empty()) return BadData(fmt::format("{}: has no tokenizer (no tokenizer.ggml.model key)", name));
  if (*model == "no_vocab" || *model == "none") {
    return BadData(fmt::format("{}: has no tokenizer (tokenizer.ggml.model is '{}')", name, *model));
  }
  if (*model == "llama") {
    v.kind = TokenizerKind::kSentencePiece;
  } else if (*model == "gpt2") {
    v.kind = TokenizerKind::kByteLevelBpe;
  } else {
    return BadData(fmt::format("{}: tokenizer.ggml.model '{}' is not supported (the workbook reads 'llama', "
                               "SentencePiece, and 'gpt2', byte-level BPE)",
                               name, *model));
  }
  const bool spm = v.kind == TokenizerKind::kSentencePiece;

  auto tokens = file.GetStringArray("tokenizer.ggml.tokens");
  if (!tokens.ok()) return tokens.error();
  v.tokens = std::move(*tokens);
  const size_t n = v.tokens.size();

  // Scores: optional (llama.cpp takes 0 for each), used by SentencePiece only.
  if (spm) {
    if (file.HasKey("tokenizer.ggml.scores")) {
      auto scores = file.GetF32Array("tokenizer.ggml.scores");
      if (!scores.ok()) return scores.error();
      if (scores->size() != n) {
        return BadData(fmt::format("{}: tokenizer.ggml.scores has {} entries but tokenizer.ggml.tokens has {}", name,
                                   scores->size(), n));
      }
      v.scores = std::move(*scores);
    } else {
      v.scores.assign(n, 0.0f);
    }
  }

  // Token types: optional (llama.cpp takes LLAMA_TOKEN_TYPE_NORMAL).
  v.types.assign(n, TokenType::kNormal);
  if (file.HasKey("tokenizer.ggml.token_type")) {
    auto types = file.GetI64Array("tokenizer.ggml.token_type");
    if (!types.ok()) return types.error();
    if (types->size() != n) {
      return BadData(fmt::format("{}: tokenizer.ggml.token_type has {} entries but tokenizer.ggml.tokens has {}", name,
                                 types->size(), n));
    }
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = (*types)[i];
      if (t < 0 || t > 6) {
        return BadData(fmt::format("{}: tokenizer.ggml.token_type[{}] is {}; token types are 0 to 6", name, i, t));
      }
      v.types[i] = static_cast<TokenType>(t);
    }
  }

  if (!spm) {
    auto merges = file.GetStringArray("tokenizer.ggml.merges");
    if (!merges.ok()) return merges.error();
    v.mergeList.reserve(merges->size());
    for (size_t i = 0; i < merges->size(); ++i) {
      const std::string& m = (*merges)[i];
      // Split at the first space after the first byte, as llama.cpp does (find(' ', 1)).
      const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
      if (space == std::string::npos || space + 1 >= m.size()) {
        return BadData(fmt::format("{}: tokenizer.ggml.merges[{}] '{}' is not two tokens separated by a space", name,
                                   i, m));
      }
      v.mergeList.emplace_back(m.substr(0, space), m.substr(space + 1));
    }
    auto pre = file.GetStringOr("tokenizer.ggml.pre", "");
    if (!pre.ok()) return pre.error();
    auto known = PreTokenizerFromGgufName(*pre);
    if (!known) {
      return BadData(fmt::format("{}: tokenizer.ggml.pre '{}' is a pre-tokenizer the workbook does not know (it "
                                 "knows gpt-2, llama3/llama-bpe, qwen2, qwen35, tekken, smollm, default and their "
                                 "llama.cpp aliases)",
                                 name, *pre));
    }
    v.pre = known->kind;
    v.preName = PreTokenizerName(known->kind);
    v.ignoreMerges = known->ignoreMerges;
    v.addBos = known->addsBos;
  } else {
    auto prefix = file.GetBoolOr("tokenizer.ggml.add_space_prefix", true);
    if (!prefix.ok()) return prefix.error();
    v.addSpacePrefix = *prefix;
    v.addBos = true;  // llama.cpp's SentencePiece default
  }

  // Ids. llama.cpp's SentencePiece defaults are bos 1, eos 2, unk 0; byte-level BPE has none here.
  const auto defaultId = [&](int32_t id) { return spm && static_cast<size_t>(id) < n ? std::optional(id) : std::nullopt; };
  std::optional<int32_t> eot, eom;
  for (auto [key, fallback, id] : {std::tuple{"tokenizer.ggml.bos_token_id", defaultId(1), &v.bos},
                                   std::tuple{"tokenizer.ggml.eos_token_id", defaultId(2), &v.eos},
                                   std::tuple{"tokenizer.ggml.unknown_token_id", defaultId(0), &v.unk},
                                   std::tuple{"tokenizer.ggml.padding_token_id", std::optional<int32_t>(), &v.pad},
                                   std::tuple{"tokenizer.ggml.eot_token_id", std::optional<int32_t>(), &eot},
                                   std::tuple{"tokenizer.ggml.eom_token_id", std::optional<int32_t>(), &eom}}) {
    if (Status s = ReadId(file, key, fallback, *id); !s.ok()) return s.error();
    if (*id && static_cast<size_t>(**id) >= n) {
      return BadData(fmt::format("{}: {} is {} but the vocabulary has {} tokens", name, key, **id, n));
    }
  }
  if (eot) v.extraEndOfGeneration.push_back(*eot);
  if (eom) v.extraEndOfGeneration.push_back(*eom);

  // tokenizer.ggml.add_bos_token / add_eos_token decide; absent, llama.cpp's defaults for the
  // vocabulary type apply (llama_vocab::impl::load, src/llama-vocab.cpp: SentencePiece adds BOS
  // and no EOS; byte-level BPE adds BOS only for the pre-tokenizers whose group sets add_bos,
  // llama3/llama-bpe and tekken among those read here).
  auto addBos = file.GetBoolOr("tokenizer.ggml.add_bos_token", v.addBos);
  if (!addBos.ok()) return addBos.error();
  v.addBos = *addBos;
  auto addEos = file.GetBoolOr("tokenizer.ggml.add_eos_token", false);
  if (!addEos.ok()) return addEos.error();
  v.addEos = *addEos;

  auto chatTemplate = file.GetStringOr("tokenizer.chat_template", "");
  if (!chatTemplate.ok()) return chatTemplate.error();
  v.chatTemplate = std::move(*chatTemplate);

  auto finished = FinishVocabulary(std::move(v));
  if (!finished.ok()) return finished.error();
  return Tokenizer(std::move(*finished));
}

}  // namespace wb::tokenizer
