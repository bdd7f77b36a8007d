// GGUF reader on valid files built in memory: every value type, nested arrays, both
// versions, default and custom alignment, a tensor of every type, the layout checks that
// valid files must pass, and the exact texts of the layout errors.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "model/files/gguf.h"
#include "tests/models/readers/model_file_builders.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_gguf {

using namespace wb::test;
using wb::GgufFile;
using wb::GgufValueType;

namespace {

GgufFile ParseOk(const Bytes& bytes) {
  auto file = GgufFile::Parse(View(bytes), "model.gguf");
  if (!file.ok()) FAIL(file.error().message);
  return std::move(*file);
}

std::string ParseError(const Bytes& bytes) {
  auto file = GgufFile::Parse(View(bytes), "model.gguf");
  REQUIRE_FALSE(file.ok());
  return file.error().message;
}

Bytes Filler(size_t count, int seed) {
  Bytes out(count);
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<std::byte>((i * 31 + static_cast<size_t>(seed) * 7) & 0xFF);
  return out;
}

}  // namespace

TEST_CASE("every scalar value type reads back with its type and value") {
  GgufBuilder b;
  b.Key("u8", U8(250)).Key("i8", I8(-128)).Key("u16", U16(65535)).Key("i16", I16(-32768))
      .Key("u32", U32(4294967295u)).Key("i32", I32(-2147483647 - 1)).Key("f32", F32(-1.25f))
      .Key("bool.t", Bool(true)).Key("bool.f", Bool(false)).Key("string", String("héllo"))
      .Key("u64", U64(18446744073709551615ull)).Key("i64", I64(-9223372036854775807ll - 1)).Key("f64", F64(1e300));
  const Bytes bytes = b.Build();  // the parsed file points into these bytes
  const GgufFile file = ParseOk(bytes);
  REQUIRE(file.metadata().size() == 13);
  const auto check = [&](const char* key, GgufValueType type) {
    const wb::GgufValue* v = file.FindValue(key);
    REQUIRE(v != nullptr);
    CHECK(v->type == type);
    return v->scalar;
  };
  CHECK(std::get<uint64_t>(check("u8", GgufValueType::kU8)) == 250);
  CHECK(std::get<int64_t>(check("i8", GgufValueType::kI8)) == -128);
  CHECK(std::get<uint64_t>(check("u16", GgufValueType::kU16)) == 65535);
  CHECK(std::get<int64_t>(check("i16", GgufValueType::kI16)) == -32768);
  CHECK(std::get<uint64_t>(check("u32", GgufValueType::kU32)) == 4294967295u);
  CHECK(std::get<int64_t>(check("i32", GgufValueType::kI32)) == -2147483648ll);
  CHECK(std::get<double>(check("f32", GgufValueType::kF32)) == -1.25);
  CHECK(std::get<bool>(check("bool.t", GgufValueType::kBool)) == true);
  CHECK(std::get<bool>(check("bool.f", GgufValueType::kBool)) == false);
  CHECK(std::get<std::string_view>(check("string", GgufValueType::kString)) == "héllo");
  CHECK(std::get<uint64_t>(check("u64", GgufValueType::kU64)) == 18446744073709551615ull);
  CHECK(std::get<int64_t>(check("i64", GgufValueType::kI64)) == -9223372036854775807ll - 1);
  CHECK(std::get<double>(check("f64", GgufValueType::kF64)) == 1e300);
  CHECK(file.metadata()[0].key == "u8");  // file order is kept
  CHECK(file.metadata()[12].key == "f64");
  CHECK(file.metadata()[0].fileOffset == 24);  // right after the header
  CHECK(file.FindValue("absent") == nullptr);
}

