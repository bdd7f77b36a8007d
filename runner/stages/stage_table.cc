#include "stage_table.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace wb {
namespace {

using nlohmann::json;

constexpr const char* kCheckpointField = "{checkpoint}";
constexpr const char* kCallField = "{call}";

void ReplaceAll(std::string& text, const std::string& field, const std::string& value) {
  for (size_t at = text.find(field); at != std::string::npos; at = text.find(field, at + value.size())) {
    text.replace(at, field.size(), value);
  }
}

// Whether `text` is `pattern` with {call} standing for a positive number.
bool MatchesCallPattern(const std::string& text, const std::string& pattern) {
  const size_t at = pattern.find(kCallField);
  if (at == std::string::npos) return text == pattern;
  const std::string before = pattern.substr(0, at);
  const std::string after = pattern.substr(at + std::string(kCallField).size());
  if (text.size() <= before.size() + after.size() || text.compare(0, before.size(), before) != 0 ||
      text.compare(text.size() - after.size(), after.size(), after) != 0) {
    return false;
  }
  const std::string digits = text.substr(before.size(), text.size() - before.size() - after.size());
  return std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }) &&
         digits[0] != '0';
}

}  // namespace

std::string StageInfo::Reported(const std::string& name, int call) const {
  std::string text = reportedAs;
  ReplaceAll(text, kCallField, std::to_string(call));
  ReplaceAll(text, kCheckpointField, name);
  return text;
}

bool KernelInfo::Takes(const std::string& field) const {
  return std::find(fields.begin(), fields.end(), field) != fields.end();
}

const KernelInfo* StageInfo::FindKernel(const std::string& name) const {
  for (const auto& kernel : kernels) {
    if (kernel.name == name) return &kernel;
  }
  return nullptr;
}

std::string StageInfo::Reported(const std::string& name, int call, int layer) const {
  return Reported(fmt::format("{}{}.{}", kLayerPrefix, layer, name), call);
}

bool StageInfo::PerLayer(const std::string& name) const {
  return std::find(layerCheckpoints.begin(), layerCheckpoints.end(), name) != layerCheckpoints.end();
}

std::optional<std::string> StageInfo::BaseName(const std::string& reported) const {
  if (FindKernel(reported) != nullptr) return reported;
  const std::string_view packed = kPackedRunSuffix;
  if (reported.size() > packed.size() && reported.ends_with(packed)) {
    const std::string kernel = reported.substr(0, reported.size() - packed.size());
    if (FindKernel(kernel) != nullptr) return kernel;
  }
  for (const auto& name : caseCheckpoints) {
    if (reported == name) return name;
  }
  for (const auto& name : checkpoints) {
    std::string pattern = reportedAs;
    ReplaceAll(pattern, kCheckpointField, name);
    if (MatchesCallPattern(reported, pattern)) return name;
    if (!PerLayer(name)) continue;
    // "step2.layer10.q": the call pattern with the layer's prefix before the name.
    const size_t dot = reported.rfind('.');
    if (dot == std::string::npos || reported.compare(dot + 1, std::string::npos, name) != 0) continue;
    const size_t layerAt = reported.rfind('.', dot - 1);
    const size_t start = layerAt == std::string::npos ? 0 : layerAt + 1;
    const std::string layer = reported.substr(start, dot - start);
    const std::string digits = layer.substr(std::min(layer.size(), std::string(kLayerPrefix).size()));
    if (layer.rfind(kLayerPrefix, 0) != 0 || digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
      continue;
    }
    std::string withoutLayer = reported;
    withoutLayer.erase(start, dot + 1 - start);
    if (MatchesCallPattern(withoutLayer, pattern)) return name;
  }
  return std::nullopt;
}

std::vector<std::string> StageInfo::AllCheckpoints() const {
  std::vector<std::string> all;
  for (const auto& kernel : kernels) all.push_back(kernel.name);
  all.insert(all.end(), checkpoints.begin(), checkpoints.end());
  all.insert(all.end(), caseCheckpoints.begin(), caseCheckpoints.end());
  return all;
}

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

std::string StageTable::Numbers() const {
  if (stages.empty()) return "none";
  return fmt::format("{} to {}", stages.front().number, stages.back().number);
}

