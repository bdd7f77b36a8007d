// The workbook's own model's tokenizer (data/models/kjv-llama-2m): its Hugging Face form
// (tokenizer.json, written by training/train_kjv.py) and its GGUF form (the tokenizer.ggml.*
// keys `workbook convert` wrote) are the same tokenizer, and it gives back every text.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "model/files/gguf.h"
#include "model/tokenizer/tokenizer.h"

namespace {

std::string ModelFolder() { return std::string(std::getenv("WB_SOURCE_ROOT")) + "/data/models/kjv-llama-2m"; }

// Awkward texts: whitespace runs, scripts the corpus never saw, emoji, bytes that are not
// UTF-8, digits, contractions, the special token's text.
const std::vector<std::string> kTexts = {
    "In the beginning God created the heaven and the earth.",
    "  two spaces,\ttab,\n\nnewlines   and trailing   ",
    "Καὶ εἶπεν ὁ θεός · И сказал Бог · 神說 · भगवान · قال الله",
    "emoji 👩🏽‍🚀 and 🇬🇧 flags",
    std::string("bytes \xff\xfe not \xc3 UTF-8 \x80"),
    "verses 3:16, 1189 chapters, 31102 verses",
    "don't, I'll, we're, THEY'VE, it's",
    "<|endoftext|> inside text",
    "",
};

}  // namespace

TEST_CASE("the GGUF and Hugging Face forms of the trained tokenizer agree, and round-trip") {
  auto hf = wb::tokenizer::Tokenizer::Open(ModelFolder() + "/hf");
  REQUIRE_MESSAGE(hf.ok(), hf.error().message);
  auto gguf = wb::tokenizer::Tokenizer::Open(ModelFolder() + "/model-q8_0.gguf");
  REQUIRE_MESSAGE(gguf.ok(), gguf.error().message);
  CHECK(hf->VocabSize() == 2048);
  CHECK(gguf->VocabSize() == hf->VocabSize());
  CHECK(gguf->kind() == wb::tokenizer::TokenizerKind::kByteLevelBpe);
  CHECK(gguf->preTokenizer() == "gpt-2");
  CHECK(hf->preTokenizer() == "gpt-2");
  REQUIRE(hf->Bos().has_value());
  CHECK(gguf->Bos() == hf->Bos());
  CHECK(gguf->Eos() == hf->Eos());
  CHECK(hf->AddsBos());
  CHECK(gguf->AddsBos());
  CHECK(hf->IsEndOfGeneration(*hf->Eos()));
  for (int id = 0; id < hf->VocabSize(); ++id) {
    REQUIRE(hf->TokenText(id) == gguf->TokenText(id));
  }
  for (const std::string& text : kTexts) {
    CAPTURE(text);
    const std::vector<int32_t> a = hf->Encode(text, false, false);
    const std::vector<int32_t> b = gguf->Encode(text, false, false);
    CHECK(a == b);
    CHECK(hf->Decode(a) == text);
    CHECK(gguf->Decode(b) == text);
    // BOS first when asked for, and nothing else changes.
    std::vector<int32_t> withBos = hf->Encode(text, true, false);
    REQUIRE(!withBos.empty());
    CHECK(withBos.front() == *hf->Bos());
    withBos.erase(withBos.begin());
    CHECK(withBos == a);
  }
  // The commonest words of the corpus are whole tokens: BPE merged them early.
  CHECK(hf->Encode(" the", false, false).size() == 1);
  CHECK(hf->Encode(" and", false, false).size() == 1);
  // The special token is text unless parsed as special.
  CHECK(hf->Encode("<|endoftext|>", false, true) == std::vector<int32_t>{*hf->Eos()});
  CHECK(hf->Encode("<|endoftext|>", false, false).size() > 1);
}
