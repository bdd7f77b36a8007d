// Byte-level BPE on a hand-made vocabulary (tokenizer_test_support.h): merge order, round
// trips, special tokens, BOS/EOS.
#include <doctest/doctest.h>

#include "tokenizer_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_byte_level_bpe {

using namespace tokfx;
using Ids = std::vector<int32_t>;

namespace {

Tokenizer Load(const TempDir& dir, const std::string& pre, std::function<void(ref::fixtures::GgufWriter&)> more = {}) {
  auto w = ByteLevelGguf(pre);
  if (more) more(w);
  auto t = Tokenizer::Open(WriteGguf(dir.path() / "bpe.gguf", w));
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
  return *t;
}

int32_t Id(const std::string& text) { return ByteLevelId(text); }

}  // namespace

TEST_CASE("merges apply lowest rank first, leftmost on ties") {
  TempDir dir;
  const Tokenizer t = Load(dir, "gpt-2");
  CHECK(t.kind() == wb::tokenizer::TokenizerKind::kByteLevelBpe);
  CHECK(t.preTokenizer() == "gpt-2");
  CHECK(t.Encode("hello", false, false) == Ids{Id("hello")});
  CHECK(t.Encode("hello world", false, false) == Ids{Id("hello"), Id("Ġworld")});
  // "ell": (l,l) has rank 1, (e,l) rank 9, so "ll" forms first and "el" never can.
  CHECK(t.Encode("ell", false, false) == Ids{Id("e"), Id("ll")});
  // "lll": two (l,l) candidates of one rank; the left one wins.
  CHECK(t.Encode("lll", false, false) == Ids{Id("ll"), Id("l")});
  // "el" alone does merge (rank 9 is the only candidate).
  CHECK(t.Encode("el", false, false) == Ids{Id("el")});
  // Merges never cross pieces: " 123" is one GPT-2 piece but "Ġ1" is no merge.
  CHECK(t.Encode(" 123", false, false) == Ids{Id("Ġ"), Id("123")});
  // Bytes map through GPT-2's table: "é" is two byte tokens, ids = byte values here.
  CHECK(t.Encode("é", false, false) == Ids{0xC3, 0xA9});
}

TEST_CASE("the pre-tokenizer decides what can merge") {
  TempDir dir;
  // Llama 3: "1234" is "123" + "4"; Qwen2 and SmolLM split every digit, so "12" never forms.
  CHECK(Load(dir, "llama-bpe").Encode("1234", false, false) == Ids{Id("123"), Id("4")});
  CHECK(Load(dir, "qwen2").Encode("123", false, false) == Ids{Id("1"), Id("2"), Id("3")});
  CHECK(Load(dir, "smollm").Encode("123", false, false) == Ids{Id("1"), Id("2"), Id("3")});
  CHECK(Load(dir, "gpt-2").Encode("123", false, false) == Ids{Id("123")});
  // Two spaces before a word: GPT-2 gives " " then " w..."; "ĠĠ" cannot form across pieces.
  CHECK(Load(dir, "gpt-2").Encode("  world", false, false) == Ids{Id("Ġ"), Id("Ġworld")});
  CHECK(Load(dir, "gpt-2").Encode("   ", false, false) == Ids{Id("ĠĠ"), Id("Ġ")});
}

TEST_CASE("round trips on awkward text under every pre-tokenizer") {
  TempDir dir;
  for (const char* pre : {"gpt-2", "llama-bpe", "qwen2", "smollm", "default"}) {
    const Tokenizer t = Load(dir, pre);
    for (const std::string& text : AwkwardTexts()) {
      CAPTURE(pre);
      CAPTURE(text);
      const Ids ids = t.Encode(text, false, false);
      CHECK(t.Decode(ids) == text);
      std::string streamed;
      for (int32_t id : ids) streamed += t.Piece(id);
      CHECK(streamed == text);
    }
  }
}

TEST_CASE("special tokens: control ones only when parsed, user-defined ones always") {
  TempDir dir;
  const Tokenizer t = Load(dir, "qwen2");
  const std::string text = "<|im_start|>hello<|im_end|>";
  CHECK(t.Encode(text, false, true) == Ids{Id("<|im_start|>"), Id("hello"), Id("<|im_end|>")});
  const Ids plain = t.Encode(text, false, false);
  CHECK(std::find(plain.begin(), plain.end(), Id("<|im_start|>")) == plain.end());
  CHECK(plain.size() > 5);
  CHECK(t.Decode(plain) == text);
  CHECK(t.Encode("a<tool>b", false, false) == Ids{Id("a"), Id("<tool>"), Id("b")});
  // Decode: control tokens kept or skipped, user-defined ones always written.
  const Ids ids = t.Encode(text + "<tool>", false, true);
  CHECK(t.Decode(ids) == text + "<tool>");
  CHECK(t.Decode(ids, /*skipSpecial=*/true) == "hello<tool>");
}

TEST_CASE("BOS and EOS follow the file's flags; end of generation") {
  TempDir dir;
  const Tokenizer plain = Load(dir, "gpt-2");
  CHECK(!plain.AddsBos());
  CHECK(plain.Encode("hello", true, false) == Ids{Id("hello")});
  const Tokenizer both = Load(dir, "gpt-2", [](ref::fixtures::GgufWriter& w) {
    w.AddU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(Id("<|im_start|>")));
    w.AddBool("tokenizer.ggml.add_bos_token", true);
    w.AddBool("tokenizer.ggml.add_eos_token", true);
  });
  CHECK(both.AddsBos());
  CHECK(both.AddsEos());
  CHECK(both.Encode("hello", true, false) == Ids{Id("<|im_start|>"), Id("hello"), Id("<|endoftext|>")});
  CHECK(both.Encode("hello", false, false) == Ids{Id("hello")});
  // Llama 3's name turns BOS on by default in llama.cpp, when there is a BOS.
  const Tokenizer llama3 = Load(dir, "llama-bpe", [](ref::fixtures::GgufWriter& w) {
    w.AddU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(Id("<|im_start|>")));
  });
  CHECK(llama3.AddsBos());
  CHECK(plain.IsEndOfGeneration(Id("<|endoftext|>")));
  CHECK(plain.IsEndOfGeneration(Id("<|im_end|>")));
  CHECK(!plain.IsEndOfGeneration(Id("<|im_start|>")));
  CHECK(!plain.IsEndOfGeneration(Id("hello")));
}

TEST_CASE("out-of-range ids decode to nothing") {
  TempDir dir;
  const Tokenizer t = Load(dir, "gpt-2");
  CHECK(t.Piece(-1) == "");
  CHECK(t.Piece(t.VocabSize()) == "");
  const Ids ids = {-5, Id("hello"), 1 << 30, t.VocabSize()};
  CHECK(t.Decode(ids) == "hello");
}

}  // namespace test_byte_level_bpe
