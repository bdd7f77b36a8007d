// Encoding and decoding; the loaders are gguf_tokenizer.cc and hf_tokenizer.cc.
#include "model/tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <queue>

#include <fmt/format.h>

#include "model/tokenizer/unicode_text.h"
#include "model/tokenizer/vocabulary.h"

namespace wb::tokenizer {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's space

// One symbol of a word being merged: a span of the word and its token (-1: none yet).
struct Symbol {
  uint32_t begin = 0;
  uint32_t length = 0;
  int32_t id = -1;
  int32_t prev = -1;
  int32_t next = -1;
};

// A candidate merge of symbols[left] and its right neighbour. Higher priority first, then the
// leftmost: llama.cpp's llm_bigram_spm and llm_bigram_bpe order their queues the same way.
struct Candidate {
  double priority = 0;
  int32_t left = 0;
  int32_t right = 0;
  uint32_t leftLength = 0;  // the spans it was made from, to see whether it is stale
  uint32_t rightLength = 0;
  int32_t result = 0;
  bool operator<(const Candidate& o) const {
    return priority != o.priority ? priority < o.priority : left > o.left;
  }
};

bool MergeableInScores(TokenType t) {
  // Whole special tokens are matched before merging, and <0xXX> and the unknown token are
  // written only by byte fallback (SentencePiece's own rule: only normal pieces are merged).
  return t != TokenType::kControl && t != TokenType::kByte && t != TokenType::kUnknown;
}

uint64_t PairKey(int32_t l, int32_t r) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
}

// Merges the symbols of `word` until no candidate is left; returns the symbols in order.
// `candidate(left, right, out)` says whether two adjacent symbols may merge, and into what.
template <typename CandidateFn>
std::vector<Symbol> MergeSymbols(std::vector<Symbol> symbols, CandidateFn candidate) {
  std::priority_queue<Candidate> queue;
  const auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    Candidate c;
    if (candidate(symbols[l], symbols[r], c)) {
      c.left = l, c.right = r, c.leftLength = symbols[l].length, c.rightLength = symbols[r].length;
      queue.push(c);
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i, i + 1);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = symbols[c.left];
    Symbol& r = symbols[c.right];
    if (l.length != c.leftLength || r.length != c.rightLength || l.next != c.right || r.length == 0) continue;
    l.length += r.length;
    l.id = c.result;
    l.next = r.next;
    r.length = 0;
    if (r.next >= 0) symbols[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }
  std::vector<Symbol> out;
  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i]);
  return out;
}

void LinkSymbols(std::vector<Symbol>& symbols) {
  for (size_t i = 0; i < symbols.size(); ++i) {
    symbols[i].prev = static_cast<int32_t>(i) - 1;
    symbols[i].next = i + 1 < symbols.size() ? static_cast<int32_t>(i + 1) : -1;
  }
}

// Byte-level BPE of one pre-tokenized piece (GPT-2's encoder.py bpe(), with llama.cpp's
// llm_tokenizer_bpe_session queue): one symbol per byte, merges by rank.
// A merge by its rank in the merge list (lower rank first): byte-level BPE, and SentencePiece
// from a tokenizer.json, which lists merges instead of scores.
bool MergeByRank(const Vocabulary& v, const Symbol& l, const Symbol& r, Candidate& c) {
  if (l.id < 0 || r.id < 0) return false;
  auto it = v.merges.find(PairKey(l.id, r.id));
  if (it == v.merges.end()) return false;
  c.priority = -static_cast<double>(it->second.rank);
  c.result = it->second.id;
  return true;
}

void EncodeBytePiece(const Vocabulary& v, std::string_view piece, std::vector<int32_t>& out) {
  if (v.ignoreMerges) {  // llama.cpp's ignore_merges (Llama 3): a piece that is a token stays whole
    std::string mapped;
    for (char c : piece) mapped += ByteToUnicode(static_cast<uint8_t>(c));
    if (auto id = v.Find(mapped)) {
      out.push_back(*id);
      return;
    }
  }
  std::vector<Symbol> symbols(piece.size());
  for (size_t i = 0; i < piece.size(); ++i) {
    symbols[i].begin = static_cast<uint32_t>(i);
    symbols[i].length = 1;
    symbols[i].id = v.byteTokens[static_cast<uint8_t>(piece[i])];
  }
  LinkSymbols(symbols);
  const auto byRank = [&v](const Symbol& l, const Symbol& r, Candidate& c) { return MergeByRank(v, l, r, c); };
  for (const Symbol& s : MergeSymbols(std::move(symbols), byRank)) {
    if (s.id >= 0) {
      out.push_back(s.id);
    } else if (v.unk) {  // a byte the vocabulary lacks
      out.push_back(*v.unk);
    }
  }
}

