// The course self-check: walks data/stages.json and proves, for every stage, what a student
// and a reader rely on (rustlings' `dev check` is the model). Nothing here names a stage.
//   - the shipped starter fails at its first checkpoint, as not implemented;
//   - the solution passes its visible and hidden-example suites, and every case reports the
//     row's checkpoints, in the row's order, named as the row's reported_as says;
//   - every .bug file of the stage's planted folder is a test of the build (the build passes
//     the bugs it registered as arguments), and each says where it must be caught in names
//     of the table;
//   - every per-call and per-case checkpoint has hints, the lesson exists, and the row has a
//     bench exactly when the build made one;
//   - every misconception the runner's catalogues can name has two or three graded hints;
//   - the visible suite, which a student reads in full, has every kind of edge case the
//     hidden example has, with seeds of its own;
//   - every relative link of the README and the docs reaches a file, and its #anchor a heading;
//   - the README's and docs/index.md's stage tables and mkdocs.yml's nav agree with the table.
// Run: course-check STAGE:BUG,BUG,... ...  (with WB_RUNNER and WB_SOURCE set, as meson does)
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runner/cases/case_file.h"
#include "runner/diagnose/misconceptions.h"
#include "runner/stages/02-kv-cache/decode_misconceptions.h"
#include "runner/stages/03-fused/kernel_checks.h"
#include "runner/stages/04-quant/kernel_checks.h"
#include "runner/stages/04-quant/quant_checks.h"
#include "runner/stages/05-decoder/decoder_misconceptions.h"
#include "runner/stages/stage_driver.h"
#include "runner/stages/stage_table.h"
#include "tests/runner/run_command.h"

namespace {

namespace fsys = std::filesystem;
using nlohmann::json;
using wbtest::Source;
using wbtest::Workbook;

std::map<int, std::set<std::string>> g_registeredBugs;  // from the command line

const wb::StageTable& Table() {
  static const wb::StageTable table = [] {
    auto loaded = wb::LoadStageTable(Source("data/stages.json"));
    REQUIRE_MESSAGE(loaded.ok(), (loaded.ok() ? "" : loaded.error().message));
    return *loaded;
  }();
  return table;
}

std::vector<const wb::StageInfo*> Available() {
  std::vector<const wb::StageInfo*> stages;
  for (const auto& s : Table().stages) {
    if (s.available) stages.push_back(&s);
  }
  return stages;
}

json CheckJson(const std::string& arguments, int& status) {
  const auto ran = Workbook(arguments + " --format json");
  status = ran.status;
  try {
    return json::parse(ran.out);
  } catch (const json::exception&) {
    FAIL("not JSON from `check " << arguments << "`: " << ran.out << ran.err);
    return {};
  }
}

}  // namespace

TEST_CASE("every starter fails at its first checkpoint, as not implemented yet") {
  for (const wb::StageInfo* stage : Available()) {
    CAPTURE(stage->number);
    int status = 0;
    const json report = CheckJson(fmt::format("check {}", stage->number), status);
    CHECK(status == 1);
    REQUIRE(!report["cases"].empty());
    // A kernel case (its one checkpoint is a kernel of the row) fails at its kernel, every
    // other case at the row's first checkpoint.
    auto firstOf = [stage](const json& c) {
      const bool kernelCase = !c["checkpoints"].empty() &&
                              stage->FindKernel(c["checkpoints"][0]["name"].get<std::string>()) != nullptr;
      return kernelCase ? c["checkpoints"][0]["name"].get<std::string>() : stage->Reported(stage->checkpoints.front(), 1);
    };
    for (const auto& c : report["cases"]) {
      CAPTURE(c["name"]);
      CHECK(c["status"] == "not_implemented");
      CHECK(c["first_failure"] == firstOf(c));
    }
    // The text a student reads: what to do first, and where to read how; no color into a pipe.
    const auto text = Workbook(fmt::format("check {}", stage->number));
    CHECK(text.status == 1);
    CHECK(text.out.find(firstOf(report["cases"][0]) + " is not implemented yet") != std::string::npos);
    CHECK(text.out.find(stage->lesson) != std::string::npos);
    CHECK(text.out.find('\033') == std::string::npos);
  }
}

