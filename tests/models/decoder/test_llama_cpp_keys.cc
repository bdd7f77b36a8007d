// The keys llama.cpp's loader needs: the table per architecture, the check on a file, and
// every committed GGUF fixture passing it (the five non-llama fixtures once lacked
// {arch}.vocab_size, and llama.cpp saw 0 tokens).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "decoder_test_support.h"
#include "reference/gen/gguf_writer.h"
#include "reference/fixtures/llama_cpp_keys.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_llama_cpp_keys {

namespace fx = ref::fixtures;
using fx::KeyNeeded;
using wb::GgufValueType;
namespace fs = std::filesystem;

namespace {

std::set<std::string> KeysNeeded(std::string_view architecture, KeyNeeded when) {
  std::set<std::string> keys;
  for (const fx::RequiredKey& k : fx::LlamaCppRequiredKeys(architecture)) {
    if (k.needed == when) keys.insert(k.key);
  }
  return keys;
}

// A GGUF with the keys a qwen2 file needs, minus `drop`, plus what `more` adds.
std::vector<std::byte> Qwen2Gguf(const std::string& drop, std::function<void(fx::GgufWriter&)> more = {}) {
  fx::GgufWriter w;
  auto u32 = [&](const std::string& key, uint32_t value) {
    if (key != drop) w.AddU32(key, value);
  };
  if (drop != "general.architecture") w.AddString("general.architecture", "qwen2");
  if (drop != "tokenizer.ggml.model") w.AddString("tokenizer.ggml.model", "no_vocab");
  u32("qwen2.vocab_size", 64);
  u32("qwen2.context_length", 128);
  u32("qwen2.embedding_length", 32);
  u32("qwen2.block_count", 1);
  u32("qwen2.feed_forward_length", 64);
  u32("qwen2.attention.head_count", 4);
  u32("qwen2.attention.head_count_kv", 2);
  if (drop != "qwen2.attention.layer_norm_rms_epsilon") w.AddF32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
  if (more) more(w);
  w.AddTensor("token_embd.weight", wb::TensorType::kF32, {64, 32}, std::vector<std::byte>(64 * 32 * 4));
  return w.Serialize();
}

std::vector<std::string> Missing(const std::vector<std::byte>& bytes) {
  auto file = wb::GgufFile::Parse(bytes, "test.gguf");
  REQUIRE_MESSAGE(file.ok(), file.error().message);
  return fx::MissingLlamaCppKeys(*file);
}

}  // namespace

TEST_CASE("the table: what each architecture needs, and when") {
  for (const std::string a : {"llama", "qwen2", "qwen3", "qwen3moe", "gemma3", "olmoe"}) {
    CAPTURE(a);
    const std::set<std::string> always = KeysNeeded(a, KeyNeeded::kAlways);
    for (const std::string suffix : {"context_length", "embedding_length", "block_count", "attention.head_count",
                                     "attention.head_count_kv", "attention.layer_norm_rms_epsilon"}) {
      CHECK(always.count(a + "." + suffix) == 1);
    }
    CHECK(always.count("general.architecture") == 1);
    CHECK(always.count("tokenizer.ggml.model") == 1);
    // The vocabulary size is needed exactly when the file has no token list.
    CHECK(KeysNeeded(a, KeyNeeded::kWithoutTokenList) == std::set<std::string>{a + ".vocab_size"});
    // Every type is the one llama.cpp reads: u32 counts, an f32 epsilon, strings.
    for (const fx::RequiredKey& k : fx::LlamaCppRequiredKeys(a)) {
      CAPTURE(k.key);
      const GgufValueType expected = k.key.ends_with("epsilon")      ? GgufValueType::kF32
                                     : k.key.starts_with("general.") ? GgufValueType::kString
                                     : k.key.starts_with("tokenizer.") ? GgufValueType::kString
                                                                       : GgufValueType::kU32;
      CHECK(k.type == expected);
      CHECK(!k.why.empty());
    }
  }
  // Experts: always for the mixture architectures, only with a router for llama (Mixtral),
  // never for the dense ones; qwen3moe sizes its experts by their own key.
  const std::set<std::string> expertKeys = {"expert_count", "expert_used_count"};
  for (const std::string a : {"qwen3moe", "olmoe"}) {
    for (const std::string& k : expertKeys) CHECK(KeysNeeded(a, KeyNeeded::kAlways).count(a + "." + k) == 1);
  }
  CHECK(KeysNeeded("llama", KeyNeeded::kWithExperts) == std::set<std::string>{"llama.expert_count", "llama.expert_used_count"});
  for (const std::string a : {"qwen2", "qwen3", "gemma3"}) CHECK(KeysNeeded(a, KeyNeeded::kWithExperts).empty());
  CHECK(KeysNeeded("qwen3moe", KeyNeeded::kAlways).count("qwen3moe.expert_feed_forward_length") == 1);
  CHECK(KeysNeeded("qwen3moe", KeyNeeded::kAlways).count("qwen3moe.feed_forward_length") == 0);
  CHECK(KeysNeeded("olmoe", KeyNeeded::kAlways).count("olmoe.feed_forward_length") == 1);
  CHECK(KeysNeeded("gemma3", KeyNeeded::kAlways).count("gemma3.attention.sliding_window") == 1);
  CHECK(fx::LlamaCppRequiredKeys("gpt2").empty());
}

