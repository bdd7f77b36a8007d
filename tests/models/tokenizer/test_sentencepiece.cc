// SentencePiece (llama.cpp's llm_tokenizer_spm) on a hand-made vocabulary: score order, the
// dummy prefix, byte fallback, the unknown token, BOS/EOS, special tokens.
#include <doctest/doctest.h>

#include "tokenizer_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_sentencepiece {

using namespace tokfx;
using Ids = std::vector<int32_t>;

namespace {

Tokenizer Load(const TempDir& dir, const SentencePieceVocab& v,
               std::function<void(ref::fixtures::GgufWriter&)> more = {}) {
  auto w = SentencePieceGguf(v);
  if (more) more(w);
  auto t = Tokenizer::FromGguf(*wb::GgufFile::Open(WriteGguf(dir.path() / "spm.gguf", w)));
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
  return *t;
}

}  // namespace

TEST_CASE("the highest-scoring pair merges first") {
  TempDir dir;
  const SentencePieceVocab v = MakeSentencePieceVocab();
  const auto id = [&](const std::string& s) { return IdIn(v.tokens, s); };
  const Tokenizer t = Load(dir, v);
  CHECK(t.kind() == wb::tokenizer::TokenizerKind::kSentencePiece);
  CHECK(t.preTokenizer() == "");
  // "▁hello": he (-1), ll (-2), hell (-3), hello (-4), ▁hello (-5).
  CHECK(t.Encode("hello", false, false) == Ids{id("▁hello")});
  CHECK(t.Encode("hello world", false, false) == Ids{id("▁hello"), id("▁world")});
  // "▁ell": ll (-2) beats el (-10).
  CHECK(t.Encode("ell", false, false) == Ids{id("▁"), id("e"), id("ll")});

  // The same letters with "el" scored above "ll": now "el" forms first.
  SentencePieceVocab flipped = v;
  flipped.scores[id("el")] = 5;
  CHECK(Load(dir, flipped).Encode("ell", false, false) == Ids{id("▁"), id("el"), id("l")});
  // Equal scores: the leftmost pair.
  SentencePieceVocab tied = v;
  tied.scores[id("el")] = tied.scores[id("ll")];
  CHECK(Load(dir, tied).Encode("ell", false, false) == Ids{id("▁"), id("el"), id("l")});
}

TEST_CASE("byte fallback, else the unknown token") {
  TempDir dir;
  const SentencePieceVocab v = MakeSentencePieceVocab();
  const auto id = [&](const std::string& s) { return IdIn(v.tokens, s); };
  const Tokenizer t = Load(dir, v);
  // 'i' is not in the vocabulary: its byte token. "é" is, as one character.
  CHECK(t.Encode("hi", false, false) == Ids{id("▁"), id("h"), id("<0x69>")});
  CHECK(t.Encode("é", false, false) == Ids{id("▁"), id("é")});
  CHECK(t.Encode("ü", false, false) == Ids{id("▁"), id("<0xC3>"), id("<0xBC>")});
  CHECK(t.Encode("\xff", false, false) == Ids{id("▁"), id("<0xFF>")});
  CHECK(t.Decode(t.Encode("hi ü", false, false)) == "hi ü");

  const SentencePieceVocab noBytes = MakeSentencePieceVocab(/*byteTokens=*/false);
  const auto nid = [&](const std::string& s) { return IdIn(noBytes.tokens, s); };
  CHECK(Load(dir, noBytes).Encode("hi", false, false) == Ids{nid("▁"), nid("h"), 0});
}

