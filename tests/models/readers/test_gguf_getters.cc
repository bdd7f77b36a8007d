// Typed metadata getters: accepted conversions, and the exact texts of every refusal.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/files/gguf.h"
#include "tests/models/readers/model_file_builders.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_gguf_getters {

using namespace wb::test;

namespace {

const Bytes& Sample() {
  static const Bytes bytes = [] {
    GgufBuilder b;
    b.Key("general.architecture", String("llama"))
        .Key("u8", U8(7)).Key("u16", U16(700)).Key("u32", U32(70000)).Key("i32.pos", I32(12)).Key("i32.neg", I32(-1))
        .Key("u64.small", U64(4096)).Key("u64.big", U64(1ull << 40)).Key("i64", I64(-5)).Key("i8", I8(-3))
        .Key("f32", F32(1e-5f)).Key("f64", F64(0.1)).Key("bool", Bool(true))
        .Key("layers", Array<uint32_t>(4, {32, 32, 8})).Key("i32s", Array<int32_t>(5, {1, -2}))
        .Key("u16s", Array<uint16_t>(2, {3, 4})).Key("floats", Array<float>(6, {0.5f, 2.0f}))
        .Key("doubles", Array<double>(12, {0.25})).Key("tokens", StringArray({"a", "b"}))
        .Key("nested", ArrayOfArrays({Array<uint32_t>(4, {1})}));
    return b.Build();
  }();
  return bytes;
}

wb::GgufFile File() {
  auto file = wb::GgufFile::Parse(View(Sample()), "model.gguf");
  REQUIRE(file.ok());
  return std::move(*file);
}

}  // namespace

TEST_CASE("GetU32 takes any integer type whose value fits") {
  const auto f = File();
  CHECK(*f.GetU32("u8") == 7);
  CHECK(*f.GetU32("u16") == 700);
  CHECK(*f.GetU32("u32") == 70000);
  CHECK(*f.GetU32("i32.pos") == 12);
  CHECK(*f.GetU32("u64.small") == 4096);
  CHECK(f.GetU32("i32.neg").error().message == "model.gguf: key 'i32.neg' (i32): -1 does not fit in a u32");
  CHECK(f.GetU32("u64.big").error().message == "model.gguf: key 'u64.big' (u64): 1099511627776 does not fit in a u32");
  CHECK(f.GetU32("general.architecture").error().message ==
        "model.gguf: key 'general.architecture' is a string, expected u32");
  CHECK(f.GetU32("f32").error().message == "model.gguf: key 'f32' is a f32, expected u32");
  CHECK(f.GetU32("layers").error().message == "model.gguf: key 'layers' is an array of u32, expected u32");
  CHECK(f.GetU32("llama.block_count").error().message == "model.gguf: key 'llama.block_count' is missing");
  CHECK(f.GetU32("llama.block_count").error().kind == wb::ErrorKind::kBadData);
}

TEST_CASE("GetU64 and GetI64 take integers of any width and sign that fit") {
  const auto f = File();
  CHECK(*f.GetU64("u64.big") == (1ull << 40));
  CHECK(*f.GetU64("u8") == 7);
  CHECK(f.GetU64("i64").error().message == "model.gguf: key 'i64' (i64): -5 is negative");
  CHECK(*f.GetI64("i64") == -5);
  CHECK(*f.GetI64("i8") == -3);
  CHECK(*f.GetI64("u64.big") == (1ll << 40));
  CHECK(f.GetI64("bool").error().message == "model.gguf: key 'bool' is a bool, expected i64");
}

TEST_CASE("GetF32 takes f32 and f64; GetBool and GetString only their own type") {
  const auto f = File();
  CHECK(*f.GetF32("f32") == 1e-5f);
  CHECK(*f.GetF32("f64") == 0.1f);  // rounded to the nearest f32
  CHECK(f.GetF32("u32").error().message == "model.gguf: key 'u32' is a u32, expected f32");
  CHECK(*f.GetBool("bool") == true);
  CHECK(f.GetBool("u8").error().message == "model.gguf: key 'u8' is a u8, expected bool");
  CHECK(*f.GetString("general.architecture") == "llama");
  CHECK(f.GetString("tokens").error().message == "model.gguf: key 'tokens' is an array of string, expected string");
}

TEST_CASE("array getters convert element by element") {
  const auto f = File();
  CHECK(*f.GetU32Array("layers") == std::vector<uint32_t>{32, 32, 8});
  CHECK(*f.GetU32Array("u16s") == std::vector<uint32_t>{3, 4});
  CHECK(f.GetU32Array("i32s").error().message == "model.gguf: key 'i32s' element 1: -2 does not fit in a u32");
  CHECK(*f.GetI64Array("i32s") == std::vector<int64_t>{1, -2});
  CHECK(*f.GetF32Array("floats") == std::vector<float>{0.5f, 2.0f});
  CHECK(*f.GetF32Array("doubles") == std::vector<float>{0.25f});
  CHECK(*f.GetStringArray("tokens") == std::vector<std::string>{"a", "b"});
  CHECK(f.GetStringArray("layers").error().message ==
        "model.gguf: key 'layers' is an array of u32, expected an array of string");
  CHECK(f.GetU32Array("u32").error().message == "model.gguf: key 'u32' is a u32, expected an array of u32");
  CHECK(f.GetU32Array("nested").error().message ==
        "model.gguf: key 'nested' is an array of arrays, expected an array of u32");
  CHECK(f.GetF32Array("absent").error().message == "model.gguf: key 'absent' is missing");
}

TEST_CASE("the ...Or getters fall back only when the key is missing") {
  const auto f = File();
  CHECK(*f.GetU32Or("absent", 9) == 9);
  CHECK(*f.GetU32Or("u8", 9) == 7);
  CHECK(f.GetU32Or("f32", 9).error().message == "model.gguf: key 'f32' is a f32, expected u32");
  CHECK(*f.GetF32Or("absent", 10000.0f) == 10000.0f);
  CHECK(*f.GetBoolOr("absent", true) == true);
  CHECK(*f.GetStringOr("absent", "llama") == "llama");
  CHECK(f.GetStringOr("u8", "x").error().message == "model.gguf: key 'u8' is a u8, expected string");
  CHECK(f.HasKey("u8"));
  CHECK_FALSE(f.HasKey("absent"));
}

}  // namespace test_gguf_getters
