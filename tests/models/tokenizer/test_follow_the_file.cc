// Tokenizers that follow the file: tokenizer.json's normalizers and post-processors, GGUF's
// add_bos/add_eos keys and llama.cpp's defaults when they are absent, the GGUF form `convert`
// writes (reference/fixtures/tokenizer_keys.h) tokenizing as the tokenizer.json it came from,
// and vocabulary tokens that are not UTF-8 refused by index and file.
#include <doctest/doctest.h>

#include "model/tokenizer/normalizer.h"
#include "reference/fixtures/tokenizer_keys.h"
#include "tokenizer_test_support.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_follow_the_file {

using namespace tokfx;
using Ids = std::vector<int32_t>;
using nlohmann::json;

namespace {

Tokenizer MustOpen(const std::string& path) {
  auto t = Tokenizer::Open(path);
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
  return std::move(t).value();
}

// The GGUF `convert` writes for an HF folder (tokenizer keys only).
std::string ConvertedGguf(const std::string& folder, const fs::path& out) {
  ref::fixtures::GgufWriter w;
  w.AddString("general.architecture", "llama");
  const wb::Status s = ref::fixtures::WriteTokenizerKeys(folder, w);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  return WriteGguf(out, w);
}

std::vector<std::string> AgreementTexts() {
  std::vector<std::string> texts = AwkwardTexts();
  for (const char* t : {"hello world", "Hello World HELLO", "camelCase x/y//z", "hello<unk> world</s><|user|>",
                        "  hello  ", "é and e\u0301"}) {
    texts.push_back(t);
  }
  return texts;
}

void CheckSameIds(const Tokenizer& hf, const Tokenizer& gguf, bool skipNonNfc = false) {
  CHECK(hf.kind() == gguf.kind());
  CHECK(hf.VocabSize() == gguf.VocabSize());
  CHECK(hf.Bos() == gguf.Bos());
  CHECK(hf.Eos() == gguf.Eos());
  CHECK(hf.AddsBos() == gguf.AddsBos());
  CHECK(hf.AddsEos() == gguf.AddsEos());
  for (int32_t id = 0; id < hf.VocabSize(); ++id) CHECK(hf.Type(id) == gguf.Type(id));
  for (const std::string& text : AgreementTexts()) {
    if (skipNonNfc && text.find("e\u0301") != std::string::npos) continue;
    CAPTURE(text);
    for (bool addSpecial : {false, true}) {
      for (bool parse : {false, true}) CHECK(hf.Encode(text, addSpecial, parse) == gguf.Encode(text, addSpecial, parse));
    }
  }
}

json WithNormalizer(json tokenizer, json normalizer) {
  tokenizer["normalizer"] = std::move(normalizer);
  return tokenizer;
}

json TemplateSingle(std::vector<std::string> items) {
  json single = json::array();
  json specials = json::object();
  for (const std::string& item : items) {
    if (item == "$A") {
      single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    } else {
      single.push_back({{"SpecialToken", {{"id", item}, {"type_id", 0}}}});
      specials[item] = {{"id", item}, {"ids", {ByteLevelId(item)}}, {"tokens", {item}}};
    }
  }
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", single}, {"special_tokens", specials}};
}

}  // namespace

// ---- normalizers --------------------------------------------------------------------------

TEST_CASE("NFC composes a decomposed accent before the split (Qwen's normalizer)") {
  TempDir dir;
  const json nfc = {{"type", "NFC"}};
  Tokenizer plain = MustOpen(WriteHfFolder(dir.path() / "plain", ByteLevelJson("qwen2")));
  Tokenizer composed = MustOpen(WriteHfFolder(dir.path() / "nfc", WithNormalizer(ByteLevelJson("qwen2"), nfc)));
  const std::string decomposed = "cafe\u0301";  // e + COMBINING ACUTE ACCENT
  // Unnormalized, the accent's two bytes are tokens of their own; composed, é is two bytes too
  // but one character: c a f, then é's bytes C3 A9.
  CHECK(plain.Encode(decomposed, false, false) ==
        Ids{ByteLevelId("c"), ByteLevelId("a"), ByteLevelId("f"), ByteLevelId("e"), ByteLevelId("\u00cc"),
            ByteLevelId("\u0123")});
  CHECK(composed.Encode(decomposed, false, false) ==
        Ids{ByteLevelId("c"), ByteLevelId("a"), ByteLevelId("f"), ByteLevelId("\u00c3"), ByteLevelId("\u00a9")});
  CHECK(composed.Encode("caf\u00e9", false, false) == composed.Encode(decomposed, false, false));
  CHECK(composed.Normalizers() == "NFC");
}