// llama.cpp's llm_tokenizer_spm_session::tokenize on an already escaped text.
void EncodeSentencePiece(const Vocabulary& v, std::string_view text, std::vector<int32_t>& out) {
  std::vector<Symbol> symbols;
  for (size_t offset = 0; offset < text.size();) {
    const size_t length = Utf8CharLength(text, offset);
    Symbol s;
    s.begin = static_cast<uint32_t>(offset);
    s.length = static_cast<uint32_t>(length);
    if (auto id = v.Find(text.substr(offset, length)); id && v.types[*id] != TokenType::kControl) s.id = *id;
    symbols.push_back(s);
    offset += length;
  }
  LinkSymbols(symbols);
  const bool byScore = !v.scores.empty();
  const auto candidate = [&](const Symbol& l, const Symbol& r, Candidate& c) {
    if (byScore) {
      auto id = v.Find(text.substr(l.begin, l.length + r.length));
      if (!id || !MergeableInScores(v.types[*id])) return false;
      c.priority = v.scores[*id];
      c.result = *id;
      return true;
    }
    return MergeByRank(v, l, r, c);
  };
  for (const Symbol& s : MergeSymbols(std::move(symbols), candidate)) {
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    // Byte fallback (llama.cpp's resegment; HF's BPE byte_fallback), else the unknown token.
    const std::string_view bytes = text.substr(s.begin, s.length);
    const bool allBytes = std::all_of(bytes.begin(), bytes.end(),
                                      [&](char b) { return v.byteTokens[static_cast<uint8_t>(b)] >= 0; });
    if (allBytes) {
      for (char b : bytes) out.push_back(v.byteTokens[static_cast<uint8_t>(b)]);
    } else if (v.unk) {
      out.push_back(*v.unk);
    }
  }
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const Vocabulary> vocabulary) : v_(std::move(vocabulary)) {}

Expected<Tokenizer> Tokenizer::Open(const std::string& modelPath) {
  std::error_code ec;
  if (modelPath.size() >= 5 && modelPath.substr(modelPath.size() - 5) == ".gguf") {
    auto file = GgufFile::Open(modelPath);
    if (!file.ok()) return file.error();
    return FromGguf(*file);
  }
  if (std::filesystem::is_directory(modelPath, ec)) return FromHfFolder(modelPath);
  return BadUsage(fmt::format("{}: neither a .gguf file nor a folder with tokenizer.json", modelPath));
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool addSpecial, bool parseSpecial) const {
  const Vocabulary& v = *v_;
  std::vector<int32_t> out;
  if (addSpecial && v.addBos && v.bos) out.push_back(*v.bos);

  bool afterSpecial = true;  // llama.cpp: the space prefix goes at the start and after each special token
  const auto encodeText = [&](std::string_view raw) {
    // HF tokenizers normalizes each text between added tokens (AddedVocabulary's split).
    const std::string normalized = v.normalizers.empty() ? std::string() : ApplyNormalizers(v.normalizers, raw);
    const std::string_view fragment = v.normalizers.empty() ? raw : std::string_view(normalized);
    if (fragment.empty()) return;
    if (v.kind == TokenizerKind::kByteLevelBpe) {
      for (std::string_view piece : PreTokenize(v.pre, fragment)) EncodeBytePiece(v, piece, out);
    } else {
      std::string escaped;
      escaped.reserve(fragment.size() * 3 + 3);
      if (v.addSpacePrefix && afterSpecial) escaped += kSpaceMark;
      for (char c : fragment) {
        if (c == ' ') escaped += kSpaceMark;
        else escaped += c;
      }
      EncodeSentencePiece(v, escaped, out);
    }
    afterSpecial = false;
  };

  // Special tokens, leftmost and longest first (HF's AddedVocabulary split; llama.cpp's
  // tokenizer_st_partition). Control tokens and the unknown token only when asked (llama.cpp
  // skips LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNKNOWN unless parse_special); user-defined
  // ones always.
  size_t fragmentStart = 0;
  for (size_t i = 0; i < text.size();) {
    int32_t found = -1;
    for (int32_t id : v.specialsByFirstByte[static_cast<uint8_t>(text[i])]) {
      if (!parseSpecial && v.types[id] != TokenType::kUserDefined) continue;
      const std::string& t = v.tokens[id];
      if (text.compare(i, t.size(), t) == 0) {
        found = id;
        break;
      }
    }
    if (found < 0) {
      ++i;
      continue;
    }
    encodeText(text.substr(fragmentStart, i - fragmentStart));
    out.push_back(found);
    afterSpecial = true;
    i += v.tokens[found].size();
    fragmentStart = i;
  }
  encodeText(text.substr(fragmentStart));

  if (addSpecial && v.addEos && v.eos) out.push_back(*v.eos);
  return out;
}

