// safetensors reader: valid files (dtypes, shapes, offsets, metadata, views into the bytes),
// every rule of the header with its exact error text, and a file cut at every byte.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/files/safetensors.h"
#include "tests/models/readers/model_file_builders.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_safetensors {

using namespace wb::test;
using wb::SafetensorsDtype;
using wb::SafetensorsFile;

namespace {

SafetensorsFile ParseOk(const Bytes& bytes) {
  auto file = SafetensorsFile::Parse(View(bytes), "model.safetensors");
  if (!file.ok()) FAIL(file.error().message);
  return std::move(*file);
}

std::string ParseError(const Bytes& bytes) {
  auto file = SafetensorsFile::Parse(View(bytes), "model.safetensors");
  if (file.ok()) return "(parsed)";
  return file.error().message;
}

// A file from a header and a buffer of `bufferBytes` zero bytes.
Bytes WithHeader(const std::string& header, size_t bufferBytes) { return SafetensorsRaw(header, Bytes(bufferBytes)); }

}  // namespace

TEST_CASE("a valid file: tensors in file order, dtypes, shapes, spans into the buffer, metadata") {
  const std::vector<float> norm = {1.0f, 2.0f};
  const Bytes bytes = BuildSafetensors({{"model.layers.0.mlp.up_proj.weight", "BF16", {3, 2}, Bytes(12, std::byte{7})},
                                        {"model.norm.weight", "F32", {2}, BytesOf(norm)},
                                        {"position_ids", "I64", {1, 3}, Bytes(24, std::byte{1})}},
                                       {{"format", "pt"}});
  const SafetensorsFile file = ParseOk(bytes);
  REQUIRE(file.tensors().size() == 3);
  CHECK(file.metadata().at("format") == "pt");
  const auto* up = file.FindTensor("model.layers.0.mlp.up_proj.weight");
  REQUIRE(up != nullptr);
  CHECK(up->dtype == SafetensorsDtype::kBF16);
  CHECK(up->shape == std::vector<uint64_t>{3, 2});
  CHECK(up->begin == 0);
  CHECK(up->end == 12);
  CHECK(up->ElementCount() == 6);
  CHECK(up->data.data() == View(bytes).data() + file.bufferOffset());  // a view, not a copy
  const auto* n = file.FindTensor("model.norm.weight");
  REQUIRE(n != nullptr);
  float second = 0;
  std::memcpy(&second, n->data.data() + 4, 4);
  CHECK(second == 2.0f);
  CHECK(file.tensors()[0].name == "model.layers.0.mlp.up_proj.weight");  // sorted by offset
  CHECK(file.tensors()[2].name == "position_ids");
  CHECK(file.FindTensor("absent") == nullptr);
  CHECK(wb::WeightTypeOf(SafetensorsDtype::kBF16) == wb::TensorType::kBF16);
  CHECK_FALSE(wb::WeightTypeOf(SafetensorsDtype::kI64).has_value());
}

