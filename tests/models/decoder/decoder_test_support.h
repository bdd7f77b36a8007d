// Helpers shared by the decoder tests: where the fixtures are, temporary directories,
// running the reference on a path, comparing logits, running the workbook binary, and
// writing the GGUF of an HF-only fixture variant.
//
// Contract: the tests are run by meson with WB_SOURCE_ROOT (the source tree) and, for the
// command-line tests, WB_WORKBOOK_EXE (the built workbook) in the environment; a missing
// variable fails the test with a message that says so. Nothing here asserts: helpers return
// values and the tests check them.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "reference/decoder/decoder.h"
#include "reference/fixtures/gguf_conversion.h"
#include "reference/gen/gguf_writer.h"
#include "reference/fixtures/toy_families.h"
#include "reference/fixtures/toy_weights.h"
#include "model/config/hf_config.h"
#include "model/config/model_weights.h"
#include "model/config/weight_source.h"

namespace wbtest {

namespace fs = std::filesystem;

inline std::string EnvOrEmpty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// data/models and data/models/<family> in the source tree.
inline fs::path ModelsRoot() { return fs::path(EnvOrEmpty("WB_SOURCE_ROOT")) / "data" / "models"; }
inline fs::path FixtureDir(const std::string& family) { return ModelsRoot() / family; }

// The prompt the trace tests run every fixture on: 12 tokens, longer than every window (4).
inline const std::vector<int>& TraceTokens() {
  static const std::vector<int> kTokens = {3, 17, 42, 8, 63, 0, 25, 17, 9, 51, 30, 6};
  return kTokens;
}

// A fixture's weight source and its weights, bound (views into the source).
struct BoundFixture {
  wb::model::WeightSource source;
  wb::model::ModelWeights weights;
  const wb::model::ModelConfig& config() const { return source.config(); }
};

// data/models/<family>/<file> opened and bound, or the model library's error.
inline wb::Expected<BoundFixture> OpenFixture(const std::string& family, const char* file = "hf") {
  auto source = wb::model::WeightSource::Open((FixtureDir(family) / file).string());
  if (!source.ok()) return source.error();
  auto weights = wb::model::BindWeights(source->config(), *source);
  if (!weights.ok()) return weights.error();
  return BoundFixture{std::move(*source), std::move(*weights)};
}

// The same doubles, bit for bit.
inline bool SameBits(std::span<const double> a, std::span<const double> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

inline const std::vector<std::string>& Families() {
  static const std::vector<std::string> kFamilies = {"llama", "mistral",   "mixtral",     "qwen2",
                                                     "qwen3", "qwen3_moe", "gemma3_text", "olmoe"};
  return kFamilies;
}

// A fresh directory under the system's temporary directory, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "wb-decoder-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The reference's logits of every position for the model at `path`.
inline wb::Expected<ref::DecoderLogits> AllLogits(const std::string& path, const std::vector<int>& tokens) {
  auto source = wb::model::WeightSource::Open(path);
  if (!source) return source.error();
  return ref::RunDecoder(*source, tokens, ref::LogitPositions::kAll);
}

// The same with a modified config (a flipped switch), on the weights at `path`.
template <typename Edit>
wb::Expected<ref::DecoderLogits> AllLogitsWith(const std::string& path, const std::vector<int>& tokens, Edit edit) {
  auto source = wb::model::WeightSource::Open(path);
  if (!source) return source.error();
  wb::model::ModelConfig config = source->config();
  edit(config);
  auto weights = wb::model::BindWeights(config, *source);
  if (!weights) return weights.error();
  return ref::RunDecoder(config, *weights, tokens, ref::LogitPositions::kAll);
}

inline double MaxAbsDiff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return 1e300;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// Row r of the logits (one position).
inline std::vector<double> RowOf(const ref::DecoderLogits& logits, int r) {
  const auto row = logits.Row(r);
  return {row.begin(), row.end()};
}

struct CommandResult {
  int exitCode = -1;
  std::string out;
  std::string err;
};

// Runs the workbook binary with `arguments` (already shell-quoted), capturing both streams.
inline CommandResult RunWorkbook(const std::string& arguments, const fs::path& scratch) {
  const fs::path out = scratch / "stdout.txt";
  const fs::path err = scratch / "stderr.txt";
  const std::string command = "'" + EnvOrEmpty("WB_WORKBOOK_EXE") + "' " + arguments + " >'" + out.string() +
                              "' 2>'" + err.string() + "'";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadFile(out);
  result.err = ReadFile(err);
  return result;
}

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

// The F16 GGUF the generator would write for the HF-only checkpoint `folder` (hf-<variant>/
// of `family`), written to `path`: its config from the committed config.json, its weights
// from the family's seed, as WriteFamilyFixtures makes them.
inline wb::Status WriteVariantGguf(const std::string& family, const std::string& folder, const std::string& path) {
  const fs::path config = FixtureDir(family) / folder / "config.json";
  const std::string text = ReadFile(config);
  auto parsed = wb::model::ParseHfConfig(text, config.string());
  if (!parsed) return parsed.error();
  for (const ref::fixtures::ToyFamily& toy : ref::fixtures::ToyFamilies()) {
    if (toy.modelType != family) continue;
    const auto tensors = ref::fixtures::MakeHfTensors(*parsed, toy.seed);
    auto gguf = ref::fixtures::ConvertToGguf(nlohmann::ordered_json::parse(text), *parsed, tensors,
                                             wb::TensorType::kF16);
    if (!gguf) return gguf.error();
    return ref::fixtures::WriteFileBytes(path, *gguf);
  }
  return wb::BadUsage("no toy family " + family);
}

}  // namespace wbtest
