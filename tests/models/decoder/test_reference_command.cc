// `workbook reference` on every fixture (its logits are the goldens), and `reference` and
// `inspect` on truncated copies: exit 2 with "workbook: <file>: ...".
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "decoder_test_support.h"
#include "reference/fixtures/make_fixtures.h"
#include "model/config/config.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_reference_command {

namespace fs = std::filesystem;
using wbtest::Quote;
using wbtest::RunWorkbook;

namespace {

constexpr double kSameModel = 1e-9;  // as in test_fixtures_agree.cc

ref::fixtures::Goldens LoadGoldens(const std::string& family) {
  auto g = ref::fixtures::ParseGoldens(wbtest::ReadFile(wbtest::FixtureDir(family) / "goldens.json"), family);
  REQUIRE(g.ok());
  return *g;
}

std::string TokenList(const std::vector<int>& tokens) { return fmt::format("{}", fmt::join(tokens, ",")); }

// The first `keep` bytes of `from`, written to `to`.
void TruncatedCopy(const fs::path& from, const fs::path& to, size_t keep) {
  const std::string bytes = wbtest::ReadFile(from);
  wbtest::WriteFile(to, bytes.substr(0, std::min(keep, bytes.size())));
}

}  // namespace

TEST_CASE("reference prints the goldens: the last position, or all with --all-logits") {
  REQUIRE_MESSAGE(!wbtest::EnvOrEmpty("WB_WORKBOOK_EXE").empty(), "WB_WORKBOOK_EXE is not set (run through meson test)");
  wbtest::TempDir scratch;
  for (const std::string& family : wbtest::Families()) {
    CAPTURE(family);
    const ref::fixtures::Goldens goldens = LoadGoldens(family);
    const std::string hf = (wbtest::FixtureDir(family) / "hf").string();
    const std::string gguf = (wbtest::FixtureDir(family) / "model.gguf").string();

    auto last = RunWorkbook("reference --model " + Quote(hf) + " --tokens " + TokenList(goldens.tokens), scratch.path());
    REQUIRE_MESSAGE(last.exitCode == 0, last.err);
    const nlohmann::json one = nlohmann::json::parse(last.out);
    CHECK(one["model_type"] == family);
    CHECK(one["format"] == "huggingface");
    CHECK(one["positions"] == nlohmann::json::array({11}));
    REQUIRE(one["logits"].size() == 1);
    CHECK(wbtest::MaxAbsDiff(one["logits"][0].get<std::vector<double>>(), goldens.logits[11]) < kSameModel);

    auto all = RunWorkbook("reference --all-logits --model " + Quote(gguf) + " --tokens " + TokenList(goldens.tokens),
                           scratch.path());
    REQUIRE_MESSAGE(all.exitCode == 0, all.err);
    const nlohmann::json every = nlohmann::json::parse(all.out);
    CHECK(every["format"] == "gguf");
    REQUIRE(every["logits"].size() == 12);
    for (int p = 0; p < 12; ++p) {
      CHECK(wbtest::MaxAbsDiff(every["logits"][p].get<std::vector<double>>(), goldens.logits[p]) < kSameModel);
    }
  }
}

TEST_CASE("truncated copies: reference and inspect exit 2 naming the file") {
  wbtest::TempDir scratch;
  for (const std::string& family : wbtest::Families()) {
    CAPTURE(family);
    const fs::path dir = scratch.path() / family;
    fs::create_directories(dir / "hf");
    // A GGUF cut inside its tensor data, and one cut inside its metadata.
    const fs::path gguf = wbtest::FixtureDir(family) / "model.gguf";
    const size_t ggufSize = fs::file_size(gguf);
    TruncatedCopy(gguf, dir / "data-cut.gguf", ggufSize - 100);
    TruncatedCopy(gguf, dir / "header-cut.gguf", 200);
    // An HF directory whose safetensors lost its last bytes.
    fs::copy_file(wbtest::FixtureDir(family) / "hf" / "config.json", dir / "hf" / "config.json");
    const fs::path shard = wbtest::FixtureDir(family) / "hf" / "model.safetensors";
    TruncatedCopy(shard, dir / "hf" / "model.safetensors", fs::file_size(shard) - 2);
    // And one whose config.json stops halfway.
    fs::create_directories(dir / "cut-config");
    fs::copy_file(shard, dir / "cut-config" / "model.safetensors");
    TruncatedCopy(wbtest::FixtureDir(family) / "hf" / "config.json", dir / "cut-config" / "config.json", 100);

    struct Case {
      fs::path model;
      fs::path named;  // the file the message must name
    };
    for (const Case& c : {Case{dir / "data-cut.gguf", dir / "data-cut.gguf"},
                          Case{dir / "header-cut.gguf", dir / "header-cut.gguf"},
                          Case{dir / "hf", dir / "hf" / "model.safetensors"},
                          Case{dir / "cut-config", dir / "cut-config" / "config.json"}}) {
      CAPTURE(c.model.string());
      const std::string prefix = "workbook: " + c.named.string() + ": ";
      auto reference = RunWorkbook("reference --model " + Quote(c.model.string()) + " --tokens 1,2,3", scratch.path());
      CHECK(reference.exitCode == 2);
      CHECK_MESSAGE(reference.err.rfind(prefix, 0) == 0, reference.err);
      CHECK(reference.out.empty());
      // inspect too: a cut weight file or a cut config.json is exit 2.
      auto inspect = RunWorkbook("inspect " + Quote(c.model.string()), scratch.path());
      CHECK(inspect.exitCode == 2);
      CHECK_MESSAGE(inspect.err.rfind(prefix, 0) == 0, inspect.err);
      // The config path inspect takes: LoadModelConfig fails naming the file too, except
      // where only the weights were cut (the config itself is intact).
      auto config = wb::model::LoadModelConfig(c.model.string());
      if (c.named.filename() != "model.safetensors") {
        REQUIRE_FALSE(config.ok());
        CHECK(config.error().message.rfind(c.named.string() + ": ", 0) == 0);
      } else {
        CHECK(config.ok());
      }
    }
  }
}

TEST_CASE("bad invocations exit 2 with a message") {
  wbtest::TempDir scratch;
  const std::string gguf = (wbtest::FixtureDir("llama") / "model.gguf").string();
  auto letters = RunWorkbook("reference --model " + Quote(gguf) + " --tokens 1,x", scratch.path());
  CHECK(letters.exitCode == 2);
  CHECK(letters.err == "workbook: --tokens: \"x\" is not a token id (expected e.g. 1,2,3)\n");
  auto outside = RunWorkbook("reference --model " + Quote(gguf) + " --tokens 1,64", scratch.path());
  CHECK(outside.exitCode == 2);
  CHECK(outside.err == "workbook: token 64 is outside the vocabulary [0, 64)\n");
  const std::string missing = (scratch.path() / "nothing.gguf").string();
  auto absent = RunWorkbook("reference --model " + Quote(missing) + " --tokens 1", scratch.path());
  CHECK(absent.exitCode == 2);
  CHECK(absent.err == "workbook: " + missing + ": no such file or directory\n");
}

}  // namespace test_reference_command
