// How many hints a student has seen, per stage and checkpoint, kept in a small JSON file
// in the build folder ({"1": {"q": 2}}), so each `hint` call shows one more.
#pragma once

#include <map>
#include <string>

#include "../../common/expected.h"

namespace wb {

class HintState {
 public:
  // A missing file is an empty state; an unreadable one is an error naming it.
  static Expected<HintState> Load(const std::string& path);
  Status Save() const;  // through a temporary file

  int Shown(int stage, const std::string& checkpoint) const;
  void SetShown(int stage, const std::string& checkpoint, int count);
  void Reset(int stage);

 private:
  std::string path_;
  std::map<std::string, std::map<std::string, int>> shown_;
};

}  // namespace wb
