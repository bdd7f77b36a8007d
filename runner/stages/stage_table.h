// The stage table (data/stages.json): the one place that says which stages exist, where
// their files, lessons and suites are, and which checkpoints each has, in order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "../../common/expected.h"

namespace wb {

struct StageInfo {
  int number = 0;
  std::string dir;       // "01-block": the folder under stages/ and solutions/
  std::string file;      // "block.cc"
  std::string function;  // "decoder_block"
  std::string title;
  std::string lesson;    // relative to the workbook root
  std::string visible;   // relative to the workbook root
  std::string hiddenExample;
  std::vector<std::string> checkpoints;
  std::map<std::string, std::vector<std::string>> hints;  // per checkpoint, gentlest first
  bool available = false;
};

struct StageTable {
  int version = 0;
  std::vector<StageInfo> stages;

  const StageInfo* Find(int number) const;
  const StageInfo* Next(int number) const;  // the stage after `number`, available or not
};

Expected<StageTable> ParseStageTable(const std::string& text, const std::string& pathForMessages);
Expected<StageTable> LoadStageTable(const std::string& path);

}  // namespace wb