Expected<StageTable> ParseStageTable(const std::string& text, const std::string& path) {
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
  for (size_t i = 0; i < root["stages"].size(); ++i) {
    const json& s = root["stages"][i];
    const std::string at = fmt::format("stages[{}]", i);
    if (!s.is_object() || !s.contains("number") || !s["number"].is_number_integer()) {
      return fail(fmt::format("{}.number must be an integer", at));
    }
    static const std::set<std::string> kKnown = {
        "number", "dir", "file", "files", "function", "title", "lesson", "visible", "hidden_example", "case_length",
        "kernels", "checkpoints", "case_checkpoints", "reported_as", "compile_flags", "bench", "planted",
        "planted_timeout", "hints", "guards", "available", "weight_sets", "models", "cache_types",
        "layer_checkpoints", "kernel_versions"};
    for (const auto& [key, value] : s.items()) {
      if (!kKnown.count(key)) return fail(fmt::format("{}: unknown field '{}'", at, key));
    }
    StageInfo info;
    info.number = s["number"].get<int>();
    if (!table.stages.empty() && info.number <= table.stages.back().number) {
      return fail(fmt::format("{}.number is {}: stages are listed in increasing order", at, info.number));
    }
    auto text_of = [&](const char* key, std::string& into) -> Status {
      if (!s.contains(key)) return Status::Ok();
      if (!s[key].is_string()) return fail(fmt::format("{}.{} must be a string", at, key));
      into = s[key].get<std::string>();
      return Status::Ok();
    };
    auto names_of = [&](const char* key, std::vector<std::string>& into) -> Status {
      if (!s.contains(key)) return Status::Ok();
      if (!s[key].is_array()) return fail(fmt::format("{}.{} must be a list of names", at, key));
      for (const auto& c : s[key]) {
        if (!c.is_string()) return fail(fmt::format("{}.{} must be a list of names", at, key));
        into.push_back(c.get<std::string>());
      }
      return Status::Ok();
    };
    std::string caseLength = "T";
    for (const auto& [key, into] : std::initializer_list<std::pair<const char*, std::string*>>{
             {"dir", &info.dir}, {"file", &info.file}, {"function", &info.function}, {"title", &info.title},
             {"lesson", &info.lesson}, {"visible", &info.visible}, {"hidden_example", &info.hiddenExample},
             {"reported_as", &info.reportedAs}, {"bench", &info.bench}, {"planted", &info.planted},
             {"case_length", &caseLength}}) {
      if (auto read = text_of(key, *into); !read.ok()) return read.error();
    }
    for (const auto& [key, into] : std::initializer_list<std::pair<const char*, std::vector<std::string>*>>{
             {"files", &info.files}, {"checkpoints", &info.checkpoints}, {"case_checkpoints", &info.caseCheckpoints},
             {"compile_flags", &info.compileFlags}, {"weight_sets", &info.weightSets},
             {"models", &info.models}, {"cache_types", &info.cacheTypes},
             {"layer_checkpoints", &info.layerCheckpoints}, {"kernel_versions", &info.kernelVersions}}) {
      if (auto read = names_of(key, *into); !read.ok()) return read.error();
    }
    if (s.contains("kernels")) {
      static const std::set<std::string> kKernelFields = {"out", "in", "accumulate", "weights"};
      const std::string shape = fmt::format("{}.kernels must be a list of {{\"name\": ..., \"fields\": [...]}}: "
                                            "each kernel and the case fields its cases give (out, in, accumulate, weights)", at);
      if (!s["kernels"].is_array() || s["kernels"].empty()) return fail(shape);
      for (const auto& k : s["kernels"]) {
        if (!k.is_object() || k.size() != 2 || !k.contains("name") || !k["name"].is_string() ||
            !k.contains("fields") || !k["fields"].is_array()) {
          return fail(shape);
        }
        KernelInfo kernel{.name = k["name"].get<std::string>(), .fields = {}};
        for (const auto& field : k["fields"]) {
          if (!field.is_string() || !kKernelFields.count(field.get<std::string>())) return fail(shape);
          kernel.fields.push_back(field.get<std::string>());
        }
        if (kernel.name.empty() || info.FindKernel(kernel.name) != nullptr) {
          return fail(fmt::format("{}.kernels: '{}' is empty or listed twice", at, kernel.name));
        }
        info.kernels.push_back(std::move(kernel));
      }
      if (caseLength != "T") return fail(fmt::format("{}: a stage with kernels has case_length \"T\"", at));
    }
    if (caseLength != "T" && caseLength != "steps") {
      return fail(fmt::format("{}.case_length is '{}'; it must be \"T\" or \"steps\"", at, caseLength));
    }
    info.caseLength = caseLength == "T" ? CaseLength::kTokens : CaseLength::kSteps;
    if (info.reportedAs.find(kCheckpointField) == std::string::npos) {
      return fail(fmt::format("{}.reported_as must contain {}", at, kCheckpointField));
    }
    if (s.contains("planted_timeout")) {
      if (!s["planted_timeout"].is_number_integer() || s["planted_timeout"].get<int>() < 1) {
        return fail(fmt::format("{}.planted_timeout must be a positive number of seconds", at));
      }
      info.plantedTimeout = s["planted_timeout"].get<int>();
    }
    if (s.contains("available")) {
      if (!s["available"].is_boolean()) return fail(fmt::format("{}.available must be true or false", at));
      info.available = s["available"].get<bool>();
    }
    for (const auto& name : info.layerCheckpoints) {
      if (std::find(info.checkpoints.begin(), info.checkpoints.end(), name) == info.checkpoints.end()) {
        return fail(fmt::format("{}.layer_checkpoints lists '{}', which is not one of its checkpoints", at, name));
      }
    }
    if (!info.models.empty() && info.caseLength != CaseLength::kSteps) {
      return fail(fmt::format("{}: a stage with models has case_length \"steps\"", at));
    }
    const std::vector<std::string> all = info.AllCheckpoints();
    if (s.contains("hints")) {
      if (!s["hints"].is_object()) return fail(fmt::format("{}.hints must map checkpoints to lists", at));
      for (const auto& [checkpoint, list] : s["hints"].items()) {
        if (std::find(all.begin(), all.end(), checkpoint) == all.end()) {
          return fail(fmt::format("{}.hints names '{}', which is not one of its checkpoints", at, checkpoint));
        }
        if (!list.is_array() || list.empty()) {
          return fail(fmt::format("{}.hints.{} must be a non-empty list of hints", at, checkpoint));
        }
        for (const auto& hint : list) {
          if (!hint.is_string()) return fail(fmt::format("{}.hints.{} must hold text", at, checkpoint));
          info.hints[checkpoint].push_back(hint.get<std::string>());
        }
      }
    }
    if (s.contains("guards")) {
      auto perCall = [&info](const std::string& name) {
        return std::find(info.checkpoints.begin(), info.checkpoints.end(), name) != info.checkpoints.end();
      };
      if (!s["guards"].is_object()) {
        return fail(fmt::format("{}.guards must map a checkpoint to the checkpoints whose writes it guards", at));
      }
      for (const auto& [guard, guarded] : s["guards"].items()) {
        if (!perCall(guard)) {
          return fail(fmt::format("{}.guards names '{}', which is not one of its per-call checkpoints", at, guard));
        }
        if (!guarded.is_array() || guarded.empty()) {
          return fail(fmt::format("{}.guards.{} must be a non-empty list of checkpoints", at, guard));
        }
        for (const auto& name : guarded) {
          if (!name.is_string() || !perCall(name.get<std::string>())) {
            return fail(fmt::format("{}.guards.{} lists {}, which is not one of its per-call checkpoints", at, guard,
                                    name.dump()));
          }
          if (name.get<std::string>() == guard) {
            return fail(fmt::format("{}.guards.{} lists itself: a checkpoint cannot count by its own writes", at,
                                    guard));
          }
          info.guards[guard].push_back(name.get<std::string>());
        }
      }
    }
    if (info.dir.empty() || info.title.empty() || info.lesson.empty()) {
      return fail(fmt::format("{} needs 'dir', 'title' and 'lesson'", at));
    }
    if (info.available && (info.file.empty() || info.function.empty() || info.visible.empty() ||
                           info.hiddenExample.empty() || info.checkpoints.empty() || info.planted.empty())) {
      return fail(fmt::format("{} is available but lacks 'file', 'function', 'visible', 'hidden_example', "
                              "'checkpoints' or 'planted'", at));
    }
    // The stage's files: plain names (the folder is the stage's), `file` first, none twice.
    if (info.files.empty() && !info.file.empty()) info.files = {info.file};
    if (!info.files.empty() && info.files.front() != info.file) {
      return fail(fmt::format("{}.files must start with the stage file '{}'", at, info.file));
    }
    for (size_t f = 0; f < info.files.size(); ++f) {
      const std::string& name = info.files[f];
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
        return fail(fmt::format("{}.files: '{}' is not a plain file name", at, name));
      }
      if (std::find(info.files.begin(), info.files.begin() + static_cast<long>(f), name) != info.files.begin() + static_cast<long>(f)) {
        return fail(fmt::format("{}.files lists '{}' twice", at, name));
      }
    }
    table.stages.push_back(std::move(info));
  }
  if (root.contains("misconception_hints")) {
    const json& hints = root["misconception_hints"];
    if (!hints.is_object()) return fail("field 'misconception_hints' must map misconception ids to lists of hints");
    for (const auto& [id, list] : hints.items()) {
      const bool wellFormed = !id.empty() && id.front() != '-' && id.back() != '-' &&
                              id.find("--") == std::string::npos &&
                              std::all_of(id.begin(), id.end(), [](unsigned char c) {
                                return std::islower(c) || std::isdigit(c) || c == '-';
                              });
      if (!wellFormed) {
        return fail(fmt::format("misconception_hints: '{}' is not a misconception id (lowercase words joined by '-')",
                                id));
      }
      for (const auto& stage : table.stages) {
        const std::vector<std::string> names = stage.AllCheckpoints();
        if (std::find(names.begin(), names.end(), id) != names.end()) {
          return fail(fmt::format("misconception_hints: '{}' is also a checkpoint of stage {}; a misconception id "
                                  "must differ from every checkpoint name", id, stage.number));
        }
      }
      if (!list.is_array() || list.empty()) {
        return fail(fmt::format("misconception_hints.{} must be a non-empty list of hints", id));
      }
      for (const auto& hint : list) {
        if (!hint.is_string()) return fail(fmt::format("misconception_hints.{} must hold text", id));
        table.misconceptionHints[id].push_back(hint.get<std::string>());
      }
    }
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
