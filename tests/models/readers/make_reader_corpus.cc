// Writes the seed corpus of the two reader fuzz targets (not a test; run by hand):
//   make_reader_corpus OUT_DIR   -> OUT_DIR/gguf/seed-*.gguf, OUT_DIR/safetensors/seed-*
// The seeds are small valid files that between them use every GGUF value type, nested arrays,
// both versions, two alignments, every tensor type and every safetensors dtype, plus index
// files. Fuzzing found inputs are added to the same folders under other names.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "model_file_builders.h"

namespace {

using namespace wb::test;

void Write(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Deterministic filler bytes (any bytes are valid quantized blocks).
Bytes Filler(size_t count, uint32_t seed) {
  Bytes out(count);
  uint32_t state = seed * 2654435761u + 1;
  for (auto& b : out) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<std::byte>(state >> 24);
  }
  return out;
}

// Half-precision ones and small values, so F16 data is finite.
Bytes HalfData(size_t count) {
  std::vector<uint16_t> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<uint16_t>(0x3C00 + (i % 64));
  return BytesOf(values);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_reader_corpus OUT_DIR\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path gguf = fs::path(argv[1]) / "gguf";
  const fs::path st = fs::path(argv[1]) / "safetensors";
  fs::create_directories(gguf);
  fs::create_directories(st);

  // Every metadata value type, nested arrays, one small F32 tensor.
  {
    GgufBuilder b(3);
    b.Key("general.architecture", String("llama"))
        .Key("t.u8", U8(200)).Key("t.i8", I8(-5)).Key("t.u16", U16(60000)).Key("t.i16", I16(-30000))
        .Key("t.u32", U32(4000000000u)).Key("t.i32", I32(-2)).Key("t.f32", F32(0.5f)).Key("t.bool", Bool(true))
        .Key("t.u64", U64(1ull << 40)).Key("t.i64", I64(-(1ll << 40))).Key("t.f64", F64(0.25))
        .Key("t.strings", StringArray({"a", "bc", ""}))
        .Key("t.u32s", Array<uint32_t>(4, {1, 2, 3}))
        .Key("t.nested", ArrayOfArrays({Array<uint8_t>(0, {1, 2}), StringArray({"x"})}))
        .Tensor("w", 0, {4, 2}, BytesOf(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
    Write(gguf / "seed-all-value-types.gguf", b.Build());
  }
  // Version 2, no tensors.
  {
    GgufBuilder b(2);
    b.Key("general.name", String("v2"));
    Write(gguf / "seed-v2-no-tensors.gguf", b.Build());
  }
  // A tensor of every type, custom alignment 64.
  {
    GgufBuilder b(3);
    b.Alignment(64)
        .Tensor("f32", 0, {8}, Filler(32, 1))
        .Tensor("f16", 1, {8, 2}, HalfData(16))
        .Tensor("q4_0", 2, {32, 2}, Filler(36, 2))
        .Tensor("q4_1", 3, {32}, Filler(20, 3))
        .Tensor("q5_0", 6, {32}, Filler(22, 24))
        .Tensor("q5_1", 7, {32}, Filler(24, 25))
        .Tensor("q8_0", 8, {64}, Filler(68, 4))
        .Tensor("q2_k", 10, {256}, Filler(84, 26))
        .Tensor("q3_k", 11, {256}, Filler(110, 27))
        .Tensor("q4_k", 12, {256}, Filler(144, 5))
        .Tensor("q5_k", 13, {256}, Filler(176, 28))
        .Tensor("q6_k", 14, {256}, Filler(210, 6))
        .Tensor("iq4_nl", 20, {32}, Filler(18, 29))
        .Tensor("iq4_xs", 23, {256}, Filler(136, 30))
        .Tensor("bf16", 30, {4, 1, 2}, Filler(16, 7));
    Write(gguf / "seed-every-type-align64.gguf", b.Build());
  }
  // One file per block type beyond the first ones read (Q8_0, Q4_0, Q4_1, Q4_K, Q6_K): a
  // two-row weight of that type alone, so mutations of its blocks and its type id start from
  // a file that exercises just that decoder. Block sizes: ggml's src/ggml-common.h.
  {
    struct OneType {
      const char* name;
      uint32_t id;
      uint64_t blockElements;
      size_t blockBytes;
    };
    const OneType types[] = {{"q5_0", 6, 32, 22},    {"q5_1", 7, 32, 24},    {"q2_k", 10, 256, 84},
                             {"q3_k", 11, 256, 110}, {"q5_k", 13, 256, 176}, {"iq4_nl", 20, 32, 18},
                             {"iq4_xs", 23, 256, 136}};
    uint32_t seed = 31;
    for (const OneType& t : types) {
      GgufBuilder b(3);
      const uint64_t rowLength = 2 * t.blockElements;
      b.Key("general.architecture", String("llama"))
          .Tensor("blk.0.ffn_down.weight", t.id, {rowLength, 2}, Filler(4 * t.blockBytes, seed++));
      Write(gguf / (std::string("seed-one-") + t.name + ".gguf"), b.Build());
    }
  }
  // A stacked-expert 3-D tensor and a 4-D one, last tensor unpadded.
  {
    GgufBuilder b(3);
    b.padLastTensor = false;
    b.Key("general.architecture", String("olmoe"))
        .Tensor("blk.0.ffn_gate_exps.weight", 8, {32, 2, 3}, Filler(6 * 34, 8))
        .Tensor("t4", 0, {1, 1, 1, 2}, Filler(8, 9));
    Write(gguf / "seed-3d-4d-unpadded.gguf", b.Build());
  }
  // A 0-d tensor and a zero-size one; alignment 8.
  {
    GgufBuilder b(3);
    b.Alignment(8).Tensor("scalar", 0, {}, Filler(4, 10)).Tensor("empty", 0, {0, 3}, {});
    Write(gguf / "seed-scalar-empty.gguf", b.Build());
  }

  // safetensors: weights of each weight dtype, metadata.
  Write(st / "seed-weights.safetensors",
        BuildSafetensors({{"model.embed_tokens.weight", "BF16", {4, 2}, Filler(16, 11)},
                          {"model.norm.weight", "F32", {2}, BytesOf(std::vector<float>{1, 2})},
                          {"lm_head.weight", "F16", {4, 2}, HalfData(8)}},
                         {{"format", "pt"}}));
  // Every non-weight dtype, a 0-d and an empty tensor.
  Write(st / "seed-other-dtypes.safetensors",
        BuildSafetensors({{"f64", "F64", {1}, Filler(8, 12)},
                          {"i64", "I64", {1}, Filler(8, 13)},
                          {"i32", "I32", {2}, Filler(8, 14)},
                          {"i16", "I16", {2}, Filler(4, 15)},
                          {"i8", "I8", {3}, Filler(3, 16)},
                          {"u8", "U8", {1}, Filler(1, 17)},
                          {"bool", "BOOL", {2}, Bytes{std::byte{0}, std::byte{1}}},
                          {"f8", "F8_E4M3", {2}, Filler(2, 18)},
                          {"f8b", "F8_E5M2", {1}, Filler(1, 19)},
                          {"u16", "U16", {1}, Filler(2, 20)},
                          {"u32", "U32", {1}, Filler(4, 21)},
                          {"u64", "U64", {1}, Filler(8, 22)},
                          {"scalar", "F32", {}, Filler(4, 23)},
                          {"empty", "F32", {0, 4}, {}}}));
  // An index file (the safetensors target also reads its input as index JSON).
  {
    const std::string index = R"({"metadata": {"total_size": 24}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}})";
    Write(st / "seed-index.json", Bytes(reinterpret_cast<const std::byte*>(index.data()),
                                        reinterpret_cast<const std::byte*>(index.data()) + index.size()));
  }
  std::printf("wrote seeds to %s\n", argv[1]);
  return 0;
}
