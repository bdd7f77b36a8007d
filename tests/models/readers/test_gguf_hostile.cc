// GGUF reader on hostile input: a valid file cut at every byte, single-byte corruptions of
// each header field (the error names the field), absurd counts and lengths (they fail at
// once, before any allocation), and every byte of a file flipped in three ways.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "model/files/gguf.h"
#include "model/files/tensor_view.h"
#include "tests/models/readers/model_file_builders.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_gguf_hostile {

using namespace wb::test;

namespace {

// A small file with every value type, a nested array and three tensors; the last one is not
// padded, so that every proper prefix of the file is invalid.
GgufBuilder SmallFile() {
  GgufBuilder b;
  b.padLastTensor = false;
  b.Key("general.architecture", String("llama"))
      .Key("u8", U8(1)).Key("i8", I8(-1)).Key("u16", U16(2)).Key("i16", I16(-2)).Key("u32", U32(3))
      .Key("i32", I32(-3)).Key("f32", F32(0.5f)).Key("bool", Bool(true)).Key("u64", U64(4)).Key("i64", I64(-4))
      .Key("f64", F64(0.25)).Key("strings", StringArray({"a", "bc"}))
      .Key("nested", ArrayOfArrays({Array<uint16_t>(2, {1, 2}), StringArray({"x"})}))
      .Tensor("token_embd.weight", 8, {32, 2}, Bytes(68, std::byte{0x11}))
      .Tensor("output_norm.weight", 0, {3}, Bytes(12, std::byte{0}))
      .Tensor("blk.0.attn_q.weight", 1, {4, 2}, Bytes(16, std::byte{0x3C}));
  return b;
}

std::string ParseError(const Bytes& bytes) {
  auto file = wb::GgufFile::Parse(View(bytes), "model.gguf");
  if (file.ok()) return "(parsed)";
  return file.error().message;
}

}  // namespace

TEST_CASE("the small file is valid") {
  GgufBuilder b = SmallFile();
  CHECK(ParseError(b.Build()) == "(parsed)");
}

TEST_CASE("cutting the file at every byte gives an error naming the file, never a crash") {
  GgufBuilder b = SmallFile();
  const Bytes full = b.Build();
  for (size_t length = 0; length < full.size(); ++length) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<long>(length));
    const std::string error = ParseError(prefix);
    INFO("cut at ", length, " of ", full.size(), ": ", error);
    REQUIRE(error.rfind("model.gguf: ", 0) == 0);
    // Every cut inside the header, the metadata, the tensor infos or the data says it is
    // truncated or runs past the end of the file.
    const bool saysTruncated = error.find("truncated") != std::string::npos ||
                               error.find("cannot fit") != std::string::npos ||
                               error.find("too few for a GGUF header") != std::string::npos;
    CHECK(saysTruncated);
  }
}

TEST_CASE("exact texts of truncation inside each part of the file") {
  GgufBuilder b = SmallFile();
  const Bytes full = b.Build();
  const auto cut = [&](size_t length) { return ParseError(Bytes(full.begin(), full.begin() + static_cast<long>(length))); };
  CHECK(cut(3) == "model.gguf: header field 'magic': the file has 3 bytes, too few for a GGUF header (24 bytes)");
  CHECK(cut(6) == "model.gguf: header field 'version': needs 4 bytes at byte 4, but the file ends at byte 6 (truncated)");
  CHECK(cut(20) ==
        "model.gguf: header field 'kv_count': needs 8 bytes at byte 16, but the file ends at byte 20 (truncated)");
  // (A cut early in the metadata already fails the count check: "3 tensors cannot fit".)
  const size_t typeAt = b.fieldOffsets["kv10.type"];
  CHECK(cut(typeAt + 2) == "model.gguf: key 'i64' (value type): needs 4 bytes at byte " + std::to_string(typeAt) +
                               ", but the file ends at byte " + std::to_string(typeAt + 2) + " (truncated)");
  const size_t f64At = b.fieldOffsets["kv11.value"];
  CHECK(cut(f64At + 5) == "model.gguf: key 'f64' (f64 value): needs 8 bytes at byte " + std::to_string(f64At) +
                              ", but the file ends at byte " + std::to_string(f64At + 5) + " (truncated)");
  const size_t nameAt = b.fieldOffsets["tensor1.name"];
  CHECK(cut(nameAt + 10) == "model.gguf: tensor #1 name: a string of 18 bytes at byte " + std::to_string(nameAt + 8) +
                                " runs past the end of the file (" + std::to_string(nameAt + 10) +
                                " bytes; truncated or corrupted)");
  const size_t dataAt = b.fieldOffsets["data"];
  CHECK(cut(dataAt - 1) == "model.gguf: data section: starts at byte " + std::to_string(dataAt) +
                               " (the end of the tensor infos, " + std::to_string(b.fieldOffsets["tensor2.offset"] + 8) +
                               ", padded to 32), but the file has " + std::to_string(dataAt - 1) + " bytes (truncated)");
}