TEST_CASE("every dtype is listed with its element size") {
  struct Case {
    const char* name;
    uint32_t bytes;
  };
  const std::vector<Case> cases = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
                                   {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
                                   {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  std::vector<SafetensorsSpec> specs;
  for (const Case& c : cases) specs.push_back({std::string("t.") + c.name, c.name, {2}, Bytes(2 * c.bytes)});
  const Bytes bytes = BuildSafetensors(specs);  // the parsed file points into these bytes
  const SafetensorsFile file = ParseOk(bytes);
  for (const Case& c : cases) {
    const auto* t = file.FindTensor(std::string("t.") + c.name);
    REQUIRE(t != nullptr);
    CHECK(wb::SafetensorsDtypeName(t->dtype) == c.name);
    CHECK(wb::SafetensorsDtypeBytes(t->dtype) == c.bytes);
  }
}

TEST_CASE("0-d and empty tensors are allowed") {
  const Bytes bytes =
      BuildSafetensors({{"scalar", "F32", {}, Bytes(4)}, {"empty", "F16", {0, 5}, {}}, {"last", "U8", {1}, Bytes(1)}});
  const SafetensorsFile file = ParseOk(bytes);
  CHECK(file.FindTensor("scalar")->ElementCount() == 1);
  CHECK(file.FindTensor("empty")->ElementCount() == 0);
  CHECK(file.FindTensor("empty")->data.empty());
}

TEST_CASE("header length N: at least 8 bytes, at most the file, at most 100 MB") {
  CHECK(ParseError(Bytes(5)) ==
        "model.safetensors: header field 'N' (header length): needs 8 bytes, but the file has 5 (truncated)");
  ByteWriter w;
  w.Put<uint64_t>(1000).PutBytes(std::as_bytes(std::span("{}", 2)));
  CHECK(ParseError(w.bytes()) == "model.safetensors: header field 'N' (header length): 1000 is larger than the 2 "
                                 "bytes after it (truncated, or not a safetensors file)");
  ByteWriter big;
  big.Put<uint64_t>(100'000'001);
  big.bytes().resize(8 + 100'000'001, std::byte{' '});
  big.bytes()[8] = std::byte{'{'};
  CHECK(ParseError(big.bytes()) == "model.safetensors: header field 'N' (header length): 100000001 exceeds the "
                                   "100000000-byte limit of the reference reader");
}

TEST_CASE("the JSON header: begins with '{', parses, is an object, has unique names") {
  CHECK(ParseError(WithHeader(" {}", 0)) == "model.safetensors: header: the JSON does not begin with '{'");
  CHECK(ParseError(WithHeader("", 0)) == "model.safetensors: header: the JSON does not begin with '{'");
  const std::string broken = ParseError(WithHeader("{\"a\": ", 0));
  CHECK(broken.rfind("model.safetensors: header: invalid JSON: [json.exception.parse_error.101]", 0) == 0);
  CHECK(ParseError(WithHeader("{}   ", 0)) == "(parsed)");  // trailing spaces are padding
  CHECK(ParseError(WithHeader("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                              "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                              2)) == "model.safetensors: tensor 'a': appears twice in the header");
  std::string deep = "{\"a\":";
  for (int i = 0; i < 20; ++i) deep += "[";
  for (int i = 0; i < 20; ++i) deep += "]";
  deep += "}";
  CHECK(ParseError(WithHeader(deep, 0)) == "model.safetensors: header: JSON nested more than 16 levels deep");
}

TEST_CASE("entry fields: dtype, shape, data_offsets, each with its message") {
  const auto entry = [](const std::string& body, size_t buffer) { return ParseError(WithHeader("{\"w\":" + body + "}", buffer)); };
  CHECK(entry("[1]", 0) == "model.safetensors: tensor 'w': the entry is a array, expected an object");
  CHECK(entry(R"({"shape":[1],"data_offsets":[0,4]})", 4) == "model.safetensors: tensor 'w': field 'dtype' is missing");
  CHECK(entry(R"({"dtype":4,"shape":[1],"data_offsets":[0,4]})", 4) ==
        "model.safetensors: tensor 'w': field 'dtype' is not a string");
  CHECK(entry(R"({"dtype":"F4","shape":[1],"data_offsets":[0,1]})", 1) ==
        "model.safetensors: tensor 'w': field 'dtype': \"F4\" is not a safetensors dtype the workbook knows");
  CHECK(entry(R"({"dtype":"F32","data_offsets":[0,4]})", 4) == "model.safetensors: tensor 'w': field 'shape' is missing");
  CHECK(entry(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", 4) ==
        "model.safetensors: tensor 'w': field 'shape' element 0 is not a non-negative integer");
  CHECK(entry(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})", 4) ==
        "model.safetensors: tensor 'w': field 'shape' element 0 is not a non-negative integer");
  CHECK(entry(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})", 4) ==
        "model.safetensors: tensor 'w': field 'shape' [4294967296, 4294967296] has more than 2^64 elements");
  CHECK(entry(R"({"dtype":"F32","shape":[4294967296,1073741824],"data_offsets":[0,4]})", 4) ==
        "model.safetensors: tensor 'w': field 'shape' [4294967296, 1073741824] of F32 needs more than 2^64 bytes");
  CHECK(entry(R"({"dtype":"F32","shape":[1]})", 4) == "model.safetensors: tensor 'w': field 'data_offsets' is missing");
  CHECK(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[0]})", 4) ==
        "model.safetensors: tensor 'w': field 'data_offsets' is not two non-negative integers [begin, end]");
  CHECK(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})", 4) ==
        "model.safetensors: tensor 'w': field 'data_offsets' [4, 0) ends before it begins");
  CHECK(entry(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,20]})", 20) ==
        "model.safetensors: tensor 'w': field 'data_offsets' [0, 20) holds 20 bytes, but shape [2, 3] of F32 needs 24");
  CHECK(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 5) ==
        "model.safetensors: tensor 'w': data ends at byte 70 but the file has 67 bytes (truncated)");
  CHECK(ParseError(WithHeader(R"({"__metadata__":{"format":1}})", 0)) ==
        "model.safetensors: header field '__metadata__' entry 'format': is a number, expected a string");
  CHECK(ParseError(WithHeader(R"({"__metadata__":[]})", 0)) ==
        "model.safetensors: header field '__metadata__': is not an object of strings");
  CHECK(ParseError(WithHeader("[1, 2]", 0)) == "model.safetensors: header: the JSON does not begin with '{'");
}

TEST_CASE("the tensors must tile the byte buffer: no hole, no overlap, nothing after") {
  const std::string a = R"("a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]})";
  CHECK(ParseError(WithHeader("{" + a + R"(,"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})", 8)) ==
        "model.safetensors: tensor 'b': data_offsets begin at 6, but the previous tensor ('a') ends at 4: a hole "
        "(the tensors must tile the byte buffer)");
  CHECK(ParseError(WithHeader("{" + a + R"(,"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", 4)) ==
        "model.safetensors: tensor 'b': data_offsets begin at 2, but the previous tensor ('a') ends at 4: an "
        "overlap (the tensors must tile the byte buffer)");
  CHECK(ParseError(WithHeader(R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", 4)) ==
        "model.safetensors: tensor 'b': data_offsets begin at 2, but the buffer starts at 0: a hole (the tensors "
        "must tile the byte buffer)");
  CHECK(ParseError(WithHeader("{" + a + "}", 7)) ==
        "model.safetensors: byte buffer: the tensors cover 4 bytes, but the buffer after the header has 7: 3 stray "
        "bytes at the end");
  // The order in the header does not matter, only the offsets.
  CHECK(ParseError(WithHeader(R"({"z":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                              R"("a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                              8)) == "(parsed)");
}

TEST_CASE("cutting a valid file at every byte gives an error naming the file") {
  const Bytes full = BuildSafetensors({{"a", "F16", {3}, Bytes(6)}, {"b", "F32", {2, 2}, Bytes(16)}}, {{"format", "pt"}});
  for (size_t length = 0; length < full.size(); ++length) {
    const std::string error = ParseError(Bytes(full.begin(), full.begin() + static_cast<long>(length)));
    INFO("cut at ", length, ": ", error);
    REQUIRE(error.rfind("model.safetensors: ", 0) == 0);
  }
  CHECK(ParseError(full) == "(parsed)");
}

}  // namespace test_safetensors
