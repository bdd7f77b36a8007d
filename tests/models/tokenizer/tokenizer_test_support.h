// Small hand-made tokenizers for the tests, in both file forms: a GGUF written with
// GgufWriter and a folder with tokenizer.json (+ tokenizer_config.json). Nothing here is copied
// from a real model; the vocabularies are a few merges over a handful of letters.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/unicode_text.h"
#include "reference/gen/gguf_writer.h"

namespace tokfx {

namespace fs = std::filesystem;
using wb::tokenizer::Tokenizer;
using wb::tokenizer::TokenType;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "wb-tokenizer-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string WriteGguf(const fs::path& path, const ref::fixtures::GgufWriter& w) {
  (void)ref::fixtures::WriteFileBytes(path.string(), w.Serialize());
  return path.string();
}

struct Merge {
  std::string left, right;
};

// ---- Byte-level BPE: ids 0-255 are the bytes (token text from GPT-2's table), then merges'
// results, then the special tokens.
inline const std::vector<Merge>& ByteLevelMerges() {
  static const std::vector<Merge> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"o", "r"}, {"Ġw", "or"},
      {"l", "d"}, {"Ġwor", "ld"}, {"e", "l"}, {"1", "2"}, {"12", "3"}, {"Ġ", "Ġ"},
  };
  return merges;
}
struct Special {
  std::string text;
  TokenType type;
};
inline const std::vector<Special>& ByteLevelSpecials() {
  static const std::vector<Special> specials = {
      {"<|endoftext|>", TokenType::kControl}, {"<|im_start|>", TokenType::kControl},
      {"<|im_end|>", TokenType::kControl}, {"<tool>", TokenType::kUserDefined},
  };
  return specials;
}
inline std::vector<std::string> ByteLevelTokens() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(wb::tokenizer::ByteToUnicode(static_cast<uint8_t>(b)));
  for (const Merge& m : ByteLevelMerges()) tokens.push_back(m.left + m.right);
  for (const Special& s : ByteLevelSpecials()) tokens.push_back(s.text);
  return tokens;
}
inline int32_t ByteLevelId(const std::string& text) {
  const auto tokens = ByteLevelTokens();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

inline ref::fixtures::GgufWriter ByteLevelGguf(const std::string& pre) {
  ref::fixtures::GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddString("tokenizer.ggml.model", "gpt2");
  if (!pre.empty()) w.AddString("tokenizer.ggml.pre", pre);
  const auto tokens = ByteLevelTokens();
  w.AddStringArray("tokenizer.ggml.tokens", tokens);
  std::vector<int32_t> types(tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  for (size_t i = 0; i < ByteLevelSpecials().size(); ++i) {
    types[tokens.size() - ByteLevelSpecials().size() + i] = static_cast<int32_t>(ByteLevelSpecials()[i].type);
  }
  w.AddI32Array("tokenizer.ggml.token_type", types);
  std::vector<std::string> merges;
  for (const Merge& m : ByteLevelMerges()) merges.push_back(m.left + " " + m.right);
  w.AddStringArray("tokenizer.ggml.merges", merges);
  w.AddU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(ByteLevelId("<|endoftext|>")));
  return w;
}

// The HF twin of ByteLevelGguf with the same pre-tokenizer ("gpt-2", "llama3", "qwen2", "qwen35",
// "tekken", "smollm"): a GGUF "llama-bpe" or "tekken" ignores merges, and so does this file then.
inline nlohmann::json ByteLevelJson(const std::string& pre) {
  using nlohmann::json;
  json vocab = json::object();
  const auto tokens = ByteLevelTokens();
  const size_t plain = tokens.size() - ByteLevelSpecials().size();
  for (size_t i = 0; i < plain; ++i) vocab[tokens[i]] = i;
  json merges = json::array();
  for (const Merge& m : ByteLevelMerges()) merges.push_back(m.left + " " + m.right);
  json added = json::array();
  for (size_t i = 0; i < ByteLevelSpecials().size(); ++i) {
    added.push_back({{"id", plain + i}, {"content", ByteLevelSpecials()[i].text},
                     {"special", ByteLevelSpecials()[i].type == TokenType::kControl}});
  }
  const json byteLevel = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  json preTokenizer;
  if (pre == "gpt-2") {
    preTokenizer = byteLevel;
  } else if (pre == "smollm") {
    preTokenizer = {{"type", "Sequence"},
                    {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", true}}, byteLevel})}};
  } else {
    // The Split patterns as the published tokenizer.json files spell them.
    const std::string pattern =
        pre == "llama3"
            ? R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"
        : pre == "tekken"
            ? R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"
        : pre == "qwen35"
            ? R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"
            : R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    json noRegex = byteLevel;
    noRegex["use_regex"] = false;
    preTokenizer = {{"type", "Sequence"},
                    {"pretokenizers", json::array({{{"type", "Split"}, {"pattern", {{"Regex", pattern}}},
                                                    {"behavior", "Isolated"}, {"invert", false}},
                                                   noRegex})}};
  }
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", preTokenizer},
          {"post_processor", byteLevel},
          {"decoder", byteLevel},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", pre == "llama3" || pre == "tekken"},
                     {"byte_fallback", false}}}};
}