TEST_CASE("a single corrupted byte in a header field gives an error naming that field") {
  GgufBuilder b = SmallFile();
  const Bytes good = b.Build();
  struct Corruption {
    std::string field;  // key of fieldOffsets
    size_t byte;        // which byte of the field
    uint8_t value;
    std::string named;  // what the message must contain
  };
  const std::vector<Corruption> corruptions = {
      {"magic", 0, 'X', "header field 'magic': expected \"GGUF\" (47 47 55 46), found 58 47 55 46"},
      {"magic", 3, 'G', "header field 'magic'"},
      {"version", 0, 9, "header field 'version': version 9 is newer"},
      {"version", 0, 1, "header field 'version': GGUF version 1"},
      {"version", 0, 0, "header field 'version': 0 is not a GGUF version"},
      {"tensor_count", 7, 0x10, "header field 'tensor_count': 1152921504606846979 tensors is more than the workbook accepts (1048576)"},
      {"tensor_count", 0, 200, "header field 'tensor_count': 200 tensors cannot fit"},
      {"kv_count", 4, 1, "header field 'kv_count': 4294967310 metadata entries is more than the workbook accepts"},
      {"kv_count", 1, 1, "header field 'kv_count': 270 metadata entries cannot fit in the "},
      {"kv1.key", 0, 0xFF, "': value type 1701707776 is not a GGUF type (0 to 12)"},  // reads 255 bytes of key
      {"kv1.key", 7, 0x80, "key #1 name: a string of 9223372036854775810 bytes"},
      {"kv1.type", 0, 0x2A, "key 'u8': value type 42 is not a GGUF type (0 to 12)"},
      {"kv8.value", 0, 5, "key 'bool': bool byte at"},
      {"kv12.value", 0, 99, "key 'strings': array element type 99 is not a GGUF type (0 to 12)"},
      {"kv12.value", 11, 0x40, "key 'strings': an array of 4611686018427387906 string values cannot fit"},
      {"kv13.value", 12, 0x17, "key 'nested' element 0: array element type 23 is not a GGUF type"},
      {"tensor0.name", 0, 64, "tensor #0 '"},
      {"tensor0.n_dims", 0, 5, "tensor 'token_embd.weight': field 'n_dims' is 5; ggml allows at most 4"},
      {"tensor0.ne0", 0, 33, "tensor 'token_embd.weight': field 'ne[0]' is 33, not a multiple of the Q8_0 block size 32"},
      {"tensor0.ne0", 7, 0x80, "tensor 'token_embd.weight': field 'ne[0]' is 9223372036854775840, negative"},
      {"tensor0.type", 0, 16, "tensor 'token_embd.weight': field 'type': type 16 (IQ2_XXS) is not supported"},
      {"tensor1.offset", 0, 0x61, "tensor 'output_norm.weight': field 'offset' is 97, expected 96"},
      {"tensor2.ne0", 0, 200, "tensor 'blk.0.attn_q.weight': data ends at byte"},
  };
  for (const Corruption& c : corruptions) {
    Bytes bytes = good;
    REQUIRE(b.fieldOffsets.count(c.field) == 1);
    bytes[b.fieldOffsets[c.field] + c.byte] = static_cast<std::byte>(c.value);
    const std::string error = ParseError(bytes);
    INFO(c.field, " byte ", c.byte, " := ", int(c.value));
    CHECK(error.rfind("model.gguf: ", 0) == 0);
    CHECK(error.find(c.named) != std::string::npos);
    if (error.find(c.named) == std::string::npos) MESSAGE(error);
  }
}

