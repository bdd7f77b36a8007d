// The same tokenizer as a GGUF and as a tokenizer.json folder gives the same ids, for both
// kinds and every byte-level pre-tokenizer; Open picks the reader by the path.
#include <doctest/doctest.h>

#include "tokenizer_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_forms_agree {

using namespace tokfx;
using Ids = std::vector<int32_t>;

namespace {

std::vector<std::string> Texts() {
  std::vector<std::string> texts = AwkwardTexts();
  for (const char* t : {"hello world", "ell lll el", " hello  world ", "123 1234 12 world's", "'S 'LL hello",
                        "hello<unk> world</s>"}) {
    texts.push_back(t);
  }
  return texts;
}

void CheckAgree(const Tokenizer& a, const Tokenizer& b) {
  CHECK(a.kind() == b.kind());
  CHECK(a.VocabSize() == b.VocabSize());
  CHECK(a.preTokenizer() == b.preTokenizer());
  for (const std::string& text : Texts()) {
    CAPTURE(text);
    for (bool parse : {false, true}) {
      const Ids ids = a.Encode(text, false, parse);
      CHECK(ids == b.Encode(text, false, parse));
      CHECK(a.Decode(ids) == b.Decode(ids));
    }
  }
}

}  // namespace

TEST_CASE("byte-level BPE: GGUF and tokenizer.json agree") {
  TempDir dir;
  const std::pair<const char*, const char*> names[] = {
      {"gpt-2", "gpt-2"}, {"llama-bpe", "llama3"}, {"qwen2", "qwen2"}, {"smollm", "smollm"}};
  for (auto [gguf, hf] : names) {
    CAPTURE(gguf);
    auto fromGguf = Tokenizer::Open(WriteGguf(dir.path() / (std::string(gguf) + ".gguf"), ByteLevelGguf(gguf)));
    auto fromHf = Tokenizer::Open(WriteHfFolder(dir.path() / hf, ByteLevelJson(hf)));
    REQUIRE_MESSAGE(fromGguf.ok(), (fromGguf.ok() ? "" : fromGguf.error().message));
    REQUIRE_MESSAGE(fromHf.ok(), (fromHf.ok() ? "" : fromHf.error().message));
    CHECK(fromHf->preTokenizer() == hf);
    CheckAgree(*fromGguf, *fromHf);
  }
}

TEST_CASE("SentencePiece: GGUF scores of -rank agree with tokenizer.json merges") {
  TempDir dir;
  const SentencePieceVocab v = MakeSentencePieceVocab();
  auto fromGguf = Tokenizer::Open(WriteGguf(dir.path() / "spm.gguf", SentencePieceGguf(v)));
  auto fromHf = Tokenizer::Open(WriteHfFolder(dir.path() / "spm", SentencePieceJson(v), SentencePieceConfig()));
  REQUIRE_MESSAGE(fromGguf.ok(), (fromGguf.ok() ? "" : fromGguf.error().message));
  REQUIRE_MESSAGE(fromHf.ok(), (fromHf.ok() ? "" : fromHf.error().message));
  CheckAgree(*fromGguf, *fromHf);
  CHECK(fromHf->Encode("hello", false, false) == Ids{IdIn(v.tokens, "▁hello")});
  CHECK(fromHf->Bos() == 1);
  CHECK(fromHf->Eos() == 2);
  CHECK(fromHf->AddsBos() == fromGguf->AddsBos());
  CHECK(fromHf->Encode("hello", true, false) == fromGguf->Encode("hello", true, false));
  CHECK(fromHf->ChatTemplate() == "{{ messages }}");
}

TEST_CASE("tokenizer_config.json: token objects, add flags, named chat templates") {
  TempDir dir;
  nlohmann::json config = {{"bos_token", {{"content", "<|im_start|>"}}}, {"eos_token", "<|im_end|>"},
                           {"add_bos_token", true},
                           {"chat_template", nlohmann::json::array({{{"name", "tool_use"}, {"template", "T"}},
                                                                    {{"name", "default"}, {"template", "D"}}})}};
  auto t = Tokenizer::FromHfFolder(WriteHfFolder(dir.path() / "qwen", ByteLevelJson("qwen2"), config));
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
  CHECK(t->Bos() == ByteLevelId("<|im_start|>"));
  CHECK(t->Eos() == ByteLevelId("<|im_end|>"));
  CHECK(t->AddsBos());
  CHECK(!t->AddsEos());
  CHECK(t->ChatTemplate() == "D");
  CHECK(t->Encode("hello", true, false) == Ids{ByteLevelId("<|im_start|>"), ByteLevelId("hello")});
  CHECK(t->IsEndOfGeneration(ByteLevelId("<|im_end|>")));
}

}  // namespace test_forms_agree