TEST_CASE("each normalizer step") {
  using Kind = wb::tokenizer::NormalizerStep::Kind;
  const auto apply = [](wb::tokenizer::NormalizerStep step, const std::string& text) {
    return wb::tokenizer::ApplyNormalizers({step}, text);
  };
  CHECK(apply({Kind::kNfc}, "e\u0301") == "\u00e9");
  CHECK(apply({Kind::kNfd}, "\u00e9") == "e\u0301");
  CHECK(apply({Kind::kNfkc}, "\ufb01 \u2460") == "fi 1");  // the fi ligature, a circled one
  CHECK(apply({Kind::kNfkd}, "\ufb01\u00e9") == "fie\u0301");
  CHECK(apply({Kind::kLowercase}, "HeLLo \u00c9\u03a3 \u0130") == "hello \u00e9\u03c3 i\u0307");  // full mapping
  CHECK(apply({Kind::kReplace, " ", "\u2581"}, " a  b ") == "\u2581a\u2581\u2581b\u2581");
  CHECK(apply({Kind::kReplace, "ab", "X"}, "aabab") == "aXX");
  CHECK(apply({Kind::kPrepend, "", "\u2581"}, "hi") == "\u2581hi");
  CHECK(apply({Kind::kPrepend, "", "\u2581"}, "").empty());
  CHECK(apply({Kind::kStrip, "", "", true, true}, " \t\u3000hi \u00a0") == "hi");
  CHECK(apply({Kind::kStrip, "", "", false, true}, "  hi  ") == "  hi");
  // Bytes that are not UTF-8 pass through every step.
  CHECK(apply({Kind::kNfc}, "a\xff" "e\u0301") == "a\xff\u00e9");
  CHECK(apply({Kind::kLowercase}, "A\xc3" "B") == "a\xc3" "b");
}

