// The committed fixtures are what the generator writes: every model file byte for byte,
// goldens.json number for number (the logits go through libm, whose last bits may differ
// between machines), and no file more or less.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "decoder_test_support.h"
#include "reference/fixtures/make_fixtures.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace test_fixtures_regenerate {

namespace fs = std::filesystem;

namespace {

// Relative tolerance for regenerated goldens: libm's exp/tanh/sin/cos/pow are within an ulp
// or so of each other across platforms; through a few hundred operations that stays far
// below 1e-12 of the largest logit, while any real change to a weight or switch is > 1e-6.
constexpr double kGoldenRelative = 1e-12;

const std::string kRegenerate =
    "regenerate with: build-dir/reference/fixtures/workbook-make-fixtures data/models (and commit)";

// The workbook's own model lives beside the toys but is trained, not generated
// (training/train_kjv.py; tests/generate/trained_model_check.py checks its files).
constexpr std::string_view kTrainedModelFolder = "kjv-llama-2m/";

std::set<std::string> FilesUnder(const fs::path& root) {
  std::set<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string relative = fs::relative(entry.path(), root).generic_string();
    if (entry.is_regular_file() && !relative.starts_with(kTrainedModelFolder)) files.insert(relative);
  }
  return files;
}

}  // namespace

TEST_CASE("regenerating the fixtures reproduces the committed ones") {
  wbtest::TempDir scratch;
  REQUIRE(!scratch.path().empty());
  const wb::Status written = ref::fixtures::WriteAllFixtures(scratch.path().string());
  REQUIRE_MESSAGE(written.ok(), written.error().message);
  const fs::path committed = wbtest::ModelsRoot();
  const std::set<std::string> fresh = FilesUnder(scratch.path());
  const std::set<std::string> kept = FilesUnder(committed);
  CHECK_MESSAGE(fresh == kept, kRegenerate);
  // config, safetensors, gguf, goldens per family; llama's Q8_0, Q4_0 and F32 GGUFs; the
  // HF-only variants of qwen3_moe (dense-layer) and mixtral (tied-router): config,
  // safetensors, goldens each.
  CHECK(fresh.size() == 8 * 4 + 3 + 3 + 3);
  for (const std::string& file : fresh) {
    CAPTURE(file);
    const std::string a = wbtest::ReadFile(scratch.path() / file);
    const std::string b = wbtest::ReadFile(committed / file);
    if (!fs::path(file).filename().string().starts_with("goldens")) {
      const bool sameBytes = a == b;  // not CHECK(a == b): that would print the binary files
      CHECK_MESSAGE(sameBytes, kRegenerate);
      continue;
    }
    auto fresher = ref::fixtures::ParseGoldens(a, file);
    auto older = ref::fixtures::ParseGoldens(b, file);
    REQUIRE(fresher.ok());
    REQUIRE_MESSAGE(older.ok(), older.error().message);
    CHECK(fresher->tokens == older->tokens);
    REQUIRE(fresher->logits.size() == older->logits.size());
    double largest = 0, worst = 0;
    for (size_t r = 0; r < older->logits.size(); ++r) {
      REQUIRE(fresher->logits[r].size() == older->logits[r].size());
      for (size_t i = 0; i < older->logits[r].size(); ++i) {
        largest = std::max(largest, std::abs(older->logits[r][i]));
        worst = std::max(worst, std::abs(fresher->logits[r][i] - older->logits[r][i]));
      }
    }
    CHECK_MESSAGE(worst <= kGoldenRelative * largest, kRegenerate);
  }
}

TEST_CASE("the generator is deterministic: two runs write the same bytes") {
  wbtest::TempDir first, second;
  const auto families = ref::fixtures::ToyFamilies();
  REQUIRE(families.size() == 8);
  // Gemma exercises the most writer paths (sandwich norms, +1, the bool-array key).
  const ref::fixtures::ToyFamily& gemma = families[6];
  REQUIRE(gemma.modelType == "gemma3_text");
  REQUIRE(ref::fixtures::WriteFamilyFixtures(gemma, first.path().string()).ok());
  REQUIRE(ref::fixtures::WriteFamilyFixtures(gemma, second.path().string()).ok());
  for (const std::string& file : FilesUnder(first.path())) {
    CAPTURE(file);
    CHECK(wbtest::ReadFile(first.path() / file) == wbtest::ReadFile(second.path() / file));
  }
}

TEST_CASE("goldens round-trip through their text form exactly") {
  ref::fixtures::Goldens g;
  g.modelType = "llama";
  g.tokens = {3, 1};
  g.logits = {{0.1, -1.0 / 3.0, 1e-300}, {2.0 / 7.0, 12345.678901234567, -0.0}};
  auto back = ref::fixtures::ParseGoldens(ref::fixtures::FormatGoldens(g), "goldens.json");
  REQUIRE(back.ok());
  CHECK(back->logits == g.logits);
  CHECK(back->tokens == g.tokens);
  CHECK(ref::fixtures::ParseGoldens("{\"version\": 1, \"model_type\": \"x\", \"tokens\": [1], \"logits\": []}",
                                    "g.json")
            .error()
            .message == "g.json: logits: expected one row per token");
  CHECK(ref::fixtures::ParseGoldens("{\"version\": 0, \"model_type\": \"x\", \"tokens\": [], \"logits\": []}",
                                    "g.json")
            .error()
            .message == "g.json: version: expected 1; regenerate the fixtures with workbook-make-fixtures");
}

}  // namespace test_fixtures_regenerate
