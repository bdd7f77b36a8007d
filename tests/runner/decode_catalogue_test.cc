// The stage-2 misconception catalogue: every entry links to a heading of the lesson that
// exists, ids are unique, and a planted bug proves each one is recognised.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "run_command.h"
#include "runner/stages/02-kv-cache/decode_misconceptions.h"
#include "runner/stages/stage_table.h"

// A namespace of its own: the folder's test files compile as one unity build.
namespace decode_catalogue_test {

namespace {

// The anchor a Markdown heading gets on GitHub: lower case, punctuation dropped, spaces to '-'.
}  // namespace

TEST_CASE("every stage-2 misconception links to a heading of the stage-2 lesson") {
  const auto anchors = wbtest::HeadingAnchors(wbtest::Source("docs/stages/02-kv-cache.md"));
  REQUIRE(!anchors.empty());
  std::set<std::string> ids;
  for (const auto& m : wb::stage02::DecodeMisconceptions()) {
    CAPTURE(m.id);
    CHECK(anchors.count(std::string(m.lessonAnchor)) == 1);
    CHECK(ids.insert(std::string(m.id)).second);
    CHECK(!m.showsAt.empty());
  }
  CHECK(ids.size() >= 5);
}

TEST_CASE("the stage-2 lesson's table lists exactly the stage-2 catalogue") {
  const std::set<std::string> listed = wbtest::MisconceptionTableIds(wbtest::Source("docs/stages/02-kv-cache.md"));
  std::set<std::string> ids;
  for (const auto& m : wb::stage02::DecodeMisconceptions()) ids.insert(std::string(m.id));
  CHECK(listed == ids);
}

TEST_CASE("every stage-2 misconception is named by a planted bug") {
  std::set<std::string> planted;
  for (const auto& entry : std::filesystem::directory_iterator(wbtest::Source("tests/planted/stage02"))) {
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line) && line.rfind("--- ", 0) != 0) {
      if (line.rfind("misconception: ", 0) == 0) planted.insert(line.substr(15));
    }
  }
  for (const auto& m : wb::stage02::DecodeMisconceptions()) {
    CAPTURE(m.id);
    CHECK(planted.count(std::string(m.id)) == 1);
  }
}

}  // namespace decode_catalogue_test