std::string Tokenizer::Piece(int32_t id) const {
  const Vocabulary& v = *v_;
  if (id < 0 || id >= VocabSize()) return "";
  const std::string& text = v.tokens[id];
  const TokenType type = v.types[id];
  if (type == TokenType::kByte) {
    if (int b = ByteOfByteToken(text); b >= 0) return std::string(1, static_cast<char>(b));
  }
  if (type == TokenType::kControl || type == TokenType::kUserDefined || type == TokenType::kUnknown) return text;
  std::string out;
  if (v.kind == TokenizerKind::kSentencePiece) {
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
        out += ' ';
        i += kSpaceMark.size();
      } else {
        out += text[i++];
      }
    }
    return out;
  }
  for (const TextChar& c : DecodeUtf8Lenient(text)) {
    const int b = c.codePoint == kInvalidCodePoint ? -1 : UnicodeToByte(c.codePoint);
    if (b >= 0) out += static_cast<char>(b);
    else out.append(text, c.offset, c.length);  // not GPT-2's alphabet: kept as written
  }
  return out;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool skipSpecial) const {
  const Vocabulary& v = *v_;
  std::string out;
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || id >= VocabSize()) continue;
    const TokenType type = v.types[id];
    // llama.cpp's token_to_piece drops both kinds unless asked for special tokens (its
    // attr_special is LLAMA_TOKEN_ATTR_UNKNOWN | LLAMA_TOKEN_ATTR_CONTROL), and HF's
    // skip_special_tokens drops "<unk>" with the other special tokens.
    if (skipSpecial && (type == TokenType::kControl || type == TokenType::kUnknown)) continue;
    std::string piece = Piece(id);
    const bool normal = type == TokenType::kNormal || type == TokenType::kUndefined || type == TokenType::kUnused;
    if (first && normal && v.kind == TokenizerKind::kSentencePiece && v.addSpacePrefix && !piece.empty() &&
        piece[0] == ' ') {
      piece.erase(0, 1);
    }
    first = false;
    out += piece;
  }
  return out;
}

int32_t Tokenizer::VocabSize() const { return static_cast<int32_t>(v_->tokens.size()); }
std::optional<int32_t> Tokenizer::Bos() const { return v_->bos; }
std::optional<int32_t> Tokenizer::Eos() const { return v_->eos; }
bool Tokenizer::AddsBos() const { return v_->addBos && v_->bos.has_value(); }
bool Tokenizer::AddsEos() const { return v_->addEos && v_->eos.has_value(); }
bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  return std::binary_search(v_->endOfGeneration.begin(), v_->endOfGeneration.end(), id);
}
const std::string& Tokenizer::ChatTemplate() const { return v_->chatTemplate; }
TokenizerKind Tokenizer::kind() const { return v_->kind; }
const std::string& Tokenizer::preTokenizer() const { return v_->preName; }
const std::string& Tokenizer::Normalizers() const { return v_->normalizerText; }

const std::string& Tokenizer::TokenText(int32_t id) const {
  static const std::string kEmpty;
  return id < 0 || id >= VocabSize() ? kEmpty : v_->tokens[id];
}
TokenType Tokenizer::Type(int32_t id) const {
  return id < 0 || id >= VocabSize() ? TokenType::kUndefined : v_->types[id];
}

}  // namespace wb::tokenizer