TEST_CASE("a Sequence of normalizers applies in order; Lowercase reaches the ids") {
  TempDir dir;
  const json seq = {{"type", "Sequence"},
                    {"normalizers", json::array({{{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
                                                 {{"type", "Lowercase"}},
                                                 {{"type", "Replace"}, {"pattern", {{"String", "WORLD"}}}, {"content", "x"}}})}};
  Tokenizer t = MustOpen(WriteHfFolder(dir.path() / "seq", WithNormalizer(ByteLevelJson("gpt-2"), seq)));
  CHECK(t.Normalizers() == "Strip(both), Lowercase, Replace('WORLD' -> 'x')");
  // Replace runs after Lowercase, so "WORLD" is already "world": not replaced.
  CHECK(t.Encode("  HELLO WORLD ", false, false) == Ids{ByteLevelId("hello"), ByteLevelId("\u0120world")});
}

TEST_CASE("a normalizer the workbook does not apply is refused by name") {
  TempDir dir;
  for (const json& n : {json{{"type", "BertNormalizer"}},
                        json{{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}},
                        json{{"type", "Precompiled"}, {"precompiled_charsmap", "AA=="}}}) {
    auto t = Tokenizer::FromHfFolder(WriteHfFolder(dir.path() / "refused", WithNormalizer(ByteLevelJson("gpt-2"), n)));
    REQUIRE_FALSE(t.ok());
    CAPTURE(t.error().message);
    CHECK(t.error().message.find("tokenizer.json: normalizer") != std::string::npos);
    CHECK(t.error().message.find(n["type"] == "Replace" ? "' {2,}'" : n["type"].get<std::string>()) != std::string::npos);
  }
}

// ---- post-processors ----------------------------------------------------------------------

TEST_CASE("post-processors decide BOS and EOS") {
  TempDir dir;
  const int32_t start = ByteLevelId("<|im_start|>"), end = ByteLevelId("<|im_end|>"), hello = ByteLevelId("hello");
  struct Case {
    const char* name;
    json processor;
    Ids expected;
  };
  const json byteLevel = {{"type", "ByteLevel"}, {"trim_offsets", false}};
  const Case cases[] = {
      {"none", nullptr, {hello}},
      {"ByteLevel", byteLevel, {hello}},
      {"Template BOS", TemplateSingle({"<|im_start|>", "$A"}), {start, hello}},
      {"Template BOS EOS", TemplateSingle({"<|im_start|>", "$A", "<|im_end|>"}), {start, hello, end}},
      {"Template EOS", TemplateSingle({"$A", "<|im_end|>"}), {hello, end}},
      {"Sequence of ByteLevel and Template (Llama 3)",
       {{"type", "Sequence"}, {"processors", json::array({byteLevel, TemplateSingle({"<|im_start|>", "$A"})})}},
       {start, hello}},
      {"RobertaProcessing",
       {{"type", "RobertaProcessing"}, {"cls", {"<|im_start|>", start}}, {"sep", {"<|im_end|>", end}}},
       {start, hello, end}},
      {"BertProcessing", {{"type", "BertProcessing"}, {"cls", {"<|im_start|>", start}}, {"sep", {"<|im_end|>", end}}},
       {start, hello, end}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    json tokenizer = ByteLevelJson("llama3");
    tokenizer["post_processor"] = c.processor;
    const std::string folder = WriteHfFolder(dir.path() / "pp", tokenizer);
    Tokenizer hf = MustOpen(folder);
    CHECK(hf.Encode("hello", true, false) == c.expected);
    CHECK(hf.Encode("hello", false, false) == Ids{hello});
    // The converted GGUF adds the same (add_bos_token / add_eos_token written from the file).
    Tokenizer gguf = MustOpen(ConvertedGguf(folder, dir.path() / "pp.gguf"));
    CHECK(gguf.Encode("hello", true, false) == c.expected);
  }
}

TEST_CASE("tokenizer_config.json's add_bos_token overrides the template; a post-processor adding two is refused") {
  TempDir dir;
  json tokenizer = ByteLevelJson("llama3");
  tokenizer["post_processor"] = TemplateSingle({"<|im_start|>", "$A"});
  Tokenizer off = MustOpen(WriteHfFolder(dir.path() / "off", tokenizer, {{"add_bos_token", false}}));
  CHECK(off.Encode("hello", true, false) == Ids{ByteLevelId("hello")});
  CHECK(off.Bos() == ByteLevelId("<|im_start|>"));
  tokenizer["post_processor"] = TemplateSingle({"<|im_start|>", "<|endoftext|>", "$A"});
  auto two = Tokenizer::FromHfFolder(WriteHfFolder(dir.path() / "two", tokenizer));
  REQUIRE_FALSE(two.ok());
  CHECK(two.error().message.find("adds 2 tokens before the text") != std::string::npos);
  tokenizer["post_processor"] = {{"type", "Mystery"}};
  auto unknown = Tokenizer::FromHfFolder(WriteHfFolder(dir.path() / "unknown", tokenizer));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message.find("post_processor 'Mystery'") != std::string::npos);
}

TEST_CASE("GGUF: add_bos_token decides; absent, llama.cpp's default for the vocabulary type") {
  TempDir dir;
  // llama.cpp adds BOS by default for llama-bpe and tekken, not for gpt-2 or qwen2; SentencePiece adds it.
  for (auto [pre, adds] : {std::pair{"llama-bpe", true}, std::pair{"tekken", true}, std::pair{"gpt-2", false},
                           std::pair{"qwen2", false}}) {
    CAPTURE(pre);
    auto w = ByteLevelGguf(pre);
    w.AddU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(ByteLevelId("<|im_start|>")));
    CHECK(MustOpen(WriteGguf(dir.path() / "default.gguf", w)).AddsBos() == adds);
    w.AddBool("tokenizer.ggml.add_bos_token", !adds);
    CHECK(MustOpen(WriteGguf(dir.path() / "key.gguf", w)).AddsBos() == !adds);
  }
  const SentencePieceVocab v = MakeSentencePieceVocab();
  CHECK(MustOpen(WriteGguf(dir.path() / "spm.gguf", SentencePieceGguf(v))).AddsBos());
  CHECK(!MustOpen(WriteGguf(dir.path() / "spm.gguf", SentencePieceGguf(v))).AddsEos());
}

// ---- the GGUF form of every fixture --------------------------------------------------------

TEST_CASE("the converted GGUF tokenizes as the tokenizer.json: every byte-level split") {
  TempDir dir;
  for (const char* pre : {"gpt-2", "llama3", "qwen2", "qwen35", "tekken", "smollm"}) {
    CAPTURE(pre);
    json tokenizer = ByteLevelJson(pre);
    tokenizer["post_processor"] = TemplateSingle({"<|endoftext|>", "$A"});
    const std::string folder = WriteHfFolder(dir.path() / pre, tokenizer, {{"eos_token", "<|im_end|>"}});
    Tokenizer hf = MustOpen(folder);
    CHECK(hf.preTokenizer() == pre);
    Tokenizer gguf = MustOpen(ConvertedGguf(folder, dir.path() / (std::string(pre) + ".gguf")));
    CHECK(gguf.preTokenizer() == pre);
    CheckSameIds(hf, gguf);
  }
}

TEST_CASE("the converted GGUF of a SentencePiece tokenizer.json: scores from merge ranks, types, BOS") {
  TempDir dir;
  const SentencePieceVocab v = MakeSentencePieceVocab();
  const std::string folder = WriteHfFolder(dir.path() / "spm", SentencePieceJson(v), SentencePieceConfig());
  Tokenizer hf = MustOpen(folder);
  Tokenizer gguf = MustOpen(ConvertedGguf(folder, dir.path() / "spm.gguf"));
  CheckSameIds(hf, gguf);
  CHECK(gguf.Type(0) == TokenType::kUnknown);
  CHECK(gguf.Type(1) == TokenType::kControl);
  CHECK(gguf.Type(3) == TokenType::kByte);
  CHECK(gguf.Encode("hello world", true, false) ==
        Ids{1, IdIn(v.tokens, "▁hello"), IdIn(v.tokens, "▁world")});
  CHECK(gguf.ChatTemplate() == "{{ messages }}");
  // Gemma's form: no dummy prefix (a Replace normalizer only), which add_space_prefix carries.
  json gemma = SentencePieceJson(v);
  gemma["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}};
  const std::string gemmaFolder = WriteHfFolder(dir.path() / "gemma", gemma, SentencePieceConfig());
  Tokenizer gemmaHf = MustOpen(gemmaFolder);
  Tokenizer gemmaGguf = MustOpen(ConvertedGguf(gemmaFolder, dir.path() / "gemma.gguf"));
  CheckSameIds(gemmaHf, gemmaGguf);
  CHECK(gemmaHf.Encode("hello", false, false) == Ids{IdIn(v.tokens, "hello")});
}

TEST_CASE("NFC is the one normalizer a GGUF leaves out, with a note; others refuse conversion") {
  TempDir dir;
  const std::string folder = WriteHfFolder(dir.path() / "nfc", WithNormalizer(ByteLevelJson("qwen2"), {{"type", "NFC"}}));
  ref::fixtures::GgufWriter w;
  std::vector<std::string> notes;
  REQUIRE(ref::fixtures::WriteTokenizerKeys(folder, w, &notes).ok());
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("NFC normalizer has no GGUF key") != std::string::npos);
  Tokenizer hf = MustOpen(folder);
  Tokenizer gguf = MustOpen(WriteGguf(dir.path() / "nfc.gguf", w));
  CheckSameIds(hf, gguf, /*skipNonNfc=*/true);  // agree on text already in NFC
  CHECK(hf.Encode("e\u0301", false, false) != gguf.Encode("e\u0301", false, false));  // as llama.cpp's would
  const std::string lower =
      WriteHfFolder(dir.path() / "lower", WithNormalizer(ByteLevelJson("qwen2"), {{"type", "Lowercase"}}));
  ref::fixtures::GgufWriter refused;
  const wb::Status s = ref::fixtures::WriteTokenizerKeys(lower, refused);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("normalizer step Lowercase has no GGUF key") != std::string::npos);
}

