// `workbook inspect`, run as the built binary (meson passes its path in WB_WORKBOOK_EXE) on
// generated files: a GGUF file, an HF directory, and broken copies (exit 2, the file named).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>
#include <string>

#include "tests/models/readers/model_file_builders.h"
#include "tests/models/readers/temp_dir.h"

using namespace wb::test;

namespace {

struct Result {
  int status = -1;
  std::string output;  // stdout and stderr together
};

Result RunWorkbook(const std::string& arguments) {
  const char* exe = std::getenv("WB_WORKBOOK_EXE");
  REQUIRE_MESSAGE(exe != nullptr, "WB_WORKBOOK_EXE is not set (meson test sets it)");
  const std::string command = "'" + std::string(exe) + "' " + arguments + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  Result result;
  char chunk[4096];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0) result.output.append(chunk, n);
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

Bytes SampleGguf() {
  GgufBuilder b;
  b.Key("general.architecture", String("llama"))
      .Key("general.name", String("inspect me"))
      .Key("llama.block_count", U32(1))
      .Tensor("token_embd.weight", 8, {32, 2}, Bytes(68))
      .Tensor("output_norm.weight", 0, {32}, Bytes(128));
  return b.Build();
}

}  // namespace

TEST_CASE("inspect a GGUF file: metadata and tensors, exit 0") {
  TempDir dir;
  const std::string path = dir.Write("model.gguf", SampleGguf());
  const Result r = RunWorkbook("inspect '" + path + "'");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.rfind(path + ": GGUF version 3, ", 0) == 0);
  CHECK(r.output.find("general.name          string  \"inspect me\"") != std::string::npos);
  CHECK(r.output.find("token_embd.weight   Q8_0  [32, 2]  [2, 32]     68       0") != std::string::npos);
  CHECK(r.output.find("\nconfig") != std::string::npos);  // the config section is always there
}

TEST_CASE("inspect --format json --no-config gives one JSON object") {
  TempDir dir;
  const std::string path = dir.Write("model.gguf", SampleGguf());
  const Result r = RunWorkbook("inspect --format json --no-config '" + path + "'");
  REQUIRE(r.status == 0);
  const auto json = nlohmann::json::parse(r.output);
  CHECK(json["file"] == path);
  CHECK(json["tensors"].size() == 2);
  CHECK(json["metadata"][2]["value"] == 1);
  CHECK_FALSE(json.contains("config"));
  // Without --no-config the same object gains a "config" member (ok or not: this toy file has
  // no llama.embedding_length, so a build with model/config reports what is missing).
  const Result withConfig = RunWorkbook("inspect --format json '" + path + "'");
  REQUIRE(withConfig.status == 0);
  const auto full = nlohmann::json::parse(withConfig.output);
  CHECK(full["tensors"] == json["tensors"]);
  REQUIRE(full.contains("config"));
  if (full["config"]["available"] == true) {
    CHECK(full["config"]["ok"] == false);
    CHECK(full["config"]["text"].get<std::string>().find(path) != std::string::npos);
  }
}

