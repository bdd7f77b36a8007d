// The stage table: it parses, names files that exist, and lists the reference's
// checkpoints in the reference's order.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "reference/block/block.h"
#include "runner/cases/case_file.h"
#include "runner/stages/stage_table.h"
#include "run_command.h"

TEST_CASE("data/stages.json is consistent with the tree and the reference") {
  auto table = wb::LoadStageTable(wbtest::Source("data/stages.json"));
  REQUIRE(table.ok());
  REQUIRE(table->stages.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(table->stages[i].number == i + 1);
  const wb::StageInfo* one = table->Find(1);
  REQUIRE(one != nullptr);
  REQUIRE(one->available);
  REQUIRE(one->checkpoints.size() == static_cast<size_t>(ref::kCheckpointCount));
  for (int i = 0; i < ref::kCheckpointCount; ++i) {
    CHECK(one->checkpoints[i] == ref::CheckpointName(ref::kCheckpointOrder[i]));
  }
  for (const auto& stage : table->stages) {
    if (!stage.available) continue;
    CAPTURE(stage.number);
    CHECK(std::filesystem::exists(wbtest::Source("stages/" + stage.dir + "/" + stage.file)));
    CHECK(std::filesystem::exists(wbtest::Source("solutions/" + stage.dir + "/" + stage.file)));
    CHECK(std::filesystem::exists(wbtest::Source(stage.lesson)));
    for (const auto& suite : {stage.visible, stage.hiddenExample}) {
      auto cases = wb::LoadCaseFile(wbtest::Source(suite));
      REQUIRE(cases.ok());
      CHECK(cases->stage == stage.number);
    }
  }
}

TEST_CASE("the table's own refusals") {
  CHECK(wb::ParseStageTable(R"({"version": 2, "stages": []})", "t.json").error().message ==
        "t.json: field 'version' must be 1");
  CHECK(wb::ParseStageTable(R"({"version": 1, "stages": [{"number": 1, "dir": "x", "title": "y", "available": true}]})",
                            "t.json").error().message ==
        "t.json: stages[0] is available but lacks 'file', 'visible' or 'checkpoints'");
}
