// `workbook inspect`, run as the built binary (meson passes its path in WB_WORKBOOK_EXE) on
// generated files: a GGUF file, an HF directory, and broken copies (exit 2, the file named).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

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
