// Broken and unsupported files give errors that name the file and what is wrong; nothing
// crashes.
#include <doctest/doctest.h>

#include "tokenizer_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_hostile_files {

using namespace tokfx;

namespace {

// Opens the GGUF and expects an error whose message starts with its path and contains `what`.
void ExpectGgufError(const TempDir& dir, const ref::fixtures::GgufWriter& w, const std::string& what) {
  const std::string path = WriteGguf(dir.path() / "bad.gguf", w);
  auto t = Tokenizer::Open(path);
  REQUIRE(!t.ok());
  CAPTURE(t.error().message);
  CHECK(t.error().kind == wb::ErrorKind::kBadData);
  CHECK(t.error().message.rfind(path + ": ", 0) == 0);
  CHECK(t.error().message.find(what) != std::string::npos);
}

void ExpectHfError(const TempDir& dir, const nlohmann::json& tokenizer, const std::string& what) {
  const std::string folder = WriteHfFolder(dir.path() / "bad", tokenizer);
  auto t = Tokenizer::Open(folder);
  REQUIRE(!t.ok());
  CAPTURE(t.error().message);
  CHECK(t.error().message.rfind((fs::path(folder) / "tokenizer.json").string() + ": ", 0) == 0);
  CHECK(t.error().message.find(what) != std::string::npos);
}

}  // namespace

TEST_CASE("GGUF: missing, unknown and mismatched tokenizer keys") {
  TempDir dir;
  ref::fixtures::GgufWriter none;
  none.AddString("general.architecture", "llama");
  ExpectGgufError(dir, none, "has no tokenizer");
  ref::fixtures::GgufWriter noVocab;
  noVocab.AddString("tokenizer.ggml.model", "no_vocab");
  ExpectGgufError(dir, noVocab, "has no tokenizer (tokenizer.ggml.model is 'no_vocab')");
  ref::fixtures::GgufWriter bert;
  bert.AddString("tokenizer.ggml.model", "bert");
  ExpectGgufError(dir, bert, "'bert'");

  ExpectGgufError(dir, ByteLevelGguf("mystery"), "tokenizer.ggml.pre 'mystery'");

  SentencePieceVocab shortScores = MakeSentencePieceVocab();
  shortScores.scores.pop_back();
  ExpectGgufError(dir, SentencePieceGguf(shortScores), "tokenizer.ggml.scores has");
  SentencePieceVocab badType = MakeSentencePieceVocab();
  badType.types[5] = 9;
  ExpectGgufError(dir, SentencePieceGguf(badType), "tokenizer.ggml.token_type[5] is 9");
  SentencePieceVocab shortTypes = MakeSentencePieceVocab();
  shortTypes.types.resize(3);
  ExpectGgufError(dir, SentencePieceGguf(shortTypes), "tokenizer.ggml.token_type has 3 entries");

  auto bosOut = SentencePieceGguf(MakeSentencePieceVocab());
  bosOut.AddU32("tokenizer.ggml.padding_token_id", 1000000);
  ExpectGgufError(dir, bosOut, "tokenizer.ggml.padding_token_id is 1000000");

  auto wrongType = ByteLevelGguf("gpt-2");
  wrongType.AddU32("tokenizer.ggml.add_bos_token", 1);
  ExpectGgufError(dir, wrongType, "tokenizer.ggml.add_bos_token");
}

TEST_CASE("GGUF: merges that name tokens the vocabulary lacks") {
  TempDir dir;
  ref::fixtures::GgufWriter bad;
  bad.AddString("tokenizer.ggml.model", "gpt2");
  bad.AddString("tokenizer.ggml.pre", "gpt-2");
  bad.AddStringArray("tokenizer.ggml.tokens", {"a", "b", "ab"});
  bad.AddStringArray("tokenizer.ggml.merges", {"a b", "ab zz"});
  ExpectGgufError(dir, bad, "merge 1 'ab zz': its right part 'zz' is not in the vocabulary");
  ref::fixtures::GgufWriter noSpace;
  noSpace.AddString("tokenizer.ggml.model", "gpt2");
  noSpace.AddStringArray("tokenizer.ggml.tokens", {"a", "b", "ab"});
  noSpace.AddStringArray("tokenizer.ggml.merges", {"ab"});
  ExpectGgufError(dir, noSpace, "tokenizer.ggml.merges[0] 'ab'");
  ref::fixtures::GgufWriter empty;
  empty.AddString("tokenizer.ggml.model", "llama");
  empty.AddStringArray("tokenizer.ggml.tokens", {});
  ExpectGgufError(dir, empty, "empty");
}

TEST_CASE("tokenizer.json: unknown patterns, models and merges") {
  TempDir dir;
  nlohmann::json unknownPattern = ByteLevelJson("qwen2");
  unknownPattern["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\p{L}+|x";
  ExpectHfError(dir, unknownPattern, "pattern '\\p{L}+|x'");

  nlohmann::json unigram = ByteLevelJson("gpt-2");
  unigram["model"]["type"] = "Unigram";
  ExpectHfError(dir, unigram, "model type 'Unigram'");

  nlohmann::json badMerge = ByteLevelJson("gpt-2");
  badMerge["model"]["merges"].push_back("hello zzz");
  ExpectHfError(dir, badMerge, "'zzz' is not in the vocabulary");

  nlohmann::json badId = ByteLevelJson("gpt-2");
  badId["model"]["vocab"]["Ġworld"] = 99999999;
  ExpectHfError(dir, badId, "has id 99999999");

  const std::string folder = (dir.path() / "garbage").string();
  fs::create_directories(folder);
  WriteText(fs::path(folder) / "tokenizer.json", "{ not json");
  auto t = Tokenizer::Open(folder);
  REQUIRE(!t.ok());
  CHECK(t.error().message.find("tokenizer.json: is not valid JSON") != std::string::npos);

  auto missing = Tokenizer::Open((dir.path() / "nowhere.gguf").string());
  REQUIRE(!missing.ok());
  CHECK(missing.error().message.find("nowhere.gguf") != std::string::npos);
}

TEST_CASE("every byte string encodes without a crash") {
  TempDir dir;
  auto bpe = Tokenizer::Open(WriteGguf(dir.path() / "bpe.gguf", ByteLevelGguf("llama-bpe")));
  auto spm = Tokenizer::Open(WriteGguf(dir.path() / "spm.gguf", SentencePieceGguf(MakeSentencePieceVocab())));
  REQUIRE(bpe.ok());
  REQUIRE(spm.ok());
  uint32_t state = 12345;
  for (int round = 0; round < 200; ++round) {
    std::string text;
    const int length = round % 40;
    for (int i = 0; i < length; ++i) {
      state = state * 1103515245u + 12345u;  // a fixed linear congruential sequence
      text += static_cast<char>(state >> 24);
    }
    CHECK(bpe->Decode(bpe->Encode(text, true, true), true) == text);
    CHECK(spm->Decode(spm->Encode(text, false, false)) == text);
  }
}

}  // namespace test_hostile_files
