// `workbook check 5 --solutions --model` on a TinyLlama-1.1B-shaped GGUF: the layer shape of a
// real model (hidden 2048, 32 query heads and 4 kv heads of 64, ffn 5632, vocab 32000, Q8_0
// matrices laid out as llama.cpp's converter lays them out), 2 layers, generated here by
// make-tinyllama-gguf (never committed, never downloaded). Proves that:
//   - the solution passes every checkpoint on it, exit 0, at those widths;
//   - a file missing a tensor (blk.1.ffn_down.weight) is refused with exit 2, naming the tensor;
//   - a --tokens id outside the vocabulary is refused with exit 2, naming the id and the vocabulary;
//   - a file of another architecture (falcon) is refused with exit 2, naming general.architecture.
// Run by meson with WB_WORKBOOK_EXE (the built workbook) and WB_MAKE_TINYLLAMA (the generator).
// About 10 s on two cores, most of it generating the two 230 MB files (one at a time on disk).
#include <doctest/doctest.h>

#include <stdlib.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/runner/run_command.h"

namespace fs = std::filesystem;
using wbtest::Env;
using wbtest::Quote;
using wbtest::Ran;
using wbtest::RunShell;

namespace {

// A fresh folder under the temporary directory, removed with its files.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "wb-tinyllama-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~Scratch() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  bool ok() const { return !path_.empty(); }

 private:
  fs::path path_;
};

Ran Generate(const std::string& path, const std::string& flags = "") {
  return RunShell(Quote(Env("WB_MAKE_TINYLLAMA")) + " " + Quote(path) + " " + flags);
}

Ran Check(const std::string& model, const std::string& flags = "") {
  return RunShell(Quote(Env("WB_WORKBOOK_EXE")) + " check 5 --solutions --model " + Quote(model) + " --steps 2 " + flags);
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("check 5 --model on a TinyLlama-shaped GGUF: the solution passes, and what is unsupported is named") {
  REQUIRE_MESSAGE(!Env("WB_WORKBOOK_EXE").empty(), "WB_WORKBOOK_EXE is not set (run through meson test)");
  REQUIRE_MESSAGE(!Env("WB_MAKE_TINYLLAMA").empty(), "WB_MAKE_TINYLLAMA is not set (run through meson test)");
  Scratch scratch;
  REQUIRE(scratch.ok());

  const std::string model = scratch / "tinyllama-2l-q8_0.gguf";
  const Ran made = Generate(model);
  REQUIRE_MESSAGE(made.status == 0, made.err);

  // Each part runs once, in order (not doctest's SUBCASE, which would rerun the generator).
  {  // the solution passes every checkpoint, at TinyLlama's widths
    const Ran ran = Check(model, "--format json");
    INFO(ran.err);
    CHECK(ran.status == 0);
    const nlohmann::json report = nlohmann::json::parse(ran.out, nullptr, false);
    REQUIRE_MESSAGE(!report.is_discarded(), ran.out);
    CHECK(report["status"] == "pass");
    REQUIRE(report["cases"].size() == 1);
    const nlohmann::json& checkpoints = report["cases"][0]["checkpoints"];
    REQUIRE(!checkpoints.empty());
    bool sawLogits = false, sawKv = false;
    for (const nlohmann::json& c : checkpoints) {
      CAPTURE(c["name"].get<std::string>());
      CHECK(c["status"] == "pass");
      sawLogits = sawLogits || (c["name"] == "step3.logits" && c["shape"] == "1 x 32000");
      sawKv = sawKv || (c["name"] == "step1.layer1.kCache" && c["shape"] == "8 x 256");
    }
    CHECK(sawLogits);  // the third call (two decode steps after the prompt), the whole vocabulary
    CHECK(sawKv);      // 4 kv heads of 64, in the second layer
  }

  {  // a token outside the vocabulary: exit 2, naming the token and the vocabulary
    const Ran ran = Check(model, "--tokens 1,2,40000,4,5,6");
    CHECK(ran.status == 2);
    CHECK_MESSAGE(Contains(ran.err, "40000"), ran.err);
    CHECK_MESSAGE(Contains(ran.err, "vocabulary is 0 to 31999"), ran.err);
  }

  {  // a missing tensor: exit 2, naming it
    std::error_code ignored;
    fs::remove(model, ignored);  // one 230 MB file at a time
    const std::string damaged = scratch / "without-ffn-down.gguf";
    const Ran remade = Generate(damaged, "--without model.layers.1.mlp.down_proj.weight");
    REQUIRE_MESSAGE(remade.status == 0, remade.err);
    const Ran ran = Check(damaged);
    CHECK(ran.status == 2);
    CHECK_MESSAGE(Contains(ran.err, "blk.1.ffn_down.weight"), ran.err);
  }

  {  // another architecture: exit 2, naming general.architecture
    const std::string falcon = scratch / "falcon.gguf";
    const Ran remade = Generate(falcon, "--architecture falcon");
    REQUIRE_MESSAGE(remade.status == 0, remade.err);
    const Ran ran = Check(falcon);
    CHECK(ran.status == 2);
    CHECK_MESSAGE(Contains(ran.err, "general.architecture"), ran.err);
    CHECK_MESSAGE(Contains(ran.err, "falcon"), ran.err);
  }
}
