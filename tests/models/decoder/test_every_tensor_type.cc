// A GGUF holding a tensor of every type the workbook reads, written by its own writer from
// known values, is read back exactly: `workbook inspect --tensor` prints each value as it
// was made, and `workbook reference` gives the same logits, to the last bit, as an F32 twin
// holding the same values. The model is a 2-layer llama of hidden 256, so that the K-quants'
// 256-value super-blocks fit every row.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "decoder_test_support.h"
#include "reference/gen/gguf_writer.h"
#include "reference/fixtures/known_blocks.h"
#include "reference/fixtures/llama_cpp_keys.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_every_tensor_type {

namespace fs = std::filesystem;
namespace fx = ref::fixtures;
using wb::TensorType;
using wbtest::Quote;
using wbtest::RunWorkbook;

namespace {

constexpr uint32_t kHidden = 256, kHeads = 4, kKvHeads = 2, kHeadDim = 64, kFfn = 256, kVocab = 32, kLayers = 2;

struct Planned {
  std::string name;
  std::vector<uint64_t> shape;  // row-major
  TensorType type;
  fx::KnownRow known;
};

// Every tensor of the model, each with a type: every type of kAllTensorTypes in turn on the
// 16 matrices (the quantized ones first), and F32 on the norms, as llama.cpp's converter
// writes them (ggml's CPU backend cannot multiply by an F16 norm), so that llama.cpp loads
// this file too.
std::vector<Planned> PlanTensors() {
  std::vector<std::pair<std::string, std::vector<uint64_t>>> matrices = {{"token_embd.weight", {kVocab, kHidden}}};
  std::vector<std::pair<std::string, std::vector<uint64_t>>> norms;
  for (uint32_t l = 0; l < kLayers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norms.push_back({p + "attn_norm.weight", {kHidden}});
    matrices.push_back({p + "attn_q.weight", {kHeads * kHeadDim, kHidden}});
    matrices.push_back({p + "attn_k.weight", {kKvHeads * kHeadDim, kHidden}});
    matrices.push_back({p + "attn_v.weight", {kKvHeads * kHeadDim, kHidden}});
    matrices.push_back({p + "attn_output.weight", {kHidden, kHeads * kHeadDim}});
    norms.push_back({p + "ffn_norm.weight", {kHidden}});
    matrices.push_back({p + "ffn_gate.weight", {kFfn, kHidden}});
    matrices.push_back({p + "ffn_up.weight", {kFfn, kHidden}});
    matrices.push_back({p + "ffn_down.weight", {kHidden, kFfn}});
  }
  norms.push_back({"output_norm.weight", {kHidden}});
  matrices.push_back({"output.weight", {kVocab, kHidden}});

  std::vector<TensorType> quantized, plain;
  for (TensorType t : wb::kAllTensorTypes) (wb::IsQuantized(t) ? quantized : plain).push_back(t);
  std::vector<Planned> out;
  uint32_t seed = 1;
  size_t next = 0;
  for (const auto& [name, shape] : matrices) {
    // The quantized types first, then the plain ones, then round again.
    const size_t turn = next++ % (quantized.size() + plain.size());
    const TensorType type = turn < quantized.size() ? quantized[turn] : plain[turn - quantized.size()];
    const size_t count = shape[0] * shape[1];
    out.push_back({name, shape, type, fx::MakeKnownRow(type, count, seed++, 0.05)});
  }
  for (const auto& [name, shape] : norms) {
    out.push_back({name, shape, TensorType::kF32, fx::MakeKnownRow(TensorType::kF32, kHidden, seed++, 1.0)});
  }
  return out;
}

void AddMetadata(fx::GgufWriter& w) {
  w.AddString("general.architecture", "llama");
  w.AddString("general.name", "every-tensor-type");
  w.AddU32("llama.vocab_size", kVocab);
  w.AddU32("llama.context_length", 64);
  w.AddU32("llama.embedding_length", kHidden);
  w.AddU32("llama.block_count", kLayers);
  w.AddU32("llama.feed_forward_length", kFfn);
  w.AddU32("llama.attention.head_count", kHeads);
  w.AddU32("llama.attention.head_count_kv", kKvHeads);
  w.AddU32("llama.rope.dimension_count", kHeadDim);
  w.AddF32("llama.rope.freq_base", 10000.0f);
  w.AddF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.AddString("tokenizer.ggml.model", "no_vocab");
}

std::vector<std::byte> F32Bytes(const std::vector<double>& values) {
  std::vector<std::byte> out(values.size() * 4);
  for (size_t i = 0; i < values.size(); ++i) {
    const float f = static_cast<float>(values[i]);
    std::memcpy(out.data() + 4 * i, &f, 4);
  }
  return out;
}

// The mixed file, and its twin with every tensor in F32.
struct Files {
  wbtest::TempDir dir;
  std::string mixed, twin;
  std::vector<Planned> tensors = PlanTensors();
};

void WriteFiles(Files& f) {
  fx::GgufWriter mixed, twin;
  AddMetadata(mixed);
  AddMetadata(twin);
  for (const Planned& t : f.tensors) {
    mixed.AddTensor(t.name, t.type, t.shape, t.known.bytes);
    twin.AddTensor(t.name, TensorType::kF32, t.shape, F32Bytes(t.known.values));
  }
  f.mixed = (f.dir.path() / "every-type.gguf").string();
  f.twin = (f.dir.path() / "every-type-f32.gguf").string();
  REQUIRE(fx::WriteFileBytes(f.mixed, mixed.Serialize()).ok());
  REQUIRE(fx::WriteFileBytes(f.twin, twin.Serialize()).ok());
}

}  // namespace