TEST_CASE("arrays of every element type, and arrays of arrays") {
  GgufBuilder b;
  b.Key("a.u8", Array<uint8_t>(0, {1, 2, 255}))
      .Key("a.i8", Array<int8_t>(1, {-1}))
      .Key("a.u16", Array<uint16_t>(2, {7, 65535}))
      .Key("a.i16", Array<int16_t>(3, {-7}))
      .Key("a.u32", Array<uint32_t>(4, {10, 20, 30, 40}))
      .Key("a.i32", Array<int32_t>(5, {-10, 10}))
      .Key("a.f32", Array<float>(6, {0.5f, -2.0f}))
      .Key("a.bool", Array<uint8_t>(7, {1, 0, 1}))
      .Key("a.string", StringArray({"<unk>", "", "▁the"}))
      .Key("a.u64", Array<uint64_t>(10, {1ull << 63}))
      .Key("a.i64", Array<int64_t>(11, {-5}))
      .Key("a.f64", Array<double>(12, {0.1}))
      .Key("a.empty", Array<uint32_t>(4, {}))
      .Key("a.nested", ArrayOfArrays({Array<uint32_t>(4, {1, 2}), Array<uint32_t>(4, {}),
                                      ArrayOfArrays({StringArray({"deep"})})}));
  const Bytes bytes = b.Build();  // the parsed file points into these bytes
  const GgufFile file = ParseOk(bytes);
  const auto array = [&](const char* key) -> const wb::GgufArray& {
    const wb::GgufValue* v = file.FindValue(key);
    REQUIRE(v != nullptr);
    REQUIRE(v->type == GgufValueType::kArray);
    return v->array;
  };
  CHECK(array("a.u8").count == 3);
  CHECK(std::get<uint64_t>(array("a.u8").Scalar(2)) == 255);
  CHECK(std::get<int64_t>(array("a.i8").Scalar(0)) == -1);
  CHECK(std::get<uint64_t>(array("a.u16").Scalar(1)) == 65535);
  CHECK(std::get<int64_t>(array("a.i16").Scalar(0)) == -7);
  CHECK(std::get<uint64_t>(array("a.u32").Scalar(3)) == 40);
  CHECK(std::get<int64_t>(array("a.i32").Scalar(0)) == -10);
  CHECK(std::get<double>(array("a.f32").Scalar(1)) == -2.0);
  CHECK(std::get<bool>(array("a.bool").Scalar(0)) == true);
  CHECK(std::get<bool>(array("a.bool").Scalar(1)) == false);
  CHECK(array("a.string").strings.size() == 3);
  CHECK(std::get<std::string_view>(array("a.string").Scalar(2)) == "▁the");
  CHECK(std::get<uint64_t>(array("a.u64").Scalar(0)) == (1ull << 63));
  CHECK(std::get<int64_t>(array("a.i64").Scalar(0)) == -5);
  CHECK(std::get<double>(array("a.f64").Scalar(0)) == 0.1);
  CHECK(array("a.empty").count == 0);
  const wb::GgufArray& nested = array("a.nested");
  REQUIRE(nested.elementType == GgufValueType::kArray);
  REQUIRE(nested.arrays.size() == 3);
  CHECK(nested.arrays[0].count == 2);
  CHECK(std::get<uint64_t>(nested.arrays[0].Scalar(1)) == 2);
  CHECK(nested.arrays[1].count == 0);
  REQUIRE(nested.arrays[2].arrays.size() == 1);
  CHECK(nested.arrays[2].arrays[0].strings.at(0) == "deep");
}

TEST_CASE("versions 2 and 3 have the same layout; 1 and 4 are refused") {
  for (uint32_t version : {2u, 3u}) {
    GgufBuilder b(version);
    b.Key("general.name", String("x")).Tensor("w", 0, {2}, BytesOf(std::vector<float>{1, 2}));
    const Bytes bytes = b.Build();  // the parsed file points into these bytes
    const GgufFile file = ParseOk(bytes);
    CHECK(file.version() == version);
    CHECK(file.tensors().size() == 1);
  }
  CHECK(ParseError(GgufBuilder(1).Build()) ==
        "model.gguf: header field 'version': GGUF version 1 (32-bit counts) is not supported; convert the model "
        "again with a current llama.cpp");
  CHECK(ParseError(GgufBuilder(4).Build()) ==
        "model.gguf: header field 'version': version 4 is newer than the workbook reads (2 and 3)");
  CHECK(ParseError(GgufBuilder(0).Build()) == "model.gguf: header field 'version': 0 is not a GGUF version");
  CHECK(ParseError(GgufBuilder(0x03000000).Build()) ==
        "model.gguf: header field 'version': 0x03000000 looks byte-swapped: a big-endian GGUF, which the workbook "
        "does not read");
}