TEST_CASE("every solution passes its visible and hidden-example suites with the row's checkpoints") {
  for (const wb::StageInfo* stage : Available()) {
    for (const std::string& suite : {stage->visible, stage->hiddenExample}) {
      CAPTURE(stage->number);
      CAPTURE(suite);
      int status = 0;
      const json report = CheckJson(
          fmt::format("check {} --solutions --show-hidden --cases {}", stage->number, wbtest::Quote(Source(suite))),
          status);
      CHECK(status == 0);
      REQUIRE(!report["cases"].empty());
      for (const auto& c : report["cases"]) {
        CAPTURE(c["name"]);
        CHECK(c["status"] == "pass");
        CHECK(c["first_failure"].is_null());
        for (const auto& cp : c["checkpoints"]) {
          CHECK(cp["status"] == "pass");
          CHECK(cp["misconception"].is_null());
        }
        // A kernel case: its kernel's checkpoint, then, where the file packs its weights (stage
        // 4's pack_q), the same kernel's run on packed weights. Any other: call by call, the
        // row's checkpoints in the row's order; then the per-case ones.
        std::vector<std::string> expected;
        const auto& checkpoints = c["checkpoints"];
        REQUIRE(!checkpoints.empty());
        const std::string first = checkpoints[0]["name"].get<std::string>();
        if (stage->FindKernel(first) != nullptr) {
          CHECK(checkpoints.size() <= 2);
          if (checkpoints.size() == 2) CHECK(checkpoints[1]["name"] == first + wb::kPackedRunSuffix);
          // Stage 4's solution packs: each of its matmul_q cases checks the packed run too.
          if (stage->number == 4 && first == "matmul_q") CHECK(checkpoints.size() == 2);
          continue;
        }
        size_t calls = 0;
        for (const auto& cp : checkpoints) {
          if (cp["name"] == stage->Reported(stage->checkpoints.front(), static_cast<int>(calls) + 1)) ++calls;
        }
        CHECK(calls >= 1);
        std::vector<std::string> got;
        for (const auto& cp : checkpoints) got.push_back(cp["name"]);
        if (!stage->layerCheckpoints.empty()) {
          // A stage with layers (5), call by call: the first per-call checkpoint, then each
          // layer's checkpoints in the row's order (experts on MoE layers only), then the
          // other per-call ones; then the per-case ones.
          size_t at = 0;
          auto next = [&]() -> std::string { return at < got.size() ? got[at] : std::string(); };
          for (size_t call = 1; call <= calls; ++call) {
            const int n = static_cast<int>(call);
            CHECK(next() == stage->Reported(stage->checkpoints.front(), n));
            ++at;
            for (int layer = 0;; ++layer) {
              const std::string marker = "\x1f";
              std::string prefix = stage->Reported(marker, n, layer);
              prefix = prefix.substr(0, prefix.find(marker));
              if (next().rfind(prefix, 0) != 0) {
                CHECK(layer > 0);
                break;
              }
              auto from = stage->layerCheckpoints.begin();
              while (next().rfind(prefix, 0) == 0) {
                const std::string base = next().substr(prefix.size());
                const auto found = std::find(from, stage->layerCheckpoints.end(), base);
                CAPTURE(next());
                REQUIRE(found != stage->layerCheckpoints.end());
                CHECK((found == from || *from == "experts"));  // in order; only experts may be absent
                from = found + 1;
                ++at;
              }
            }
            for (const auto& name : stage->checkpoints) {
              if (stage->PerLayer(name) || name == stage->checkpoints.front()) continue;
              CHECK(next() == stage->Reported(name, n));
              ++at;
            }
          }
          for (size_t i = at; i < got.size(); ++i) {
            CAPTURE(got[i]);
            CHECK(std::find(stage->caseCheckpoints.begin(), stage->caseCheckpoints.end(), got[i]) !=
                  stage->caseCheckpoints.end());
          }
          continue;
        }
        for (size_t call = 1; call <= calls; ++call) {
          for (const auto& name : stage->checkpoints) expected.push_back(stage->Reported(name, static_cast<int>(call)));
        }
        REQUIRE(got.size() >= expected.size());
        CHECK(std::equal(expected.begin(), expected.end(), got.begin()));
        for (size_t i = expected.size(); i < got.size(); ++i) {
          CAPTURE(got[i]);
          CHECK(std::find(stage->caseCheckpoints.begin(), stage->caseCheckpoints.end(), got[i]) !=
                stage->caseCheckpoints.end());
        }
      }
    }
  }
}