inline std::string WriteHfFolder(const fs::path& folder, const nlohmann::json& tokenizer,
                                 const nlohmann::json& config = nullptr) {
  fs::create_directories(folder);
  WriteText(folder / "tokenizer.json", tokenizer.dump(2));
  if (!config.is_null()) WriteText(folder / "tokenizer_config.json", config.dump(2));
  return folder.string();
}

// ---- SentencePiece: <unk> <s> </s>, the 256 <0xXX> tokens, single characters, then merges'
// results (scored -rank in the GGUF form, so both forms rank merges alike).
inline const std::vector<Merge>& SentencePieceMerges() {
  static const std::vector<Merge> merges = {
      {"▁", "w"}, {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"▁", "hello"},
      {"o", "r"}, {"▁w", "or"}, {"l", "d"}, {"▁wor", "ld"}, {"e", "l"},
  };
  return merges;
}
inline const std::vector<std::string>& SentencePieceChars() {
  static const std::vector<std::string> chars = {"▁", "h", "e", "l", "o", "w", "r", "d", "é", "<"};
  return chars;
}
struct SentencePieceVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
};
inline SentencePieceVocab MakeSentencePieceVocab(bool byteTokens = true) {
  SentencePieceVocab v;
  const auto add = [&](const std::string& t, float score, TokenType type) {
    v.tokens.push_back(t);
    v.scores.push_back(score);
    v.types.push_back(static_cast<int32_t>(type));
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  if (byteTokens) {
    static const char* hex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) add(std::string("<0x") + hex[b / 16] + hex[b % 16] + ">", 0, TokenType::kByte);
  }
  for (const std::string& c : SentencePieceChars()) add(c, 0, TokenType::kNormal);
  for (size_t r = 0; r < SentencePieceMerges().size(); ++r) {
    const Merge& m = SentencePieceMerges()[r];
    add(m.left + m.right, -static_cast<float>(r), TokenType::kNormal);
  }
  add("<|user|>", 0, TokenType::kControl);
  return v;
}
inline int32_t IdIn(const std::vector<std::string>& tokens, const std::string& text) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

inline ref::fixtures::GgufWriter SentencePieceGguf(const SentencePieceVocab& v) {
  ref::fixtures::GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddString("tokenizer.ggml.model", "llama");
  w.AddStringArray("tokenizer.ggml.tokens", v.tokens);
  w.AddF32Array("tokenizer.ggml.scores", v.scores);
  w.AddI32Array("tokenizer.ggml.token_type", v.types);
  w.AddU32("tokenizer.ggml.bos_token_id", 1);
  w.AddU32("tokenizer.ggml.eos_token_id", 2);
  w.AddU32("tokenizer.ggml.unknown_token_id", 0);
  return w;
}

inline nlohmann::json SentencePieceJson(const SentencePieceVocab& v) {
  using nlohmann::json;
  json vocab = json::object();
  json added = json::array();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const auto type = static_cast<TokenType>(v.types[i]);
    if (type == TokenType::kControl || type == TokenType::kUnknown) {
      added.push_back({{"id", i}, {"content", v.tokens[i]}, {"special", true}});
    }
    if (type != TokenType::kControl || i < 3) vocab[v.tokens[i]] = i;
  }
  json merges = json::array();
  for (const Merge& m : SentencePieceMerges()) merges.push_back(json::array({m.left, m.right}));
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", {{"type", "Sequence"},
                          {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "▁"}},
                                                       {{"type", "Replace"}, {"pattern", {{"String", " "}}},
                                                        {"content", "▁"}}})}}},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", {{"type", "Sequence"}, {"decoders", json::array({{{"type", "ByteFallback"}}, {{"type", "Fuse"}}})}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", true},
                     {"unk_token", "<unk>"}, {"fuse_unk", true}}}};
}

inline nlohmann::json SentencePieceConfig() {
  return {{"add_bos_token", true}, {"add_eos_token", false}, {"bos_token", "<s>"},
          {"eos_token", {{"content", "</s>"}, {"lstrip", false}}}, {"chat_template", "{{ messages }}"}};
}

// Texts that every tokenizer must give back unchanged.
inline std::vector<std::string> AwkwardTexts() {
  return {
      "",
      "Hello world's 12345 !!",
      "hello world",
      "  leading and trailing  ",
      "runs  of   spaces\t\ttabs\n\n\nnewlines\r\n \n",
      "Привет, мир! Γειά σου κόσμε. 你好，世界。 नमस्ते दुनिया مرحبا بالعالم",
      "emoji 🙂 👩‍👩‍👧 🇫🇷 ❤️ done",
      std::string("bytes \xff\xfe not \xc3 utf-8 \xe2\x82 end \x80"),
      "digits 0 12 123 1234 3.14159 1000000000000",
      "I'm you're they've he'll we'd it's 'S 'T 'LL DON'T",
      "<|im_start|>user\nhi<|im_end|>",
      std::string("nul \0 inside", 13),
  };
}

}  // namespace tokfx