TEST_CASE("inspect --tensor prints a tensor's values as the decoder reads them") {
  // A Q8_0 row of 32: d = 0.5 (half 0x3800), codes -16 ... 15, so value j is (j - 16) / 2;
  // and an F32 row holding the values JSON has no number for.
  Bytes q8(34);
  q8[0] = std::byte{0x00};
  q8[1] = std::byte{0x38};
  for (int j = 0; j < 32; ++j) q8[2 + j] = static_cast<std::byte>(static_cast<int8_t>(j - 16));
  const std::vector<float> special = {1.25f, -0.0f, std::numeric_limits<float>::infinity(),
                                      std::numeric_limits<float>::quiet_NaN()};
  GgufBuilder b;
  b.Key("general.architecture", String("llama")).Tensor("q", 8, {32, 1}, q8).Tensor("f", 0, {2, 2}, BytesOf(special));
  TempDir dir;
  const std::string path = dir.Write("model.gguf", b.Build());

  const Result json = RunWorkbook("inspect --tensor q --tensor f --format json '" + path + "'");
  INFO(json.output);
  REQUIRE(json.status == 0);
  const auto parsed = nlohmann::json::parse(json.output);
  CHECK(parsed["file"] == path);
  REQUIRE(parsed["tensors"].size() == 2);
  const auto& q = parsed["tensors"][0];
  CHECK(q["name"] == "q");
  CHECK(q["type"] == "Q8_0");
  CHECK(q["shape"] == nlohmann::json::array({1, 32}));
  REQUIRE(q["values"].size() == 1);
  REQUIRE(q["values"][0].size() == 32);
  for (int j = 0; j < 32; ++j) CHECK(q["values"][0][j].get<double>() == (j - 16) / 2.0);
  const auto& f = parsed["tensors"][1];
  CHECK(f["shape"] == nlohmann::json::array({2, 2}));
  CHECK(f["values"] == nlohmann::json::parse(R"([[1.25, -0.0], ["inf", "nan"]])"));

  const Result text = RunWorkbook("inspect --tensor f '" + path + "'");
  CHECK(text.status == 0);
  CHECK(text.output == "tensor f  F32  shape [2, 2]  (4 values as f32, one row a line)\n1.25 -0\ninf nan\n");

  const Result missing = RunWorkbook("inspect --tensor nope '" + path + "'");
  CHECK(missing.status == 2);
  CHECK(missing.output.find(path) != std::string::npos);
  CHECK(missing.output.find("'nope'") != std::string::npos);
}

TEST_CASE("inspect a truncated GGUF: exit 2 and a message naming the file and the tensor") {
  TempDir dir;
  Bytes bytes = SampleGguf();
  bytes.resize(bytes.size() - 40);
  const std::string path = dir.Write("truncated.gguf", bytes);
  const Result r = RunWorkbook("inspect '" + path + "'");
  CHECK(r.status == 2);
  CHECK(r.output == "workbook: " + path + ": tensor 'output_norm.weight': data ends at byte " +
                        std::to_string(bytes.size() + 40) + " but the file has " +
                        std::to_string(bytes.size()) + " bytes (truncated)\n");
}

TEST_CASE("inspect a file that is not a model, and a missing path: exit 2") {
  TempDir dir;
  const std::string text = dir.Write("notes.txt", std::string_view("hello world, not a model file"));
  Result r = RunWorkbook("inspect '" + text + "'");
  CHECK(r.status == 2);
  CHECK(r.output == "workbook: " + text +
                        ": header field 'magic': expected \"GGUF\" (47 47 55 46), found 68 65 6c 6c: not a GGUF file\n");
  r = RunWorkbook("inspect '" + dir / "absent.gguf" + "'");
  CHECK(r.status == 2);
  CHECK(r.output == "workbook: " + dir / "absent.gguf" + ": no such file or directory\n");
}

TEST_CASE("inspect an HF directory and a broken one") {
  TempDir dir;
  dir.Write("config.json", std::string_view(R"({"model_type": "llama"})"));
  dir.Write("model.safetensors",
            BuildSafetensors({{"model.norm.weight", "BF16", {4}, Bytes(8)}, {"lm_head.weight", "F32", {2, 4}, Bytes(32)}},
                             {{"format", "pt"}}));
  Result r = RunWorkbook("inspect --no-config '" + dir.path().string() + "'");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.rfind(dir.path().string() + ": safetensors, 1 file\n", 0) == 0);
  CHECK(r.output.find("  model.norm.weight  BF16   [4]         8       0") != std::string::npos);

  Bytes broken = BuildSafetensors({{"w", "F32", {4}, Bytes(16)}});
  broken.resize(broken.size() - 1);
  dir.Write("model.safetensors", broken);
  r = RunWorkbook("inspect '" + dir.path().string() + "'");
  CHECK(r.status == 2);
  CHECK(r.output.rfind("workbook: " + dir / "model.safetensors" + ": tensor 'w': data ends at byte ", 0) == 0);
}
