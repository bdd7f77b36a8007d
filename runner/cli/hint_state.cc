#include "hint_state.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace wb {

Expected<HintState> HintState::Load(const std::string& path) {
  HintState state;
  state.path_ = path;
  std::ifstream in(path);
  if (!in) return state;
  std::ostringstream text;
  text << in.rdbuf();
  try {
    const auto root = nlohmann::json::parse(text.str());
    for (const auto& [stage, checkpoints] : root.items()) {
      for (const auto& [checkpoint, count] : checkpoints.items()) state.shown_[stage][checkpoint] = count.get<int>();
    }
  } catch (const nlohmann::json::exception& e) {
    return BadData(fmt::format("{}: not a hint record ({}); delete it to start the hints over", path, e.what()));
  }
  return state;
}

Status HintState::Save() const {
  nlohmann::json root = nlohmann::json::object();
  for (const auto& [stage, checkpoints] : shown_) {
    for (const auto& [checkpoint, count] : checkpoints) root[stage][checkpoint] = count;
  }
  const std::string temporary = path_ + ".partial";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << root.dump(2) << "\n";
    if (!out) return SystemError(fmt::format("{}: cannot write the hint record", temporary));
  }
  if (std::rename(temporary.c_str(), path_.c_str()) != 0) {
    return SystemError(fmt::format("{}: cannot write the hint record", path_));
  }
  return Status::Ok();
}

int HintState::Shown(int stage, const std::string& checkpoint) const {
  const auto s = shown_.find(std::to_string(stage));
  if (s == shown_.end()) return 0;
  const auto c = s->second.find(checkpoint);
  return c == s->second.end() ? 0 : c->second;
}

void HintState::SetShown(int stage, const std::string& checkpoint, int count) {
  shown_[std::to_string(stage)][checkpoint] = count;
}

void HintState::Reset(int stage) { shown_.erase(std::to_string(stage)); }

}  // namespace wb
