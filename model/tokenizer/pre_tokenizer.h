// The pre-tokenizers of byte-level BPE: the split of a text into pieces before merges run.
//
// Contract: Split returns consecutive, non-empty views into `text` that together are exactly
// `text` (any bytes, valid UTF-8 or not). Each kind is a chain of patterns, written out by hand
// (no regex library) from the published regular expressions; a pattern's matches and the text
// between them all become pieces ("Isolated" in HF tokenizers' Split, and llama.cpp's
// unicode_regex_split, which applies each pattern of a chain to the previous one's pieces, so
// a lookahead never sees past its piece). Alternatives are tried in order and quantifiers are
// greedy with backtracking, as in both engines.
//   kGpt2    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//            (openai/gpt-2 src/encoder.py)
//   kLlama3  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//             ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+   (Llama 3's tokenizer.json)
//   kQwen2   as kLlama3 with \p{N} for \p{N}{1,3} (Qwen2's tokenizer.json)
//   kQwen35  as kQwen2 with [\p{L}\p{M}]+ for \p{L}+ and [^\s\p{L}\p{M}\p{N}] for
//            [^\s\p{L}\p{N}] (Qwen3.5's tokenizer.json)
//   kTekken  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|
//            [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|
//             ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+   (Mistral Nemo's tokenizer.json;
//            llama.cpp approximates the cased classes for std::regex, this follows the original)
//   kSmolLm  \p{N} (each digit alone: HF's Digits(individual_digits)), then kGpt2
//   kDefault llama.cpp's fallback for a GGUF without a known pre-tokenizer
//            (LLAMA_VOCAB_PRE_TYPE_DEFAULT in src/llama-vocab.cpp): [\p{P}\$\+<=>\^~\|]+,
//            then kGpt2, then \p{N}+, then [0-9][0-9][0-9]
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb::tokenizer {

enum class PreTokenizerKind { kGpt2, kLlama3, kQwen2, kQwen35, kTekken, kSmolLm, kDefault };

// "gpt-2", "llama3", "qwen2", "qwen35", "tekken", "smollm", "default".
const char* PreTokenizerName(PreTokenizerKind kind);

struct GgufPreTokenizer {
  PreTokenizerKind kind = PreTokenizerKind::kDefault;
  bool ignoreMerges = false;  // a piece that is a whole token is taken as it is
  bool addsBos = false;       // llama.cpp's default add_bos for this name
};
// The GGUF tokenizer.ggml.pre names llama.cpp (src/llama-vocab.cpp, llama_vocab::impl::load)
// maps onto these patterns; "" (the key is absent) is "default", as there. nullopt: unknown.
std::optional<GgufPreTokenizer> PreTokenizerFromGgufName(std::string_view name);

// The published Split patterns, for recognising them in a tokenizer.json.
std::string_view Gpt2Pattern();
std::string_view Llama3Pattern();
std::string_view Qwen2Pattern();
std::string_view Qwen35Pattern();
std::string_view TekkenPattern();

std::vector<std::string_view> PreTokenize(PreTokenizerKind kind, std::string_view text);

}  // namespace wb::tokenizer
