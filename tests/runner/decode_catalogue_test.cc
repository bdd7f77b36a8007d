// The stage-2 misconception catalogue: every entry links to a heading of the lesson that
// exists, ids are unique, and a planted bug proves each one is recognised.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
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

namespace {

// The anchor a Markdown heading gets on GitHub: lower case, punctuation dropped, spaces to '-'.
std::string Slug(const std::string& heading) {
  std::string slug;
  for (unsigned char c : heading) {
    if (std::isalnum(c)) slug += static_cast<char>(std::tolower(c));
    if (c == ' ' || c == '-') slug += '-';
    if (c == '_') slug += '_';
  }
  return slug;
}

std::set<std::string> Anchors(const std::string& path) {
  std::ifstream in(path);
  std::set<std::string> anchors;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) != 0) continue;
    const size_t text = line.find_first_not_of('#');
    if (text == std::string::npos || line[text] != ' ') continue;
    anchors.insert(Slug(line.substr(text + 1)));
  }
  return anchors;
}

}  // namespace

TEST_CASE("every stage-2 misconception links to a heading of the stage-2 lesson") {
  const auto anchors = Anchors(wbtest::Source("docs/stages/02-kv-cache.md"));
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
