// WeightSource: Gemma's (1 + w) from HF, biases and experts the same from both formats,
// transformers-v5 fused experts, and the messages for a missing or misshapen tensor.
#include <doctest/doctest.h>

#include <map>
#include <tuple>

#include <fmt/format.h>

#include "decoder_test_support.h"
#include "reference/fixtures/gguf_conversion.h"
#include "reference/gen/gguf_writer.h"
#include "reference/fixtures/make_fixtures.h"
#include "reference/fixtures/safetensors_writer.h"
#include "reference/fixtures/toy_weights.h"
#include "model/config/hf_config.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_weight_source {

using wb::model::ModelConfig;
using wb::model::NormShift;
using wb::model::WeightSource;
namespace fx = ref::fixtures;
namespace fs = std::filesystem;

namespace {

WeightSource Open(const fs::path& path) {
  auto s = WeightSource::Open(path.string());
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  return std::move(s).value();
}

fx::ToyFamily Toy(const std::string& modelType) {
  for (const fx::ToyFamily& f : fx::ToyFamilies()) {
    if (f.modelType == modelType) return f;
  }
  FAIL("no toy family ", modelType);
  return {};
}

ModelConfig ToyConfig(const fx::ToyFamily& f) {
  auto c = wb::model::ParseHfConfig(f.config.dump(), "config.json");
  REQUIRE(c.ok());
  return *c;
}

std::vector<float> Rows(const wb::model::WeightMatrix& m) {
  std::vector<float> out(m.rows * m.cols);
  REQUIRE(m.ReadRows(0, m.rows, out).ok());
  return out;
}

// An HF directory holding `tensors` and the toy's config.json.
void WriteHfDir(const fs::path& dir, const fx::ToyFamily& f, const std::vector<fx::NamedTensor>& tensors) {
  fs::create_directories(dir);
  wbtest::WriteFile(dir / "config.json", f.config.dump(2));
  auto bytes = fx::SerializeBf16Safetensors(tensors);
  REQUIRE(bytes.ok());
  REQUIRE(fx::WriteFileBytes((dir / "model.safetensors").string(), *bytes).ok());
}

// A GGUF of the toy with `tensors` in place of its own.
void WriteGguf(const fs::path& path, const fx::ToyFamily& f, const std::vector<fx::NamedTensor>& tensors) {
  auto bytes = fx::ConvertToGguf(f.config, ToyConfig(f), tensors, wb::TensorType::kF16);
  REQUIRE(bytes.ok());
  REQUIRE(fx::WriteFileBytes(path.string(), *bytes).ok());
}

std::string BindError(const fs::path& path) {
  const WeightSource s = Open(path);
  auto w = wb::model::BindWeights(s.config(), s);
  REQUIRE_FALSE(w.ok());
  return w.error().message;
}

}  // namespace

TEST_CASE("Gemma: HF norms get 1 + w in f32 and then equal the GGUF's stored 1 + w") {
  const WeightSource hf = Open(wbtest::FixtureDir("gemma3_text") / "hf");
  const WeightSource gguf = Open(wbtest::FixtureDir("gemma3_text") / "model.gguf");
  CHECK(hf.config().normShift == NormShift::kAddOne);
  CHECK(gguf.config().normShift == NormShift::kNone);
  std::vector<std::pair<std::string, uint64_t>> norms = {{"output_norm.weight", 32}};
  for (int i = 0; i < 3; ++i) {
    for (const char* n : {"attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"}) {
      norms.emplace_back(fmt::format("blk.{}.{}.weight", i, n), 32);
    }
    norms.emplace_back(fmt::format("blk.{}.attn_q_norm.weight", i), 16);
    norms.emplace_back(fmt::format("blk.{}.attn_k_norm.weight", i), 16);
  }
  for (const auto& [name, length] : norms) {
    CAPTURE(name);
    auto raw = hf.Vector(name, length);
    auto shifted = hf.Norm(name, length, NormShift::kAddOne);
    auto stored = gguf.Norm(name, length, NormShift::kNone);
    REQUIRE(raw.ok());
    REQUIRE(shifted.ok());
    REQUIRE(stored.ok());
    CHECK(*shifted == *stored);
    for (size_t i = 0; i < length; ++i) CHECK((*shifted)[i] == 1.0f + (*raw)[i]);
    double rawSum = 0;
    for (float w : *raw) rawSum += std::abs(w);
    CHECK(rawSum / static_cast<double>(length) < 0.5);  // HF holds w, near 0, not 1 + w
  }
}