TEST_CASE("every planted bug is a test of the build and is caught at a checkpoint of the table") {
  for (const wb::StageInfo* stage : Available()) {
    CAPTURE(stage->number);
    std::set<std::string> files;
    for (const auto& entry : fsys::directory_iterator(Source(stage->planted))) {
      if (entry.path().extension() != ".bug") continue;
      files.insert(entry.path().stem().string());
      std::istringstream lines(wbtest::ReadFile(entry.path().string()));
      std::string line;
      bool caughtAt = false;
      while (std::getline(lines, line) && line.rfind("--- ", 0) != 0) {
        if (line.rfind("caught-at", 0) != 0) continue;
        caughtAt = true;
        const std::string where = line.substr(line.find(':') + 1 + (line.find(": ") != std::string::npos));
        CAPTURE(entry.path().filename().string());
        CAPTURE(where);
        CHECK((where == "none" || where == "null" || stage->BaseName(where).has_value()));
      }
      CHECK_MESSAGE(caughtAt, entry.path().filename().string() << " says nowhere where it is caught");
    }
    CHECK(!files.empty());
    CHECK_MESSAGE(files == g_registeredBugs[stage->number],
                  "the build's planted tests differ from the folder's .bug files: reconfigure (meson setup --reconfigure)");
  }
}

TEST_CASE("every checkpoint has hints, and every lesson exists") {
  for (const auto& stage : Table().stages) {
    CAPTURE(stage.number);
    CHECK(fsys::exists(Source(stage.lesson)) == stage.available);
    if (!stage.available) continue;
    CHECK(fsys::exists(Source("stages/" + stage.dir + "/" + stage.file)));
    CHECK(fsys::exists(Source("solutions/" + stage.dir + "/" + stage.file)));
    CHECK(fsys::exists(Source("runner/stages/" + stage.dir + "/meson.build")));
    // The row says it has a bench exactly when the build made one (from bench_call.cc).
    const wb::StageBuild* build = wb::FindStageBuild(stage.number);
    const auto heavy = wb::HeavyStageNumbers();
    if (build == nullptr) {
      // A heavy stage is built into workbook-decoder, not into the runner this test links.
      CHECK(std::find(heavy.begin(), heavy.end(), stage.number) != heavy.end());
    } else {
      CHECK(stage.bench.empty() == (std::string(build->benchHarnessLibrary).empty()));
    }
    for (const auto& name : stage.AllCheckpoints()) {
      CAPTURE(name);
      CHECK(stage.hints.count(name) == 1);
    }
  }
}