TEST_CASE("default alignment 32: the data section and every tensor start on a multiple of 32") {
  GgufBuilder b;
  b.Key("general.architecture", String("llama"))
      .Tensor("a", 0, {3}, BytesOf(std::vector<float>{1, 2, 3}))        // 12 bytes, padded to 32
      .Tensor("b", 0, {9}, Filler(36, 1))                               // 36 bytes, padded to 64
      .Tensor("c", 1, {5}, Filler(10, 2));
  const Bytes bytes = b.Build();
  const GgufFile file = ParseOk(bytes);
  CHECK(file.alignment() == 32);
  CHECK(file.dataOffset() % 32 == 0);
  CHECK(file.dataOffset() == b.fieldOffsets["data"]);
  CHECK(file.tensors()[0].offset == 0);
  CHECK(file.tensors()[1].offset == 32);
  CHECK(file.tensors()[2].offset == 96);
  for (const auto& t : file.tensors()) {
    CHECK((t.data.data() - View(bytes).data()) % 32 == 0);
  }
  CHECK(file.tensors()[0].data.data() == View(bytes).data() + file.dataOffset());  // a view, not a copy
}

TEST_CASE("a custom general.alignment lays out the data with it") {
  GgufBuilder b;
  b.Alignment(256).Tensor("a", 0, {3}, Filler(12, 1)).Tensor("b", 8, {32}, Filler(34, 2));
  const Bytes bytes = b.Build();
  const GgufFile file = ParseOk(bytes);
  CHECK(file.alignment() == 256);
  CHECK(file.dataOffset() == 256);
  CHECK(file.tensors()[1].offset == 256);
  CHECK(file.tensors()[1].data.data() == View(bytes).data() + 512);
}

TEST_CASE("a tensor of every supported type: type, ne, size and bytes") {
  struct Case {
    uint32_t type;
    std::vector<uint64_t> ne;
    size_t bytes;
  };
  const std::vector<Case> cases = {
      {0, {4, 3}, 48},          {1, {4, 3}, 24},         {30, {4, 3}, 24},         {8, {64, 2}, 4 * 34},
      {2, {32, 3}, 3 * 18},     {3, {32, 1, 2}, 2 * 20}, {12, {256, 2}, 2 * 144}, {14, {512}, 2 * 210},
  };
  GgufBuilder b;
  for (size_t i = 0; i < cases.size(); ++i) {
    b.Tensor("t" + std::to_string(i), cases[i].type, cases[i].ne, Filler(cases[i].bytes, static_cast<int>(i)));
  }
  const Bytes bytes = b.Build();
  const GgufFile file = ParseOk(bytes);
  REQUIRE(file.tensors().size() == cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const wb::GgufTensorInfo& t = file.tensors()[i];
    INFO("tensor ", t.name);
    CHECK(static_cast<uint32_t>(t.type) == cases[i].type);
    CHECK(t.ne == cases[i].ne);
    CHECK(t.byteSize == cases[i].bytes);
    CHECK(t.data.size() == cases[i].bytes);
    const Bytes expected = Filler(cases[i].bytes, static_cast<int>(i));
    CHECK(std::equal(t.data.begin(), t.data.end(), expected.begin()));
    CHECK(file.FindTensor(t.name) == &t);
  }
  CHECK(file.FindTensor("missing") == nullptr);
}

TEST_CASE("0-d and zero-size tensors are accepted, as ggml accepts them") {
  GgufBuilder b;
  b.Tensor("scalar", 0, {}, Filler(4, 1)).Tensor("empty", 8, {0, 7}, {}).Tensor("after", 0, {1}, Filler(4, 2));
  b.Tensor("no elements", 0, {1ull << 40, 1ull << 40, 0}, {});  // huge dimensions, but one is 0
  const Bytes bytes = b.Build();  // the parsed file points into these bytes
  const GgufFile file = ParseOk(bytes);
  CHECK(file.tensors()[3].byteSize == 0);
  CHECK(file.tensors()[0].ElementCount() == 1);
  CHECK(file.tensors()[1].ElementCount() == 0);
  CHECK(file.tensors()[1].byteSize == 0);
  CHECK(file.tensors()[2].offset == 32);
}