TEST_CASE("biases read the same from both formats (q/k/v of qwen2, o of qwen3_moe's dense-layer variant)") {
  wbtest::TempDir scratch;
  const fs::path variantGguf = scratch.path() / "dense-layer.gguf";
  REQUIRE(wbtest::WriteVariantGguf("qwen3_moe", "hf-dense-layer", variantGguf.string()).ok());
  const fs::path qwen2 = wbtest::FixtureDir("qwen2"), variant = wbtest::FixtureDir("qwen3_moe") / "hf-dense-layer";
  for (const auto& [hf, gguf, name, length] :
       {std::tuple{qwen2 / "hf", qwen2 / "model.gguf", "blk.1.attn_v.bias", 16},
        std::tuple{qwen2 / "hf", qwen2 / "model.gguf", "blk.0.attn_q.bias", 32},
        std::tuple{variant, variantGguf, "blk.2.attn_output.bias", 32}}) {
    CAPTURE(name);
    auto a = Open(hf).Vector(name, length);
    auto b = Open(gguf).Vector(name, length);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(*a == *b);
  }
}

TEST_CASE("experts: per-expert HF matrices equal the slices of GGUF's stacked tensors") {
  for (const std::string family : {"mixtral", "qwen3_moe", "olmoe"}) {
    CAPTURE(family);
    const WeightSource hf = Open(wbtest::FixtureDir(family) / "hf");
    const WeightSource gguf = Open(wbtest::FixtureDir(family) / "model.gguf");
    const ModelConfig& c = hf.config();
    for (int layer = 0; layer < c.layerCount(); ++layer) {
      if (!c.layers[layer].moe) continue;
      for (int e = 0; e < c.experts; ++e) {
        for (const char* kind : {"gate", "up", "down"}) {
          const std::string name = fmt::format("blk.{}.ffn_{}_exps.weight", layer, kind);
          const bool down = std::string(kind) == "down";
          const uint64_t rows = down ? c.hidden : c.expertFfn, cols = down ? c.expertFfn : c.hidden;
          auto a = hf.Expert(name, e, rows, cols);
          auto b = gguf.Expert(name, e, rows, cols);
          REQUIRE_MESSAGE(a.ok(), a.error().message);
          REQUIRE_MESSAGE(b.ok(), b.error().message);
          CHECK_MESSAGE(Rows(*a) == Rows(*b), name, " expert ", e);
        }
      }
    }
  }
}

TEST_CASE("transformers-v5 fused experts (gate_up_proj, down_proj) give the per-expert logits") {
  for (const std::string family : {"olmoe", "mixtral"}) {
    CAPTURE(family);
    const fx::ToyFamily toy = Toy(family);
    const ModelConfig c = ToyConfig(toy);
    const std::vector<fx::NamedTensor> perExpert = fx::MakeHfTensors(c, toy.seed);
    // Fuse: [E, 2·ff, H] with expert e's gate rows then its up rows; [E, H, ff] for down.
    std::vector<fx::NamedTensor> fused;
    std::map<std::string, const fx::NamedTensor*> byName;
    for (const auto& t : perExpert) byName[t.name] = &t;
    const bool mixtral = family == "mixtral";
    for (const auto& t : perExpert) {
      if (t.name.find(".experts.") != std::string::npos) continue;
      fx::NamedTensor copy = t;
      if (mixtral) {  // v5 also renames Mixtral's router
        const auto at = copy.name.find("block_sparse_moe.gate.weight");
        if (at != std::string::npos) copy.name.replace(at, std::string("block_sparse_moe.gate.weight").size(), "mlp.gate.weight");
      }
      fused.push_back(std::move(copy));
    }
    for (int layer = 0; layer < c.layerCount(); ++layer) {
      const std::string p = fmt::format("model.layers.{}.", layer);
      fx::NamedTensor gateUp{p + "mlp.experts.gate_up_proj",
                             {static_cast<uint64_t>(c.experts), 2 * static_cast<uint64_t>(c.expertFfn),
                              static_cast<uint64_t>(c.hidden)},
                             {}};
      fx::NamedTensor down{p + "mlp.experts.down_proj",
                           {static_cast<uint64_t>(c.experts), static_cast<uint64_t>(c.hidden),
                            static_cast<uint64_t>(c.expertFfn)},
                           {}};
      for (int e = 0; e < c.experts; ++e) {
        const std::string ep = mixtral ? fmt::format("{}block_sparse_moe.experts.{}.", p, e)
                                       : fmt::format("{}mlp.experts.{}.", p, e);
        const auto& g = byName.at(ep + (mixtral ? "w1.weight" : "gate_proj.weight"))->values;
        const auto& u = byName.at(ep + (mixtral ? "w3.weight" : "up_proj.weight"))->values;
        const auto& d = byName.at(ep + (mixtral ? "w2.weight" : "down_proj.weight"))->values;
        gateUp.values.insert(gateUp.values.end(), g.begin(), g.end());
        gateUp.values.insert(gateUp.values.end(), u.begin(), u.end());
        down.values.insert(down.values.end(), d.begin(), d.end());
      }
      fused.push_back(std::move(gateUp));
      fused.push_back(std::move(down));
    }
    wbtest::TempDir scratch;
    WriteHfDir(scratch.path() / "hf", toy, fused);
    const std::vector<int> tokens = {5, 17, 3, 60, 9, 9, 41};
    auto a = wbtest::AllLogits((wbtest::FixtureDir(family) / "hf").string(), tokens);
    auto b = wbtest::AllLogits((scratch.path() / "hf").string(), tokens);
    REQUIRE_MESSAGE(a.ok(), a.error().message);
    REQUIRE_MESSAGE(b.ok(), b.error().message);
    CHECK(a->values == b->values);
  }
}