namespace {

// Every catalogue the runner links: the block's, and each stage's own beside its driver.
std::vector<std::string> AllMisconceptionIds() {
  std::vector<std::string> ids;
  for (const auto& m : wb::BlockMisconceptions()) ids.emplace_back(m.id);
  for (const auto& m : wb::stage02::DecodeMisconceptions()) ids.emplace_back(m.id);
  for (const auto& id : wb::stage03::KernelMisconceptionIds()) ids.emplace_back(id);
  for (const auto& id : wb::stage04::QuantizeMisconceptionIds()) ids.emplace_back(id);
  for (const auto& id : wb::stage04::MatmulMisconceptionIds()) ids.emplace_back(id);
  for (const auto& id : wb::stage05::DecoderMisconceptionIds()) ids.emplace_back(id);
  return ids;
}

// The section "## Mistakes the runner names" of a lesson, up to the next "## " heading.
std::string MistakesSection(const std::string& lesson) {
  const std::string heading = "\n## Mistakes the runner names\n";
  const size_t start = lesson.find(heading);
  if (start == std::string::npos) return "";
  const size_t end = lesson.find("\n## ", start + heading.size());
  return lesson.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The misconception each of a planted folder's bugs must be named as ("none" left out).
std::set<std::string> PlantedMisconceptions(const std::string& folder) {
  std::set<std::string> ids;
  for (const auto& entry : fsys::directory_iterator(Source(folder))) {
    if (entry.path().extension() != ".bug") continue;
    std::istringstream lines(wbtest::ReadFile(entry.path().string()));
    std::string line;
    while (std::getline(lines, line) && line.rfind("--- ", 0) != 0) {
      if (line.rfind("misconception:", 0) != 0) continue;
      std::string id = line.substr(std::string("misconception:").size());
      id.erase(0, id.find_first_not_of(' '));
      if (id != "none") ids.insert(id);
    }
  }
  return ids;
}

}  // namespace

TEST_CASE("every mistake a lesson says the runner names is a planted bug that it must name") {
  // A lesson's claim "the runner names X here" holds only if a planted bug of the stage makes
  // X and its test (tests/planted) sees the runner name X at the checkpoint the bug gives.
  const std::vector<std::string> catalogue = AllMisconceptionIds();
  const std::set<std::string> known(catalogue.begin(), catalogue.end());
  std::set<std::string> documented;
  for (const wb::StageInfo* stage : Available()) {
    CAPTURE(stage->lesson);
    const std::string section = MistakesSection(wbtest::ReadFile(Source(stage->lesson)));
    REQUIRE_MESSAGE(!section.empty(), "the lesson has no section \"## Mistakes the runner names\"");
    const std::set<std::string> planted = PlantedMisconceptions(stage->planted);
    int claimed = 0;
    for (size_t open = section.find('`'); open != std::string::npos; open = section.find('`', open + 1)) {
      const size_t close = section.find('`', open + 1);
      if (close == std::string::npos) break;
      const std::string id = section.substr(open + 1, close - open - 1);
      open = close;
      if (!known.count(id)) continue;
      ++claimed;
      documented.insert(id);
      CAPTURE(id);
      CHECK_MESSAGE(planted.count(id) == 1, "the lesson names " << id << ", but no bug in " << stage->planted
                                                                << " is planted to be named " << id);
    }
    CHECK(claimed > 0);
  }
  // And the other way: every misconception a planted bug is named as is in some lesson.
  for (const wb::StageInfo* stage : Available()) {
    for (const std::string& id : PlantedMisconceptions(stage->planted)) {
      CAPTURE(id);
      CHECK_MESSAGE(documented.count(id) == 1, "no lesson's \"Mistakes the runner names\" names " << id);
    }
  }
}

TEST_CASE("every misconception the runner can name has graded hints") {
  // `hint` shows the table's misconception_hints when the first failure is one of these.
  const std::vector<std::string> ids = AllMisconceptionIds();
  REQUIRE(ids.size() >= 19);
  for (const auto& id : ids) {
    CAPTURE(id);
    const auto hints = Table().misconceptionHints.find(id);
    REQUIRE(hints != Table().misconceptionHints.end());
    CHECK(hints->second.size() >= 2);
    CHECK(hints->second.size() <= 3);
  }
}

namespace {

// The kinds of edge case a case is, in the terms the lessons teach them.
std::set<std::string> EdgeKinds(const wb::CaseSpec& c) {
  const std::vector<int> calls = c.steps.empty() ? std::vector<int>{c.T} : c.steps;
  std::set<std::string> kinds;
  if (calls.front() == 1) kinds.insert("a first call of one token");
  if (c.Tokens() >= 64) kinds.insert("a long sequence");
  if (c.xScale < 0.01) kinds.insert("tiny inputs");
  if (c.wScale >= 8) kinds.insert("huge scores");
  if (calls.size() >= 6) kinds.insert("many calls");
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i] > 1 && calls[i] % 2 == 1) kinds.insert("an odd length");
    if (i > 0 && calls[i] > 1) kinds.insert("a prefill in chunks");
  }
  // What only a stage with a paged cache varies (stage 5): its rows, its pages, its threads,
  // the rows with logits.
  if (!c.model.empty()) {
    kinds.insert("a cache of " + c.cache + " rows");
    if (c.pageSize == 1) kinds.insert("pages of one position");
    if (c.pageSize > 1 && c.pageSize % 2 == 1) kinds.insert("pages of an odd size");
    if (c.threads >= 2) kinds.insert("two threads or more");
    if (c.lastLogitsOnly) kinds.insert("the last row of logits only");
    if (!c.variant.empty()) kinds.insert("the model's " + c.variant + " variant");
    if (c.model == "gemma3_text" || c.model == "mistral") {
      if (calls.front() > 4) kinds.insert("a prompt longer than the window");
    }
  }
  return kinds;
}

}  // namespace