TEST_CASE("a file with no tensors needs no padding after its metadata") {
  GgufBuilder b;
  b.Key("general.name", String("abc"));
  const Bytes bytes = b.Build();
  CHECK(bytes.size() % 32 != 0);
  const GgufFile file = ParseOk(bytes);
  CHECK(file.dataOffset() == bytes.size());
}

TEST_CASE("the last tensor needs no trailing padding; the others are checked exactly") {
  GgufBuilder b;
  b.padLastTensor = false;
  b.Tensor("a", 0, {3}, Filler(12, 1)).Tensor("b", 0, {3}, Filler(12, 2));
  const Bytes unpadded = b.Build();
  CHECK(ParseOk(unpadded).tensors()[1].data.size() == 12);
  Bytes cut = unpadded;
  cut.pop_back();
  CHECK(ParseError(cut) == "model.gguf: tensor 'b': data ends at byte " + std::to_string(unpadded.size()) +
                               " but the file has " + std::to_string(cut.size()) + " bytes (truncated)");
}

TEST_CASE("offsets must be ggml's running sum of padded sizes") {
  GgufBuilder gap;
  gap.Tensor("a", 0, {3}, Filler(12, 1)).TensorAt("b", 0, {3}, Filler(12, 2), 64);
  CHECK(ParseError(gap.Build()) ==
        "model.gguf: tensor 'b': field 'offset' is 64, expected 32: ggml places each tensor right after the "
        "previous one, padded to the alignment (32)");
  GgufBuilder overlap;
  overlap.Tensor("a", 0, {16}, Filler(64, 1)).TensorAt("b", 0, {3}, Filler(12, 2), 32);
  CHECK(ParseError(overlap.Build()) ==
        "model.gguf: tensor 'b': field 'offset' is 32, expected 64: ggml places each tensor right after the "
        "previous one, padded to the alignment (32)");
  GgufBuilder first;
  first.TensorAt("a", 0, {3}, Filler(12, 1), 32);
  CHECK(ParseError(first.Build()) ==
        "model.gguf: tensor 'a': field 'offset' is 32, expected 0: ggml places each tensor right after the "
        "previous one, padded to the alignment (32)");
}

TEST_CASE("a truncated tensor names the tensor and both sizes") {
  GgufBuilder b;
  b.Key("general.architecture", String("llama")).Tensor("blk.0.attn_q.weight", 0, {64, 4}, Filler(1024, 3));
  Bytes bytes = b.Build();
  const size_t end = b.fieldOffsets["tensor0.data"] + 1024;
  bytes.resize(end - 100);
  CHECK(ParseError(bytes) == "model.gguf: tensor 'blk.0.attn_q.weight': data ends at byte " + std::to_string(end) +
                                 " but the file has " + std::to_string(end - 100) + " bytes (truncated)");
}

TEST_CASE("tensor table rules: name length, n_dims, block multiples, types, duplicates") {
  const std::string name63(63, 'n');
  CHECK(ParseOk(GgufBuilder().Tensor(name63, 0, {1}, Filler(4, 1)).Build()).tensors()[0].name == name63);
  CHECK(ParseError(GgufBuilder().Tensor(name63 + "x", 0, {1}, Filler(4, 1)).Build()) ==
        "model.gguf: tensor #0 '" + name63 + "x': the name is 64 bytes; ggml allows at most 63");
  CHECK(ParseError(GgufBuilder().Tensor("t", 0, {1, 1, 1, 1, 1}, Filler(4, 1)).Build()) ==
        "model.gguf: tensor 't': field 'n_dims' is 5; ggml allows at most 4");
  CHECK(ParseError(GgufBuilder().Tensor("q", 8, {48, 2}, Filler(102, 1)).Build()) ==
        "model.gguf: tensor 'q': field 'ne[0]' is 48, not a multiple of the Q8_0 block size 32");
  CHECK(ParseError(GgufBuilder().Tensor("k", 16, {256}, Filler(66, 1)).Build()) ==
        "model.gguf: tensor 'k': field 'type': type 16 (IQ2_XXS) is not supported; the workbook reads F32, F16, "
        "BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS");
  CHECK(ParseError(GgufBuilder().Tensor("blk.0.ffn_up.weight", 34, {256}, Filler(54, 1)).Build()) ==
        "model.gguf: tensor 'blk.0.ffn_up.weight': field 'type': type 34 (TQ1_0) is not supported; the workbook "
        "reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS");
  CHECK(ParseError(GgufBuilder().Tensor("d", 0, {1}, Filler(4, 1)).Tensor("d", 0, {1}, Filler(4, 1)).Build()) ==
        "model.gguf: tensor 'd': appears twice (tensors #0 and #1)");
  CHECK(ParseError(GgufBuilder().Tensor("big", 0, {1ull << 32, 1ull << 31}, {}).Build()) ==
        "model.gguf: tensor 'big': ne [4294967296, 2147483648] has more than 2^63-1 elements");
  CHECK(ParseError(GgufBuilder().Tensor("neg", 0, {~0ull}, {}).Build()) ==
        "model.gguf: tensor 'neg': field 'ne[0]' is 18446744073709551615, negative as ggml's int64");
}