TEST_CASE("a missing tensor is named, with its HF name and the file") {
  const fx::ToyFamily toy = Toy("llama");
  std::vector<fx::NamedTensor> tensors = fx::MakeHfTensors(ToyConfig(toy), toy.seed);
  std::erase_if(tensors, [](const fx::NamedTensor& t) { return t.name == "model.layers.1.self_attn.k_proj.weight"; });
  wbtest::TempDir scratch;
  WriteHfDir(scratch.path() / "hf", toy, tensors);
  WriteGguf(scratch.path() / "model.gguf", toy, tensors);
  const std::string dir = (scratch.path() / "hf").string();
  const std::string gguf = (scratch.path() / "model.gguf").string();
  CHECK(BindError(dir) ==
        dir + ": tensor 'blk.1.attn_k.weight' (HF 'model.layers.1.self_attn.k_proj.weight') is missing");
  CHECK(BindError(gguf) == gguf + ": tensor 'blk.1.attn_k.weight' is missing");
}

TEST_CASE("a misshapen tensor is named with both shapes") {
  const fx::ToyFamily toy = Toy("llama");
  std::vector<fx::NamedTensor> tensors = fx::MakeHfTensors(ToyConfig(toy), toy.seed);
  for (auto& t : tensors) {
    if (t.name == "model.layers.0.mlp.down_proj.weight") t.shape = {64, 32};  // [ffn, H] instead of [H, ffn]
  }
  wbtest::TempDir scratch;
  WriteHfDir(scratch.path() / "hf", toy, tensors);
  WriteGguf(scratch.path() / "model.gguf", toy, tensors);
  const std::string shard = (scratch.path() / "hf" / "model.safetensors").string();
  const std::string gguf = (scratch.path() / "model.gguf").string();
  CHECK(BindError(scratch.path() / "hf") ==
        shard + ": tensor 'blk.0.ffn_down.weight' (HF 'model.layers.0.mlp.down_proj.weight') has shape [64, 32], "
                "expected [32, 64]");
  CHECK(BindError(gguf) == gguf + ": tensor 'blk.0.ffn_down.weight' has shape [64, 32], expected [32, 64]");
}

TEST_CASE("a missing expert and a misshapen stacked tensor are named") {
  const fx::ToyFamily toy = Toy("qwen3_moe");
  std::vector<fx::NamedTensor> tensors = fx::MakeHfTensors(ToyConfig(toy), toy.seed);
  std::erase_if(tensors, [](const fx::NamedTensor& t) { return t.name == "model.layers.2.mlp.experts.3.up_proj.weight"; });
  wbtest::TempDir scratch;
  WriteHfDir(scratch.path() / "hf", toy, tensors);
  const std::string dir = (scratch.path() / "hf").string();
  CHECK(BindError(dir) ==
        dir + ": tensor 'blk.2.ffn_up_exps.weight[expert 3]' (HF 'model.layers.2.mlp.experts.3.up_proj.weight') is "
              "missing");
  // Asking for an expert with its rows and cols swapped.
  const WeightSource good = Open(wbtest::FixtureDir("qwen3_moe") / "model.gguf");
  auto ok = good.Expert("blk.0.ffn_up_exps.weight", 3, 16, 32);
  CHECK(ok.ok());
  auto wrong = good.Expert("blk.0.ffn_up_exps.weight", 0, 32, 16);
  REQUIRE_FALSE(wrong.ok());
  const std::string file = (wbtest::FixtureDir("qwen3_moe") / "model.gguf").string();
  CHECK(wrong.error().message ==
        file + ": tensor 'blk.0.ffn_up_exps.weight' has shape [4, 16, 32], expected [4, 32, 16] (experts, rows, cols)");
}

TEST_CASE("Open names a path that is not a model") {
  wbtest::TempDir scratch;
  const std::string missing = (scratch.path() / "nothing").string();
  CHECK(WeightSource::Open(missing).error().message == missing + ": no such file or directory");
  const fs::path text = scratch.path() / "notes.txt";
  wbtest::WriteFile(text, "hello");
  CHECK(WeightSource::Open(text.string()).error().message ==
        text.string() + ": neither a GGUF file (no \"GGUF\" magic) nor a Hugging Face directory");
  const fs::path empty = scratch.path() / "empty";
  fs::create_directories(empty);
  CHECK(WeightSource::Open(empty.string()).error().message == (empty / "config.json").string() + ": cannot be opened");
}

}  // namespace test_weight_source