TEST_CASE("the test model uses every type the workbook reads, and llama.cpp's keys") {
  Files f;
  WriteFiles(f);
  std::map<TensorType, int> used;
  for (const Planned& t : f.tensors) ++used[t.type];
  for (TensorType type : wb::kAllTensorTypes) {
    CAPTURE(wb::TensorTypeName(type));
    CHECK(used[type] >= 1);
  }
  auto file = wb::GgufFile::Open(f.mixed);
  REQUIRE_MESSAGE(file.ok(), file.error().message);
  CHECK(fx::MissingLlamaCppKeys(*file).empty());
}

TEST_CASE("workbook inspect reads every type back exactly") {
  Files f;
  WriteFiles(f);
  const auto dump = RunWorkbook("inspect --no-config --format json " + Quote(f.mixed), f.dir.path());
  REQUIRE_MESSAGE(dump.exitCode == 0, dump.err);
  const nlohmann::json tensors = nlohmann::json::parse(dump.out)["tensors"];
  REQUIRE(tensors.size() == f.tensors.size());
  std::string arguments;
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    CHECK(tensors[i]["name"] == f.tensors[i].name);
    CHECK(tensors[i]["type"] == std::string(wb::TensorTypeName(f.tensors[i].type)));
    arguments += " --tensor " + Quote(f.tensors[i].name);
  }
  const auto values = RunWorkbook("inspect --format json" + arguments + " " + Quote(f.mixed), f.dir.path());
  REQUIRE_MESSAGE(values.exitCode == 0, values.err);
  const nlohmann::json read = nlohmann::json::parse(values.out)["tensors"];
  REQUIRE(read.size() == f.tensors.size());
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    const Planned& t = f.tensors[i];
    CAPTURE(t.name);
    CAPTURE(wb::TensorTypeName(t.type));
    const nlohmann::json& rows = read[i]["values"];
    const uint64_t rowLength = t.shape.back();
    REQUIRE(rows.size() == t.known.values.size() / rowLength);
    size_t wrong = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      for (uint64_t j = 0; j < rowLength; ++j) {
        // Printed as the shortest decimal that reads back as the same f32.
        const float printed = static_cast<float>(rows[r][j].get<double>());
        if (printed != static_cast<float>(t.known.values[r * rowLength + j])) ++wrong;
      }
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("workbook reference gives the mixed file exactly the logits of its F32 twin") {
  Files f;
  WriteFiles(f);
  const std::string tokens = "3,1,4,1,5,9,2,6";
  const auto mixed = RunWorkbook("reference --all-logits --model " + Quote(f.mixed) + " --tokens " + tokens, f.dir.path());
  const auto twin = RunWorkbook("reference --all-logits --model " + Quote(f.twin) + " --tokens " + tokens, f.dir.path());
  REQUIRE_MESSAGE(mixed.exitCode == 0, mixed.err);
  REQUIRE_MESSAGE(twin.exitCode == 0, twin.err);
  const nlohmann::json a = nlohmann::json::parse(mixed.out)["logits"];
  const nlohmann::json b = nlohmann::json::parse(twin.out)["logits"];
  REQUIRE(a.size() == 8);
  CHECK(a == b);  // every logit, to the last printed digit (17 significant)
  // Not a degenerate model: the logits are finite, not all equal, and differ by position.
  double largest = 0;
  for (const auto& row : a) {
    for (const auto& v : row) largest = std::max(largest, std::abs(v.get<double>()));
  }
  CHECK(std::isfinite(largest));
  CHECK(largest > 1e-3);
  CHECK(a[0] != a[7]);
}

}  // namespace test_every_tensor_type