TEST_CASE("metadata rules: general.alignment, duplicates, empty keys, bools") {
  CHECK(ParseError(GgufBuilder().Key("general.alignment", U64(32)).Build()) ==
        "model.gguf: key 'general.alignment': is a u64, expected u32");
  CHECK(ParseError(GgufBuilder().Alignment(48).Build()) ==
        "model.gguf: key 'general.alignment': 48 is not a power of two");
  CHECK(ParseError(GgufBuilder().Alignment(0).Build()) == "model.gguf: key 'general.alignment': 0 is not a power of two");
  CHECK(ParseOk(GgufBuilder().Alignment(1).Tensor("t", 0, {1}, Filler(4, 1)).Build()).alignment() == 1);
  CHECK(ParseError(GgufBuilder().Key("k", U8(1)).Key("k", U8(2)).Build()) ==
        "model.gguf: key 'k': appears twice (entries #0 and #1)");
  CHECK(ParseError(GgufBuilder().Key("", String("abc")).Build()) == "model.gguf: key #0: the name is empty");
  CHECK(ParseError(GgufBuilder().Key("b", Scalar<uint8_t>(7, 2)).Build()) ==
        "model.gguf: key 'b': bool byte at 37 is 2, expected 0 or 1");
  CHECK(ParseError(GgufBuilder().Key("t", Scalar<uint8_t>(13, 0)).Build()) ==
        "model.gguf: key 't': value type 13 is not a GGUF type (0 to 12)");
}

TEST_CASE("arrays nest up to kGgufMaxArrayDepth levels") {
  GgufPayload value = Array<uint8_t>(0, {1});
  for (uint32_t depth = 1; depth < wb::kGgufMaxArrayDepth; ++depth) value = ArrayOfArrays({value});
  CHECK(ParseOk(GgufBuilder().Key("deep", value).Build()).FindValue("deep") != nullptr);
  value = ArrayOfArrays({value});
  const std::string error = ParseError(GgufBuilder().Key("deep", value).Build());
  CHECK(error.rfind("model.gguf: key 'deep' element 0 element 0", 0) == 0);
  CHECK(error.find(": arrays nest more than 8 deep") != std::string::npos);
}

TEST_CASE("Open maps a file from disk and names its path") {
  GgufBuilder b;
  b.Key("general.name", String("on disk")).Tensor("w", 0, {2}, BytesOf(std::vector<float>{3, 4}));
  const Bytes bytes = b.Build();
  const std::string path = "/tmp/wb-test-gguf-open-" + std::to_string(::getpid()) + ".gguf";
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  {
    auto file = GgufFile::Open(path);
    REQUIRE(file.ok());
    CHECK(file->name() == path);
    GgufFile moved = std::move(*file);  // the mapping moves with the object
    float second = 0;
    std::memcpy(&second, moved.tensors()[0].data.data() + 4, 4);
    CHECK(second == 4.0f);
  }
  std::remove(path.c_str());
  CHECK(GgufFile::Open(path).error().message == path + ": no such file or directory");
}

}  // namespace test_gguf
