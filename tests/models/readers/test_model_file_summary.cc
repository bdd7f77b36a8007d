// The dumps behind `workbook inspect`: exact lines for values, long arrays summarised,
// escaped text, the tensor table and totals, and JSON with the same facts.
#include <doctest/doctest.h>

#include <bit>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/files/model_file_summary.h"
#include "model/files/printable.h"
#include "tests/models/readers/model_file_builders.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_model_file_summary {

using namespace wb::test;

namespace {

Bytes SampleGguf() {
  std::vector<std::string> tokens;
  for (int i = 0; i < 20; ++i) tokens.push_back("tok" + std::to_string(i));
  GgufBuilder b;
  b.Key("general.architecture", String("llama"))
      .Key("llama.block_count", U32(2))
      .Key("llama.rope.freq_base", F32(10000.0f))
      .Key("general.note", String("tab\there"))
      .Key("tokenizer.ggml.tokens", StringArray(tokens))
      .Key("nested", ArrayOfArrays({Array<int32_t>(5, {-1, 2})}))
      .Tensor("token_embd.weight", 8, {32, 4}, Bytes(4 * 34))
      .Tensor("output_norm.weight", 0, {32}, Bytes(128));
  return b.Build();
}

bool HasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("GgufValueText: scalars, strings, short and long arrays") {
  const Bytes bytes = SampleGguf();
  auto file = wb::GgufFile::Parse(View(bytes), "m.gguf");
  REQUIRE(file.ok());
  CHECK(wb::GgufValueText(*file->FindValue("llama.block_count")) == "2");
  CHECK(wb::GgufValueText(*file->FindValue("llama.rope.freq_base")) == "10000");
  CHECK(wb::GgufValueText(*file->FindValue("general.note")) == "\"tab\\x09here\"");
  CHECK(wb::GgufValueText(*file->FindValue("tokenizer.ggml.tokens")) ==
        "array[string] 20: [\"tok0\", \"tok1\", \"tok2\", \"tok3\", \"tok4\", \"tok5\", \"tok6\", \"tok7\", ... 12 more]");
  CHECK(wb::GgufValueText(*file->FindValue("nested")) == "array[array] 1: [array[i32] 2: [-1, 2]]");
}

TEST_CASE("the GGUF text dump: summary line, metadata rows, tensor table, totals") {
  const Bytes bytes = SampleGguf();
  auto file = wb::GgufFile::Parse(View(bytes), "m.gguf");
  REQUIRE(file.ok());
  const std::string text = wb::DescribeGgufText(*file);
  CHECK(text.rfind("m.gguf: GGUF version 3, " + std::to_string(bytes.size()) +
                       " bytes, alignment 32 (default), 6 metadata keys, 2 tensors, data section at byte " +
                       std::to_string(file->dataOffset()) + "\n",
                   0) == 0);
  CHECK(HasLine(text, "  llama.block_count      u32            2"));
  CHECK(HasLine(text, "  token_embd.weight   Q8_0  [32, 4]  [4, 32]    136       0"));
  CHECK(HasLine(text, "  output_norm.weight  F32   [32]     [32]       128     160"));
  CHECK(HasLine(text, "totals: 2 tensors, 160 values, 264 bytes of tensor data"));
  CHECK(HasLine(text, "  Q8_0: 1 tensors, 128 values, 136 bytes"));
}

TEST_CASE("the GGUF JSON dump holds the same facts") {
  const Bytes bytes = SampleGguf();
  auto file = wb::GgufFile::Parse(View(bytes), "m.gguf");
  REQUIRE(file.ok());
  const auto json = nlohmann::json::parse(wb::DescribeGgufJson(*file));
  CHECK(json["format"] == "gguf");
  CHECK(json["version"] == 3);
  CHECK(json["alignment"] == 32);
  CHECK(json["metadata"].size() == 6);
  CHECK(json["metadata"][1]["key"] == "llama.block_count");
  CHECK(json["metadata"][1]["type"] == "u32");
  CHECK(json["metadata"][1]["value"] == 2);
  CHECK(json["metadata"][4]["value"]["count"] == 20);
  CHECK(json["metadata"][4]["value"]["first"].size() == wb::kSummaryArrayItems);
  CHECK(json["metadata"][3]["value"] == "tab\there");  // JSON escapes it itself
  CHECK(json["tensors"][0]["ne"] == nlohmann::json::array({32, 4}));
  CHECK(json["tensors"][0]["shape"] == nlohmann::json::array({4, 32}));
  CHECK(json["tensors"][1]["offset"] == 160);
  CHECK(json["totals"]["bytes"] == 264);
}

TEST_CASE("non-finite metadata is written as strings that read back to the same bits, never null") {
  const float quietNan = std::bit_cast<float>(0x7FC00000u);
  const float payloadNan = std::bit_cast<float>(0x7FC00001u);
  const float negativeNan = std::bit_cast<float>(0xFFC00000u);
  GgufBuilder b;
  b.Key("a.nan", F32(quietNan))
      .Key("a.inf", F32(std::numeric_limits<float>::infinity()))
      .Key("a.minus_inf", F64(-std::numeric_limits<double>::infinity()))
      .Key("a.payload_nan", F32(payloadNan))
      .Key("a.negative_nan", F32(negativeNan))
      .Key("a.f64_nan", F64(std::bit_cast<double>(0x7FF8000000000001ull)))
      .Key("a.array", Array<float>(6, {1.5f, quietNan, -std::numeric_limits<float>::infinity()}))
      .Key("a.finite", F32(0.1f));
  const Bytes bytes = b.Build();
  auto file = wb::GgufFile::Parse(View(bytes), "m.gguf");
  REQUIRE(file.ok());
  const auto json = nlohmann::json::parse(wb::DescribeGgufJson(*file));
  const auto& m = json["metadata"];
  CHECK(m[0]["value"] == "nan");
  CHECK(m[1]["value"] == "inf");
  CHECK(m[2]["value"] == "-inf");
  CHECK(m[3]["value"] == "nan(0x7fc00001)");
  CHECK(m[4]["value"] == "nan(0xffc00000)");
  CHECK(m[5]["value"] == "nan(0x7ff8000000000001)");
  CHECK(m[6]["value"]["first"] == nlohmann::json::array({1.5, "nan", "-inf"}));
  CHECK(m[7]["value"].is_number());
  CHECK(static_cast<float>(m[7]["value"].get<double>()) == 0.1f);
  // The bits in the string are the stored value's.
  const std::string text = m[3]["value"].get<std::string>();
  CHECK(std::bit_cast<float>(static_cast<uint32_t>(std::stoul(text.substr(4, 10), nullptr, 16))) != 0.0f);
  CHECK(static_cast<uint32_t>(std::stoul(text.substr(4, 10), nullptr, 16)) == std::bit_cast<uint32_t>(payloadNan));
  CHECK(wb::DescribeGgufJson(*file).find("null") == std::string::npos);
}

TEST_CASE("the safetensors dumps list every tensor with its file") {
  const Bytes bytes = BuildSafetensors({{"b.weight", "BF16", {2, 2}, Bytes(8)}, {"a.ids", "I64", {3}, Bytes(24)}},
                                       {{"format", "pt"}});
  auto file = wb::SafetensorsFile::Parse(View(bytes), "model.safetensors");
  REQUIRE(file.ok());
  std::vector<wb::SafetensorsFile> files;
  files.push_back(std::move(*file));
  auto checkpoint = wb::SafetensorsCheckpoint::FromFiles(std::move(files), "hf");
  REQUIRE(checkpoint.ok());
  const std::string text = wb::DescribeSafetensorsText(*checkpoint);
  CHECK(text.rfind("hf: safetensors, 1 file\n", 0) == 0);
  CHECK(HasLine(text, "    __metadata__ format = \"pt\""));
  CHECK(HasLine(text, "  a.ids     I64    [3]        24       8"));
  CHECK(HasLine(text, "  b.weight  BF16   [2, 2]      8       0"));
  CHECK(HasLine(text, "totals: 2 tensors, 7 values, 32 bytes of tensor data"));
  const auto json = nlohmann::json::parse(wb::DescribeSafetensorsJson(*checkpoint));
  CHECK(json["format"] == "safetensors");
  CHECK(json["tensors"][1]["name"] == "b.weight");
  CHECK(json["tensors"][1]["shape"] == nlohmann::json::array({2, 2}));
  CHECK(json["files"][0]["metadata"]["format"] == "pt");
}

TEST_CASE("Printable escapes control bytes and broken UTF-8, keeps valid UTF-8, cuts long text") {
  CHECK(wb::Printable("plain") == "plain");
  CHECK(wb::Printable("▁the é") == "▁the é");
  CHECK(wb::Printable(std::string("a\0b\n", 4)) == "a\\x00b\\x0a");
  CHECK(wb::Printable("\xff\xfe") == "\\xff\\xfe");
  CHECK(wb::Printable("\xe2\x96") == "\\xe2\\x96");           // a sequence cut short
  CHECK(wb::Printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  CHECK(wb::Printable("it's \"q\"") == "it\\'s \\\"q\\\"");
  CHECK(wb::Printable(std::string(200, 'x'), 10) == "xxxxxxxxxx...");
  CHECK(wb::IsValidUtf8("▁the"));
  CHECK_FALSE(wb::IsValidUtf8("\xc0\x80"));  // overlong NUL
}

}  // namespace test_model_file_summary
