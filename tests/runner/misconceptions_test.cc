// The misconception catalogue: it covers the mistakes the stage teaches against, and every
// link it prints lands on a heading of the lesson.
#include <doctest/doctest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "runner/diagnose/misconceptions.h"
#include "run_command.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace misconceptions_test {

namespace {

// The anchor a Markdown renderer (MkDocs, GitHub) gives a heading: lower case, punctuation
// dropped, spaces to hyphens.
}  // namespace

TEST_CASE("the slug rule matches the lesson's own links") {
  CHECK(wbtest::Slug(" RoPE rotates the pairs (f, f+32)") == "rope-rotates-the-pairs-f-f32");
  CHECK(wbtest::Slug(" Pre-norm: the residual stream is never normalised") == "pre-norm-the-residual-stream-is-never-normalised");
}

TEST_CASE("every misconception links a heading of the stage-1 lesson") {
  const auto anchors = wbtest::HeadingAnchors(wbtest::Source("docs/stages/01-block.md"));
  REQUIRE(anchors.size() > 5);
  for (const auto& m : wb::BlockMisconceptions()) {
    CAPTURE(m.id);
    CHECK(anchors.count(std::string(m.lessonAnchor)) == 1);
    CHECK(!m.showsAt.empty());
    CHECK(m.sentence.size() > 20);
  }
}

TEST_CASE("the catalogue names each mistake the stage teaches against") {
  std::set<std::string> ids;
  for (const auto& m : wb::BlockMisconceptions()) CHECK(ids.insert(std::string(m.id)).second);
  for (const char* required :
       {"rope-adjacent-pairs", "rope-reversed", "rope-on-v", "gqa-interleaved", "no-causal-mask",
        "mask-excludes-self", "no-score-scale", "no-max-subtraction", "missing-epsilon", "residual-from-normalised",
        "silu-on-up", "output-from-input", "rope-not-applied", "residual1-without-x", "output-without-residual1"}) {
    CAPTURE(required);
    CHECK(ids.count(required) == 1);
  }
}

TEST_CASE("each misconception's recipe differs from the taught one") {
  for (const auto& m : wb::BlockMisconceptions()) {
    CAPTURE(m.id);
    const ref::BlockRecipe taught;
    const ref::BlockRecipe flipped = m.Flipped();
    CHECK(std::memcmp(&taught, &flipped, sizeof(taught)) != 0);
  }
}

TEST_CASE("every stage-1 misconception is named by a planted bug and listed in the lesson's table") {
  const std::set<std::string> planted = wbtest::PlantedMisconceptions(wbtest::Source("tests/planted/stage01"));
  const std::set<std::string> listed = wbtest::MisconceptionTableIds(wbtest::Source("docs/stages/01-block.md"));
  std::set<std::string> ids;
  for (const auto& m : wb::BlockMisconceptions()) {
    CAPTURE(m.id);
    CHECK(planted.count(std::string(m.id)) == 1);
    CHECK(listed.count(std::string(m.id)) == 1);
    ids.insert(std::string(m.id));
  }
  CHECK(listed == ids);  // no row for a mistake the runner cannot name
}

TEST_CASE("two entries that both match are not a diagnosis; one clearly closer is") {
  const wb::MisconceptionHit a{"a", "A.", "l#a"};
  const wb::MisconceptionHit b{"b", "B.", "l#b"};
  CHECK(wb::Choose({}).hit == std::nullopt);
  CHECK(wb::Choose({{a, 0.3}}).hit->id == "a");
  const auto tie = wb::Choose({{a, 0.0}, {b, 0.0}});
  CHECK(!tie.hit);
  CHECK(tie.tied == std::vector<std::string>{"a", "b"});
  CHECK(!wb::Choose({{a, 0.2}, {b, 0.4}}).hit);          // both well inside the tolerance
  CHECK(wb::Choose({{b, 0.9}, {a, 0.01}}).hit->id == "a");  // a is 90x closer, b only loosely
  CHECK(wb::Choose({{a, 0.1}, {a, 0.2}}).hit->id == "a");   // one mistake that two catalogues know
}

}  // namespace misconceptions_test