TEST_CASE("the dummy prefix: added when encoding, removed from the first token when decoding") {
  TempDir dir;
  const SentencePieceVocab v = MakeSentencePieceVocab();
  const auto id = [&](const std::string& s) { return IdIn(v.tokens, s); };
  const Tokenizer t = Load(dir, v);
  CHECK(t.Decode(Ids{id("▁hello"), id("▁world")}) == "hello world");
  CHECK(t.Piece(id("▁hello")) == " hello");  // in the middle of a text the space stays
  CHECK(t.Decode(Ids{id("▁world")}) == "world");
  CHECK(t.Decode(Ids{1, id("▁hello")}) == "<s> hello");  // after a kept BOS, not the first token
  CHECK(t.Decode(Ids{1, id("▁hello")}, /*skipSpecial=*/true) == "hello");
  const Tokenizer noPrefix = Load(dir, v, [](ref::fixtures::GgufWriter& w) {
    w.AddBool("tokenizer.ggml.add_space_prefix", false);
  });
  CHECK(noPrefix.Encode("hello", false, false) == Ids{id("hello")});
  CHECK(noPrefix.Decode(Ids{id("▁hello")}) == " hello");
}

TEST_CASE("round trips on awkward text") {
  TempDir dir;
  const Tokenizer t = Load(dir, MakeSentencePieceVocab());
  for (const std::string& text : AwkwardTexts()) {
    CAPTURE(text);
    CHECK(t.Decode(t.Encode(text, false, false)) == text);
    CHECK(t.Decode(t.Encode(text, true, false), /*skipSpecial=*/true) == text);
  }
}

TEST_CASE("BOS by default, EOS when the file says; special tokens when parsed") {
  TempDir dir;
  const SentencePieceVocab v = MakeSentencePieceVocab();
  const auto id = [&](const std::string& s) { return IdIn(v.tokens, s); };
  const Tokenizer t = Load(dir, v);
  CHECK(t.AddsBos());
  CHECK(!t.AddsEos());
  CHECK(t.Bos() == 1);
  CHECK(t.Eos() == 2);
  CHECK(t.Encode("hello", true, false) == Ids{1, id("▁hello")});
  CHECK(t.Encode("", true, false) == Ids{1});
  const Tokenizer eos = Load(dir, v, [](ref::fixtures::GgufWriter& w) {
    w.AddBool("tokenizer.ggml.add_eos_token", true);
    w.AddString("tokenizer.chat_template", "{{ bos_token }}");
  });
  CHECK(eos.Encode("hello", true, false) == Ids{1, id("▁hello"), 2});
  CHECK(eos.ChatTemplate() == "{{ bos_token }}");
  CHECK(t.ChatTemplate() == "");
  // Parsed, the control token is one id and the text after it gets its own "▁" (llama.cpp).
  CHECK(t.Encode("<|user|>hello", false, true) == Ids{id("<|user|>"), id("▁hello")});
  const Ids unparsed = t.Encode("<|user|>", false, false);
  CHECK(unparsed.front() == id("▁"));
  CHECK(unparsed[1] == id("<"));
  CHECK(t.IsEndOfGeneration(2));
  CHECK(!t.IsEndOfGeneration(1));
}

TEST_CASE("the unknown token is special: parsed only when asked, dropped by skipSpecial") {
  TempDir dir;
  const SentencePieceVocab v = MakeSentencePieceVocab();
  const auto id = [&](const std::string& s) { return IdIn(v.tokens, s); };
  const Tokenizer t = Load(dir, v);
  // GGUF type 2 (unknown): llama.cpp's tokenizer_st_partition matches it as it matches control
  // tokens, and a tokenizer.json has "<unk>" as an added token with "special": true. The text
  // after it gets its own "▁", as after any special token.
  CHECK(t.Encode("hello<unk>world", false, true) == Ids{id("▁hello"), 0, id("▁world")});
  const Ids unparsed = t.Encode("<unk>", false, false);
  REQUIRE(unparsed.size() >= 2);
  CHECK(unparsed.front() == id("▁"));
  CHECK(unparsed[1] == id("<"));
  const Ids ids = {id("▁hello"), 0, id("▁world")};
  CHECK(t.Decode(ids) == "hello<unk> world");
  CHECK(t.Decode(ids, /*skipSpecial=*/true) == "hello world");
}

}  // namespace test_sentencepiece