TEST_CASE("the visible suite has every kind of edge case the hidden example has, with seeds of its own") {
  for (const wb::StageInfo* stage : Available()) {
    CAPTURE(stage->number);
    auto visible = wb::LoadCaseFile(Source(stage->visible), Table());
    auto hidden = wb::LoadCaseFile(Source(stage->hiddenExample), Table());
    REQUIRE(visible.ok());
    REQUIRE(hidden.ok());
    std::set<std::string> shown;
    std::set<uint64_t> seeds;
    for (const auto& c : visible->cases) {
      CHECK(!c.hidden);
      const auto kinds = EdgeKinds(c);
      shown.insert(kinds.begin(), kinds.end());
      seeds.insert(c.seed);
    }
    for (const auto& c : hidden->cases) {
      CAPTURE(c.name);
      CHECK(seeds.count(c.seed) == 0);  // the hidden example stays the instructors' own
      for (const auto& kind : EdgeKinds(c)) {
        CAPTURE(kind);
        CHECK(shown.count(kind) == 1);
      }
    }
    CHECK(shown.size() >= 4);
  }
}

TEST_CASE("every relative link of the README and the docs reaches a file and a heading") {
  std::vector<fsys::path> pages = {Source("README.md")};
  for (const auto& entry : fsys::recursive_directory_iterator(Source("docs"))) {
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  }
  const std::regex link(R"(\]\(([^)\s]+)\))");
  for (const auto& page : pages) {
    const std::string text = wbtest::ReadFile(page.string());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1];
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
      CAPTURE(page.string());
      CAPTURE(target);
      const size_t hash = target.find('#');
      const std::string file = target.substr(0, hash);
      const fsys::path resolved = file.empty() ? page : (page.parent_path() / file).lexically_normal();
      CHECK(fsys::exists(resolved));
      if (hash != std::string::npos && resolved.extension() == ".md" && fsys::exists(resolved)) {
        CHECK(wbtest::HeadingAnchors(resolved.string()).count(target.substr(hash + 1)) == 1);
      }
    }
  }
}

TEST_CASE("the README's and the docs index's stage tables and the site's nav agree with the table") {
  const std::string readme = wbtest::ReadFile(Source("README.md"));
  const std::string index = wbtest::ReadFile(Source("docs/index.md"));
  const std::string nav = wbtest::ReadFile(Source("mkdocs.yml"));
  auto row = [](const std::string& text, int number) {
    const std::string start = fmt::format("\n| {} |", number);
    const size_t at = text.find(start);
    if (at == std::string::npos) return std::string();
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  for (const auto& stage : Table().stages) {
    CAPTURE(stage.number);
    const std::string lessonInDocs = stage.lesson.substr(std::string("docs/").size());
    const std::string inReadme = row(readme, stage.number);
    const std::string inIndex = row(index, stage.number);
    REQUIRE(!inReadme.empty());
    REQUIRE(!inIndex.empty());
    const bool navLists = nav.find(fmt::format("\"{}. {}\": {}", stage.number, stage.title, lessonInDocs)) !=
                          std::string::npos;
    if (stage.available) {
      CHECK(inReadme.find("](" + stage.lesson + ")") != std::string::npos);
      CHECK(inIndex.find(fmt::format("[{}]({})", stage.title, lessonInDocs)) != std::string::npos);
      CHECK(navLists);
      if (!stage.bench.empty()) CHECK(inReadme.find(fmt::format("`./workbook bench {}`", stage.number)) != std::string::npos);
    } else {
      CHECK(inReadme.find("coming") != std::string::npos);
      CHECK(inIndex.find("coming") != std::string::npos);
      CHECK(!navLists);
    }
  }
}

int main(int argc, char** argv) {
  // Arguments "STAGE:BUG,BUG" are the planted tests the build registered; the rest is doctest's.
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t colon = arg.find(':');
    if (arg.rfind("-", 0) == 0 || colon == std::string::npos) {
      rest.push_back(argv[i]);
      continue;
    }
    std::set<std::string>& bugs = g_registeredBugs[std::stoi(arg.substr(0, colon))];
    std::istringstream list(arg.substr(colon + 1));
    for (std::string bug; std::getline(list, bug, ',');) bugs.insert(bug);
  }
  doctest::Context context(static_cast<int>(rest.size()), rest.data());
  return context.run();
}