TEST_CASE("hostile counts and lengths fail at once, naming the field") {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  ByteWriter header;
  header.PutBytes(std::as_bytes(std::span("GGUF", 4))).Put<uint32_t>(3);
  {
    ByteWriter w = header;
    w.Put<uint64_t>(1ull << 60).Put<uint64_t>(0);
    CHECK(ParseError(w.bytes()) ==
          "model.gguf: header field 'tensor_count': 1152921504606846976 tensors is more than the workbook accepts "
          "(1048576)");
  }
  {
    ByteWriter w = header;
    w.Put<uint64_t>(1000).Put<uint64_t>(0).PutBytes(Bytes(100));
    CHECK(ParseError(w.bytes()) ==
          "model.gguf: header field 'tensor_count': 1000 tensors cannot fit in the 100 bytes after the header (a "
          "tensor info takes at least 24 bytes)");
  }
  {
    ByteWriter w = header;
    w.Put<uint64_t>(0).Put<uint64_t>(~0ull).Put<uint64_t>(0);
    CHECK(ParseError(w.bytes()) ==
          "model.gguf: header field 'kv_count': 18446744073709551615 metadata entries is more than the workbook "
          "accepts (1048576)");
  }
  {  // a key whose length is 2^62
    ByteWriter w = header;
    w.Put<uint64_t>(0).Put<uint64_t>(1).Put<uint64_t>(1ull << 62).PutBytes(Bytes(16));
    CHECK(ParseError(w.bytes()) ==
          "model.gguf: key #0 name: a string of 4611686018427387904 bytes at byte 32 runs past the end of the file "
          "(48 bytes; truncated or corrupted)");
  }
  {  // an array of 2^61 u64
    ByteWriter w = header;
    w.Put<uint64_t>(0).Put<uint64_t>(1).PutString("a").Put<uint32_t>(9).Put<uint32_t>(10).Put<uint64_t>(1ull << 61);
    CHECK(ParseError(w.bytes()) ==
          "model.gguf: key 'a': an array of 2305843009213693952 u64 values needs more than the 0 bytes left at byte "
          "49 (truncated or corrupted)");
  }
  {  // an array of 2^60 arrays, each claiming more
    ByteWriter w = header;
    w.Put<uint64_t>(0).Put<uint64_t>(1).PutString("a").Put<uint32_t>(9).Put<uint32_t>(9).Put<uint64_t>(1ull << 60);
    w.PutBytes(Bytes(64));
    CHECK(ParseError(w.bytes()) ==
          "model.gguf: key 'a': an array of 1152921504606846976 array values cannot fit in the 64 bytes left at byte "
          "49 (truncated or corrupted)");
  }
  {  // a tensor of 2^61 F32 values: the size (2^63 bytes) is representable, the file is not
    GgufBuilder b;
    b.Tensor("huge", 0, {1ull << 30, 1ull << 31}, Bytes(32));
    const std::string error = ParseError(b.Build());
    CHECK(error.rfind("model.gguf: tensor 'huge': data ends at byte ", 0) == 0);
    CHECK(error.find("(truncated)") != std::string::npos);
  }
  {  // 2^62 F32 values: the element count fits an int64, the byte size (2^64) does not fit u64
    GgufBuilder b;
    b.Tensor("wide", 0, {1ull << 32, 1ull << 30}, {});
    CHECK(ParseError(b.Build()) == "model.gguf: tensor 'wide': ne [4294967296, 1073741824] of type F32 needs more "
                                   "than 2^64 bytes");
  }
  {  // 2^20 + 1 empty nested arrays: present in the file, but more than the cap
    const uint64_t count = wb::kGgufMaxNestedArrays + 1;
    ByteWriter w = header;
    w.Put<uint64_t>(0).Put<uint64_t>(1).PutString("a").Put<uint32_t>(9).Put<uint32_t>(9).Put<uint64_t>(count);
    w.bytes().resize(w.size() + count * 12);
    CHECK(ParseError(w.bytes()) == "model.gguf: key 'a': the file nests more than 1048576 arrays inside arrays");
  }
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  CHECK(elapsed.count() < 1000);
}

TEST_CASE("every byte flipped three ways: an error naming the file, or a file that fully works") {
  GgufBuilder b = SmallFile();
  const Bytes good = b.Build();
  int parsed = 0, refused = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      Bytes bytes = good;
      bytes[at] ^= static_cast<std::byte>(mask);
      auto file = wb::GgufFile::Parse(View(bytes), "model.gguf");
      if (!file.ok()) {
        ++refused;
        INFO("byte ", at, " ^ ", int(mask), ": ", file.error().message);
        REQUIRE(file.error().message.rfind("model.gguf: ", 0) == 0);
        continue;
      }
      ++parsed;  // e.g. a changed value or tensor byte: everything must still be readable
      for (const auto& t : file->tensors()) {
        const auto view = wb::ViewTensor(*file, t);
        std::vector<float> out(view.RowCount() * view.RowLength());
        REQUIRE(wb::DequantizeRows(view, 0, view.RowCount(), out).ok());
      }
    }
  }
  CHECK(parsed > 0);
  CHECK(refused > 0);
}

}  // namespace test_gguf_hostile