TEST_CASE("the check names each key a file lacks, and only those") {
  CHECK(Missing(Qwen2Gguf("")).empty());
  for (const std::string key : {"general.architecture", "tokenizer.ggml.model", "qwen2.vocab_size",
                                "qwen2.context_length", "qwen2.embedding_length", "qwen2.block_count",
                                "qwen2.feed_forward_length", "qwen2.attention.head_count",
                                "qwen2.attention.head_count_kv", "qwen2.attention.layer_norm_rms_epsilon"}) {
    CAPTURE(key);
    const std::vector<std::string> missing = Missing(Qwen2Gguf(key));
    REQUIRE(missing.size() == 1);
    CHECK(missing[0].starts_with(key + " ("));
    CHECK(missing[0].find("is missing") != std::string::npos);
  }
  const auto vocab = Missing(Qwen2Gguf("qwen2.vocab_size"));
  CHECK(vocab[0] == "qwen2.vocab_size (u32) is missing: with no token list llama.cpp counts 0 tokens, and "
                    "token_embd.weight has the wrong shape");
  // A token list is the other source of the vocabulary size.
  const auto withTokens = Missing(Qwen2Gguf("qwen2.vocab_size", [](fx::GgufWriter& w) {
    w.AddStringArray("tokenizer.ggml.tokens", {"a", "b"});
  }));
  CHECK(withTokens.empty());
}

TEST_CASE("the check insists on llama.cpp's exact types") {
  const auto asBool = Missing(Qwen2Gguf("qwen2.block_count", [](fx::GgufWriter& w) { w.AddBool("qwen2.block_count", true); }));
  REQUIRE(asBool.size() == 1);
  CHECK(asBool[0] == "qwen2.block_count is a bool, but llama.cpp reads only a u32");
  const auto asString = Missing(Qwen2Gguf("qwen2.attention.layer_norm_rms_epsilon", [](fx::GgufWriter& w) {
    w.AddString("qwen2.attention.layer_norm_rms_epsilon", "1e-6");
  }));
  REQUIRE(asString.size() == 1);
  CHECK(asString[0] == "qwen2.attention.layer_norm_rms_epsilon is a string, but llama.cpp reads only a f32");
}

TEST_CASE("a llama file with a router needs the expert counts; one without does not") {
  auto llama = [](bool router) {
    fx::GgufWriter w;
    w.AddString("general.architecture", "llama");
    w.AddString("tokenizer.ggml.model", "no_vocab");
    for (const char* k : {"vocab_size", "context_length", "embedding_length", "block_count", "feed_forward_length",
                          "attention.head_count", "attention.head_count_kv"}) {
      w.AddU32(std::string("llama.") + k, 8);
    }
    w.AddF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (router) w.AddTensor("blk.0.ffn_gate_inp.weight", wb::TensorType::kF32, {4, 8}, std::vector<std::byte>(4 * 8 * 4));
    return w.Serialize();
  };
  CHECK(Missing(llama(false)).empty());
  const auto mixture = Missing(llama(true));
  REQUIRE(mixture.size() == 2);
  CHECK(mixture[0].starts_with("llama.expert_count (u32) is missing"));
  CHECK(mixture[1].starts_with("llama.expert_used_count (u32) is missing"));
}

TEST_CASE("every committed GGUF fixture carries every key llama.cpp needs") {
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(wbtest::ModelsRoot())) {
    if (entry.path().extension() != ".gguf") continue;
    ++files;
    const std::string path = fs::relative(entry.path(), wbtest::ModelsRoot()).generic_string();
    CAPTURE(path);
    auto file = wb::GgufFile::Open(entry.path().string());
    REQUIRE_MESSAGE(file.ok(), file.error().message);
    const auto architecture = file->GetString("general.architecture");
    REQUIRE(architecture.ok());
    CHECK(!fx::LlamaCppRequiredKeys(*architecture).empty());  // one of the six the table knows
    const std::vector<std::string> missing = fx::MissingLlamaCppKeys(*file);
    std::string lines;
    for (const std::string& m : missing) lines += "\n  " + m;
    CHECK_MESSAGE(missing.empty(), path, " lacks:", lines);
  }
  // one per family, llama's Q8_0, Q4_0 and F32, and the workbook's own model's F16, Q8_0 and Q4_0
  CHECK(files == 14);
}

}  // namespace test_llama_cpp_keys
