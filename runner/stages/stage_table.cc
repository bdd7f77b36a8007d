#include "stage_table.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace wb {

const StageInfo* StageTable::Find(int number) const {
  for (const auto& s : stages) {
    if (s.number == number) return &s;
  }
  return nullptr;
}

const StageInfo* StageTable::Next(int number) const {
  for (const auto& s : stages) {
    if (s.number > number) return &s;
  }
  return nullptr;  // the last stage
}

Expected<StageTable> ParseStageTable(const std::string& text, const std::string& path) {
  using nlohmann::json;
  auto fail = [&path](const std::string& what) { return BadData(fmt::format("{}: {}", path, what)); };
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    return fail(fmt::format("not valid JSON: {}", e.what()));
  }
  StageTable table;
  if (!root.is_object() || !root.contains("version") || root["version"] != 1) {
    return fail("field 'version' must be 1");
  }
  table.version = 1;
  if (!root.contains("stages") || !root["stages"].is_array()) return fail("field 'stages' must be an array");
  auto text_of = [](const json& o, const char* key) {
    return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
  };
  for (size_t i = 0; i < root["stages"].size(); ++i) {
    const json& s = root["stages"][i];
    StageInfo info;
    if (!s.is_object() || !s.contains("number") || !s["number"].is_number_integer()) {
      return fail(fmt::format("stages[{}].number must be an integer", i));
    }
    info.number = s["number"].get<int>();
    info.dir = text_of(s, "dir");
    info.file = text_of(s, "file");
    info.function = text_of(s, "function");
    info.title = text_of(s, "title");
    info.lesson = text_of(s, "lesson");
    info.visible = text_of(s, "visible");
    info.hiddenExample = text_of(s, "hidden_example");
    info.available = s.value("available", false);
    if (s.contains("checkpoints")) {
      for (const auto& c : s["checkpoints"]) {
        if (!c.is_string()) return fail(fmt::format("stages[{}].checkpoints must hold names", i));
        info.checkpoints.push_back(c.get<std::string>());
      }
    }
    if (s.contains("hints")) {
      if (!s["hints"].is_object()) return fail(fmt::format("stages[{}].hints must map checkpoints to lists", i));
      for (const auto& [checkpoint, list] : s["hints"].items()) {
        if (std::find(info.checkpoints.begin(), info.checkpoints.end(), checkpoint) == info.checkpoints.end()) {
          return fail(fmt::format("stages[{}].hints names '{}', which is not one of its checkpoints", i, checkpoint));
        }
        if (!list.is_array() || list.empty()) {
          return fail(fmt::format("stages[{}].hints.{} must be a non-empty list of hints", i, checkpoint));
        }
        for (const auto& hint : list) {
          if (!hint.is_string()) return fail(fmt::format("stages[{}].hints.{} must hold text", i, checkpoint));
          info.hints[checkpoint].push_back(hint.get<std::string>());
        }
      }
    }
    if (info.dir.empty() || info.title.empty()) return fail(fmt::format("stages[{}] needs 'dir' and 'title'", i));
    if (info.available && (info.file.empty() || info.visible.empty() || info.checkpoints.empty())) {
      return fail(fmt::format("stages[{}] is available but lacks 'file', 'visible' or 'checkpoints'", i));
    }
    table.stages.push_back(std::move(info));
  }
  return table;
}

Expected<StageTable> LoadStageTable(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadData(fmt::format("{}: cannot open the stage table", path));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseStageTable(text.str(), path);
}

}  // namespace wb