// ---- UTF-8 --------------------------------------------------------------------------------

TEST_CASE("a vocabulary token that is not UTF-8 is refused with its index and the file") {
  TempDir dir;
  auto tokens = ByteLevelTokens();
  tokens[261] = "bad\xff";
  ref::fixtures::GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddString("tokenizer.ggml.model", "gpt2");
  w.AddString("tokenizer.ggml.pre", "gpt-2");
  w.AddStringArray("tokenizer.ggml.tokens", tokens);
  w.AddStringArray("tokenizer.ggml.merges", {});
  const std::string path = WriteGguf(dir.path() / "bad.gguf", w);
  auto t = Tokenizer::Open(path);
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().message == path + ": token 261 is not valid UTF-8 (byte 3 of its 4 is 0xFF)");

  // tokenizer.json: JSON must be UTF-8; the message names the byte, the string and the id.
  std::string text = ByteLevelJson("gpt-2").dump();
  const std::string key = "\"hello\":";
  const size_t at = text.find(key);
  REQUIRE(at != std::string::npos);
  text.insert(at + 3, "\xC3");  // "he\xC3llo"
  fs::create_directories(dir.path() / "badjson");
  WriteText(dir.path() / "badjson" / "tokenizer.json", text);
  auto j = Tokenizer::FromHfFolder((dir.path() / "badjson").string());
  REQUIRE_FALSE(j.ok());
  CAPTURE(j.error().message);
  CHECK(j.error().message.find((dir.path() / "badjson" / "tokenizer.json").string() + ": is not valid JSON: byte ") == 0);
  CHECK(j.error().message.find("is 0xC3, not UTF-8, in the string that begins \"he\" (the vocabulary token with id " +
                               std::to_string(ByteLevelId("hello")) + ")") != std::string::npos);
}

}  // namespace test_follow_the_file
