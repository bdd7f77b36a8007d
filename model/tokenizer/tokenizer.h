// Text <-> token ids, from a GGUF file's tokenizer.ggml.* metadata or a Hugging Face folder's
// tokenizer.json (and tokenizer_config.json).
//
// Contract: two kinds of tokenizer.
//   kByteLevelBpe  (GGUF "gpt2"; tokenizer.json BPE with a ByteLevel pre-tokenizer): the text is
//     split by the model's pre-tokenizer (pre_tokenizer.h), each piece's bytes are written with
//     GPT-2's byte-to-unicode table, and merges are applied lowest rank first (leftmost on ties)
//     within the piece; every byte string encodes, given the 256 single-byte tokens.
//   kSentencePiece (GGUF "llama"; tokenizer.json BPE with byte_fallback and a "▁" normalizer):
//     llama.cpp's llm_tokenizer_spm (src/llama-vocab.cpp): spaces become U+2581 "▁", one "▁" is
//     put in front of the text (add_space_prefix) and after every special token, then adjacent
//     symbols merge, the pair whose concatenation is the highest-scoring token first (GGUF
//     scores), or the pair earliest in the merge list (tokenizer.json; a GGUF whose scores
//     are -rank tokenizes the same); leftmost on ties. A character no token covers becomes
//     its bytes' <0xXX> tokens when the vocabulary has them, else the unknown token.
// Special tokens: with parseSpecial, control tokens and the unknown token ("<unk>", GGUF type 2)
// written in the text become their ids; user-defined tokens (GGUF type 4, tokenizer.json added
// tokens with "special": false) always do, as in llama.cpp (tokenizer_st_partition) and HF
// tokenizers. Matching is leftmost, longest first. Nothing here fails on any input text or id;
// loading fails with a wb::BadData whose message starts with the file's name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "model/files/gguf.h"

namespace wb::tokenizer {

enum class TokenizerKind { kSentencePiece /* GGUF "llama" */, kByteLevelBpe /* GGUF "gpt2" */ };

// GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct Vocabulary;  // vocabulary.h

// The tokenizer.ggml.* keys that describe a tokenizer in a GGUF file, as llama.cpp's
// llama_vocab::impl::load reads them (ggml's docs/gguf.md, "Tokenizer"): what `convert` writes.
struct GgufTokenizerKeys {
  std::string model;                  // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2"
  std::string pre;                    // tokenizer.ggml.pre: llama.cpp's pre-tokenizer name
  std::vector<std::string> tokens;    // every id in order
  std::vector<float> scores;          // "llama" only
  std::vector<int32_t> tokenTypes;    // TokenType values
  std::vector<std::string> merges;    // "gpt2" only: "left right", in rank order
  std::optional<int32_t> bos, eos, unk, pad;
  bool addBos = false;
  bool addEos = false;
  bool addSpacePrefix = true;         // "llama" only
  std::string chatTemplate;           // "" when none
  // What the GGUF cannot hold but the tokenizer.json has (NFC: GGUF has no normalizer key, and
  // llama.cpp applies none): one sentence each, for the user.
  std::vector<std::string> notes;
};

class Tokenizer {
 public:
  static Expected<Tokenizer> FromGguf(const GgufFile& file);
  // tokenizer.json, and tokenizer_config.json when present (add_bos_token, add_eos_token,
  // bos_token, eos_token, chat_template; chat_template.jinja when the config has none).
  static Expected<Tokenizer> FromHfFolder(const std::string& folder);
  // A path ending in .gguf: FromGguf; a folder: FromHfFolder.
  static Expected<Tokenizer> Open(const std::string& modelPath);

  // addSpecial: BOS (and EOS) as the model's add_bos/add_eos say; parseSpecial: control
  // tokens written in the text ("<|im_start|>"), and the unknown token, become their ids
  // instead of being split.
  std::vector<int32_t> Encode(std::string_view text, bool addSpecial, bool parseSpecial) const;
  // Concatenated pieces; SentencePiece's leading space from the dummy prefix removed from the
  // first token (as llama.cpp's llama_vocab::impl::detokenize and HF's Metaspace decoder do);
  // skipSpecial drops control tokens and the unknown token. Out-of-range ids add nothing.
  std::string Decode(std::span<const int32_t> ids, bool skipSpecial = false) const;
  // The bytes one token adds in the middle of a text (for streaming; may be part of a UTF-8
  // character); control and user-defined tokens give their text; "" for an id out of range.
  std::string Piece(int32_t id) const;

  int32_t VocabSize() const;
  std::optional<int32_t> Bos() const;
  std::optional<int32_t> Eos() const;
  bool AddsBos() const;
  bool AddsEos() const;
  // EOS, GGUF's eot/eom ids, and end-of-turn tokens present in the vocabulary (<|eot_id|>,
  // <|im_end|>, <end_of_turn>, <|end|>, <|endoftext|>, </s>, <|eom_id|>).
  bool IsEndOfGeneration(int32_t id) const;
  const std::string& ChatTemplate() const;  // "" when the file has none
  TokenizerKind kind() const;
  // "gpt-2", "llama3", "qwen2", "smollm", "default" (byte-level BPE); "" for SentencePiece.
  const std::string& preTokenizer() const;

  // The token's text as stored in the vocabulary ("▁the", "Ġthe", "<0x0A>"); "" out of range.
  const std::string& TokenText(int32_t id) const;
  TokenType Type(int32_t id) const;  // kUndefined out of range

  // The keys of a GGUF that tokenizes as this tokenizer does (gguf_export.cc). Fails (wb::BadData
  // naming the file) where GGUF and llama.cpp cannot say it: a normalizer other than NFC, a
  // split and ignore_merges that no llama.cpp pre-tokenizer name has, an id without a token.
  Expected<GgufTokenizerKeys> GgufKeys() const;
  // tokenizer.json's normalizer steps ("NFC", ...), "" when none (or a GGUF).
  const std::string& Normalizers() const;

  explicit Tokenizer(std::shared_ptr<const Vocabulary> vocabulary);

 private:
  std::shared_ptr<const Vocabulary> v_;
};

}  // namespace wb::tokenizer
