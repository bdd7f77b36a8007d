// make-tinyllama-gguf: writes a GGUF of TinyLlama-1.1B's shape with random weights, for the
// test that `workbook check 5 --model` runs a real model's layer shape (test_tinyllama_check.cc).
//   make-tinyllama-gguf OUT.gguf                     the model, laid out as llama.cpp converts it
//   make-tinyllama-gguf OUT.gguf --without HF_NAME   the same less one tensor (HF name, e.g.
//                                                    model.layers.1.mlp.down_proj.weight)
//   make-tinyllama-gguf OUT.gguf --architecture falcon
//                                                    a small GGUF naming another architecture
// The model is TinyLlama-1.1B-Chat's config.json (llama; hidden 2048, 32 heads, 4 kv heads of
// 64, ffn 5632, vocab 32000, rms eps 1e-5, rope theta 10000, context 2048, untied head) with 2
// layers instead of 22. Its weights are the toy fixtures' draws (MakeHfTensors: SplitMix64,
// integers only) with every matrix but the embedding rescaled to uniform in ±1/sqrt(fan_in), so
// activations keep their size through the layers; the file is ConvertToGguf's, with Q8_0
// matrices (token_embd and output too, as convert_hf_to_gguf --outtype q8_0 writes them), F32
// norms and q/k rows permuted as LlamaModel.permute does. Same arguments, same bytes. The file is
// written under a temporary name and renamed into place.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/config/hf_config.h"
#include "reference/fixtures/gguf_conversion.h"
#include "reference/fixtures/toy_weights.h"
#include "reference/gen/gguf_writer.h"

namespace {

constexpr uint64_t kSeed = 0x7111a11aull;

// TinyLlama/TinyLlama-1.1B-Chat-v1.0's config.json, the keys the reference reads, 2 layers.
nlohmann::ordered_json TinyLlamaConfig() {
  return {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", 2048},
      {"intermediate_size", 5632},
      {"num_hidden_layers", 2},
      {"num_attention_heads", 32},
      {"num_key_value_heads", 4},
      {"vocab_size", 32000},
      {"max_position_embeddings", 2048},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 10000.0},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", false},
      {"attention_bias", false},
      {"mlp_bias", false},
  };
}

wb::Expected<std::vector<std::byte>> TinyLlamaGguf(const std::string& without) {
  const nlohmann::ordered_json json = TinyLlamaConfig();
  auto config = wb::model::ParseHfConfig(json.dump(), "TinyLlama config.json");
  if (!config) return config.error();
  std::vector<ref::fixtures::NamedTensor> tensors = ref::fixtures::MakeHfTensors(*config, kSeed);
  bool dropped = without.empty();
  for (auto t = tensors.begin(); t != tensors.end();) {
    if (t->name == without) {
      t = tensors.erase(t);
      dropped = true;
      continue;
    }
    // MakeHfTensors draws matrices as k / 512, k in [-128, 127]: uniform in ±1/4.
    if (t->shape.size() == 2 && t->name != "model.embed_tokens.weight") {
      const float scale = 4.0f / std::sqrt(static_cast<float>(t->shape[1]));
      for (float& v : t->values) v *= scale;
    }
    ++t;
  }
  if (!dropped) return wb::BadUsage(fmt::format("--without: the model has no tensor '{}'", without));
  return ref::fixtures::ConvertToGguf(json, *config, tensors, wb::TensorType::kQ8_0);
}

// A GGUF that says it holds a Falcon (or any other architecture): TinyLlama's sizes under
// that architecture's keys and one small tensor; a reader must refuse it on the name alone.
std::vector<std::byte> OtherArchitectureGguf(const std::string& architecture) {
  ref::fixtures::GgufWriter w;
  auto key = [&architecture](const char* suffix) { return fmt::format("{}.{}", architecture, suffix); };
  w.AddString("general.architecture", architecture);
  w.AddString("general.name", fmt::format("tinyllama-shaped {}", architecture));
  w.AddU32("general.file_type", 0);
  w.AddU32(key("context_length"), 2048);
  w.AddU32(key("embedding_length"), 2048);
  w.AddU32(key("block_count"), 2);
  w.AddU32(key("feed_forward_length"), 5632);
  w.AddU32(key("attention.head_count"), 32);
  w.AddU32(key("attention.head_count_kv"), 4);
  w.AddF32(key("attention.layer_norm_epsilon"), 1e-5f);
  w.AddU32(key("vocab_size"), 32000);
  w.AddString("tokenizer.ggml.model", "no_vocab");
  std::vector<std::byte> norm;
  for (int i = 0; i < 2048; ++i) {
    const float one = 1.0f;
    const auto* b = reinterpret_cast<const std::byte*>(&one);
    norm.insert(norm.end(), b, b + sizeof one);  // little-endian hosts only, as the test runs
  }
  w.AddTensor("output_norm.weight", wb::TensorType::kF32, {2048}, std::move(norm));
  return w.Serialize();
}

int Usage() {
  std::fputs("usage: make-tinyllama-gguf OUT.gguf [--without HF_TENSOR_NAME | --architecture NAME]\n", stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) return Usage();
  const std::string out = argv[1];
  std::string without, architecture = "llama";
  if (argc == 4) {
    const std::string flag = argv[2];
    if (flag == "--without") {
      without = argv[3];
    } else if (flag == "--architecture") {
      architecture = argv[3];
    } else {
      return Usage();
    }
  }
  wb::Expected<std::vector<std::byte>> bytes =
      architecture == "llama" ? TinyLlamaGguf(without) : OtherArchitectureGguf(architecture);
  if (!bytes) {
    fmt::print(stderr, "make-tinyllama-gguf: {}\n", bytes.error().message);
    return 1;
  }
  const std::string partial = out + ".partial";
  if (wb::Status s = ref::fixtures::WriteFileBytes(partial, *bytes); !s.ok()) {
    fmt::print(stderr, "make-tinyllama-gguf: {}\n", s.error().message);
    return 1;
  }
  std::error_code error;
  std::filesystem::rename(partial, out, error);
  if (error) {
    fmt::print(stderr, "make-tinyllama-gguf: {}: cannot rename to {}: {}\n", partial, out, error.message());
    return 1;
  }
  return 0;
}
