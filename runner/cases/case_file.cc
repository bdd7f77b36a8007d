#include "case_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace wb {
namespace {

using nlohmann::json;

std::string TypeName(const json& v) { return v.type_name(); }

// An integer field from 1 to `most`, or absent (then `into` keeps its value).
Status ReadCount(const json& c, const std::string& named, const char* key, int most, int& into) {
  if (!c.contains(key)) return Status::Ok();
  if (!c[key].is_number_integer() || c[key].get<int64_t>() < 1 || c[key].get<int64_t>() > most) {
    return BadData(fmt::format("{}.{} must be an integer from 1 to {}", named, key, most));
  }
  into = static_cast<int>(c[key].get<int64_t>());
  return Status::Ok();
}

// threads, and the fields of a kernel case, as the stage's row allows them.
// "weights": one of `allowed`, required when `needed`, refused otherwise.
Status ReadWeights(const json& c, const std::string& named, bool needed, const std::vector<std::string>& allowed,
                   const std::string& what, CaseSpec& spec) {
  std::string names;
  for (const auto& n : allowed) names += (names.empty() ? "\"" : ", \"") + n + "\"";
  if (!c.contains("weights")) {
    if (needed) return BadData(fmt::format("{}: {} needs \"weights\": one of {}", named, what, names));
    return Status::Ok();
  }
  if (!needed) return BadData(fmt::format("{}: {} takes no 'weights'", named, what));
  if (!c["weights"].is_string() ||
      std::find(allowed.begin(), allowed.end(), c["weights"].get<std::string>()) == allowed.end()) {
    return BadData(fmt::format("{}.weights must be one of {}", named, names));
  }
  spec.weights = c["weights"].get<std::string>();
  return Status::Ok();
}

// The single-type weight sets: what a kernel's W may be.
std::vector<std::string> SingleTypeSets(const StageInfo& stage) {
  std::vector<std::string> sets;
  for (const auto& s : stage.weightSets) {
    if (s != "mixed") sets.push_back(s);
  }
  return sets;
}

Status ReadKernelFields(const json& c, const std::string& named, const StageInfo& stage, CaseSpec& spec) {
  if (auto read = ReadCount(c, named, "threads", kMaxCaseThreads, spec.threads); !read.ok()) return read;
  if (!c.contains("kernel")) {
    for (const char* key : {"out", "in", "accumulate"}) {
      if (c.contains(key)) return BadData(fmt::format("{}: '{}' belongs to a kernel case, and this case names no 'kernel'", named, key));
    }
    return ReadWeights(c, named, !stage.weightSets.empty(), stage.weightSets, "a block case", spec);
  }
  std::string names;
  for (const auto& k : stage.kernels) names += (names.empty() ? "" : ", ") + k.name;
  const KernelInfo* kernel = c["kernel"].is_string() ? stage.FindKernel(c["kernel"].get<std::string>()) : nullptr;
  if (kernel == nullptr) return BadData(fmt::format("{}.kernel must be one of {}", named, names));
  spec.kernel = kernel->name;
  for (const char* key : {"out", "in", "accumulate"}) {
    if (kernel->Takes(key) == c.contains(key) || std::string(key) == "accumulate") continue;
    return BadData(fmt::format("{}: a {} case {} '{}'", named, kernel->name, kernel->Takes(key) ? "needs" : "takes no",
                               key));
  }
  if (c.contains("accumulate") && !kernel->Takes("accumulate")) {
    return BadData(fmt::format("{}: a {} case takes no 'accumulate'", named, kernel->name));
  }
  if (auto read = ReadWeights(c, named, kernel->Takes("weights"), SingleTypeSets(stage),
                              fmt::format("a {} case", kernel->name), spec);
      !read.ok()) {
    return read;
  }
  if (auto read = ReadCount(c, named, "out", kMaxKernelSide, spec.out); !read.ok()) return read;
  if (auto read = ReadCount(c, named, "in", kMaxKernelSide, spec.in); !read.ok()) return read;
  if (c.contains("accumulate")) {
    if (!c["accumulate"].is_boolean()) return BadData(fmt::format("{}.accumulate must be true or false", named));
    spec.accumulate = c["accumulate"].get<bool>();
  }
  const int64_t T = spec.T;
  if (int64_t{spec.out} * spec.in > kMaxKernelFloats || T * spec.in > kMaxKernelFloats ||
      T * spec.out > kMaxKernelFloats) {
    return BadData(fmt::format("{}: T={}, out={}, in={} makes a matrix of more than {} floats", named, spec.T,
                               spec.out, spec.in, kMaxKernelFloats));
  }
  return Status::Ok();
}

// A stage with models (stage 5): the model, its format, the cache's row type and page size,
// and threads. "model" and "format" are required; the rest have defaults.
Status ReadModelFields(const json& c, const std::string& named, const StageInfo& stage, CaseSpec& spec) {
  auto one_of = [&](const char* key, const std::vector<std::string>& allowed, bool required,
                    std::string& into) -> Status {
    std::string names;
    for (const auto& n : allowed) names += (names.empty() ? "\"" : ", \"") + n + "\"";
    if (!c.contains(key)) {
      if (!required) return Status::Ok();
      return BadData(fmt::format("{}: a case of stage {} needs \"{}\": one of {}", named, stage.number, key, names));
    }
    if (!c[key].is_string() || std::find(allowed.begin(), allowed.end(), c[key].get<std::string>()) == allowed.end()) {
      return BadData(fmt::format("{}.{} must be one of {}", named, key, names));
    }
    into = c[key].get<std::string>();
    return Status::Ok();
  };
  if (auto read = one_of("model", stage.models, true, spec.model); !read.ok()) return read;
  if (auto read = one_of("format", {"gguf", "hf"}, true, spec.format); !read.ok()) return read;
  spec.cache = "f32";
  if (auto read = one_of("cache", stage.cacheTypes, false, spec.cache); !read.ok()) return read;
  if (auto read = ReadCount(c, named, "page_size", kMaxCaseTokens, spec.pageSize); !read.ok()) return read;
  std::string logits = "all";
  if (auto read = one_of("logits", {"all", "last"}, false, logits); !read.ok()) return read;
  spec.lastLogitsOnly = logits == "last";
  if (c.contains("variant")) {
    // A name, not a path: it is joined to the model's folder (ModelPathOf).
    const bool name = c["variant"].is_string() && !c["variant"].get<std::string>().empty() &&
                      c["variant"].get<std::string>().size() <= 40 &&
                      std::all_of(c["variant"].get_ref<const std::string&>().begin(),
                                  c["variant"].get_ref<const std::string&>().end(), [](char ch) {
                                    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
                                  });
    if (!name) return BadData(fmt::format("{}.variant must be a name of lower-case letters, digits, - and _ "
                                          "(a checkpoint beside the model's own: hf-NAME/ or model-NAME.gguf)", named));
    spec.variant = c["variant"].get<std::string>();
  }
  return ReadCount(c, named, "threads", kMaxCaseThreads, spec.threads);
}

}  // namespace

int CaseSpec::Tokens() const {
  if (steps.empty()) return T;
  int total = 0;
  for (int n : steps) total += n;
  return total;
}

Expected<CaseFile> ParseCaseFile(const std::string& text, const std::string& path, const StageTable& stages) {
  auto fail = [&path](const std::string& what) { return BadData(fmt::format("{}: {}", path, what)); };
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    return fail(fmt::format("not valid JSON (byte {}): {}", e.byte, e.what()));
  } catch (const json::exception& e) {  // e.g. a number too large for a double
    return fail(fmt::format("not valid JSON: {}", e.what()));
  }
  if (!root.is_object()) return fail("the top level must be an object {\"stage\": N, \"cases\": [...]}");
  for (const auto& [key, value] : root.items()) {
    if (key != "stage" && key != "cases" && key != "description") {
      return fail(fmt::format("unknown top-level field '{}' (expected stage, cases, description)", key));
    }
  }
  CaseFile file;
  file.path = path;
  if (!root.contains("stage") || !root["stage"].is_number_integer()) {
    return fail("field 'stage' is missing or not an integer");
  }
  file.stage = root["stage"].get<int>();
  const StageInfo* stage = stages.Find(file.stage);
  if (stage == nullptr) return fail(fmt::format("field 'stage' is {}; stages are {}", file.stage, stages.Numbers()));

  if (!root.contains("cases") || !root["cases"].is_array()) return fail("field 'cases' is missing or not an array");
  if (root["cases"].empty()) return fail("field 'cases' is empty: a case file needs at least one case");

  std::set<std::string> names;
  const auto& cases = root["cases"];
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const std::string at = fmt::format("cases[{}]", i);
    if (!c.is_object()) return fail(fmt::format("{} is a {}, not an object", at, TypeName(c)));
    for (const auto& [key, value] : c.items()) {
      static const std::set<std::string> kKnown = {"name", "T", "steps", "seed", "x_scale", "w_scale",
                                                   "hidden", "slow", "points", "description"};
      static const std::set<std::string> kKernelStage = {"threads", "kernel", "out", "in", "accumulate"};
      static const std::set<std::string> kModelStage = {"model", "format", "cache", "page_size", "threads",
                                                        "logits", "variant"};
      const bool modelStage = !stage->models.empty();
      const bool known = (kKnown.count(key) && !(modelStage && (key == "x_scale" || key == "w_scale"))) ||
                         (kKernelStage.count(key) && !stage->kernels.empty()) ||
                         (key == "weights" && !stage->weightSets.empty()) || (kModelStage.count(key) && modelStage);
      if (!known) {
        return fail(fmt::format("{}: unknown field '{}' (expected name, T or steps, seed, {}"
                                "hidden, slow, points, description{}{}{})", at, key,
                                modelStage ? "" : "x_scale, w_scale, ",
                                stage->kernels.empty() ? "" : ", threads, kernel, out, in, accumulate",
                                stage->weightSets.empty() ? "" : ", weights",
                                modelStage ? ", model, format, cache, page_size, threads, logits, variant" : ""));
      }
    }
    CaseSpec spec;
    if (!c.contains("name") || !c["name"].is_string() || c["name"].get<std::string>().empty()) {
      return fail(fmt::format("{}.name is missing or not a non-empty string", at));
    }
    spec.name = c["name"].get<std::string>();
    if (!names.insert(spec.name).second) return fail(fmt::format("{}.name '{}' is used twice", at, spec.name));
    const std::string named = fmt::format("{} ('{}')", at, spec.name);

    if (stage->caseLength == CaseLength::kSteps) {
      if (c.contains("T")) return fail(fmt::format("{}: stage {} cases give 'steps', not 'T'", named, file.stage));
      if (!c.contains("steps") || !c["steps"].is_array() || c["steps"].empty()) {
        return fail(fmt::format("{}.steps is missing or not a non-empty array of token counts", named));
      }
      for (size_t s = 0; s < c["steps"].size(); ++s) {
        const json& n = c["steps"][s];
        if (!n.is_number_integer() || n.get<int64_t>() < 1) {
          return fail(fmt::format("{}.steps[{}] must be a positive integer", named, s));
        }
        spec.steps.push_back(static_cast<int>(std::min<int64_t>(n.get<int64_t>(), kMaxCaseTokens + 1)));
      }
    } else {
      if (c.contains("steps")) {
        return fail(fmt::format("{}: stage {} cases give 'T', not 'steps'", named, file.stage));
      }
      if (!c.contains("T") || !c["T"].is_number_integer()) {
        return fail(fmt::format("{}.T is missing or not an integer", named));
      }
      const int64_t T = c["T"].get<int64_t>();
      if (T < 1 || T > kMaxCaseTokens) {
        return fail(fmt::format("{}.T is {}; it must be 1 to {}", named, T, kMaxCaseTokens));
      }
      spec.T = static_cast<int>(T);
    }
    if (spec.Tokens() > kMaxCaseTokens) {
      return fail(fmt::format("{}: {} tokens in all; at most {}", named, spec.Tokens(), kMaxCaseTokens));
    }
    if (!c.contains("seed") || !c["seed"].is_number_unsigned()) {
      return fail(fmt::format("{}.seed is missing or not a non-negative integer", named));
    }
    spec.seed = c["seed"].get<uint64_t>();
    for (const char* key : {"x_scale", "w_scale", "points"}) {
      if (!c.contains(key)) continue;
      if (!c[key].is_number()) return fail(fmt::format("{}.{} must be a number", named, key));
      const double value = c[key].get<double>();
      const bool isPoints = std::string(key) == "points";
      if (!std::isfinite(value) || (isPoints ? value < 0 : value <= 0)) {
        return fail(fmt::format("{}.{} is {}; it must be a finite {} number", named, key, value,
                                isPoints ? "non-negative" : "positive"));
      }
      // A grade is a sum of points: a bound keeps a case file from making any one case, or
      // the total, beyond what a gradebook shows (or beyond a double's integers).
      if (isPoints && value > kMaxCasePoints) {
        return fail(fmt::format("{}.points is {}; at most {} points a case", named, value, kMaxCasePoints));
      }
      if (std::string(key) == "x_scale") spec.xScale = value;
      if (std::string(key) == "w_scale") spec.wScale = value;
      if (isPoints) spec.points = value;
    }
    if (c.contains("hidden")) {
      if (!c["hidden"].is_boolean()) return fail(fmt::format("{}.hidden must be true or false", named));
      spec.hidden = c["hidden"].get<bool>();
    }
    if (c.contains("slow")) {
      if (!c["slow"].is_boolean()) return fail(fmt::format("{}.slow must be true or false", named));
      spec.slow = c["slow"].get<bool>();
    }
    if (!stage->models.empty()) {
      if (auto read = ReadModelFields(c, named, *stage, spec); !read.ok()) return fail(read.error().message);
    } else if (auto kernel = ReadKernelFields(c, named, *stage, spec); !kernel.ok()) {
      return fail(kernel.error().message);
    }
    if (c.contains("description") && !c["description"].is_string()) {
      return fail(fmt::format("{}.description must be text", named));
    }
    file.cases.push_back(std::move(spec));
  }
  return file;
}

Expected<CaseFile> LoadCaseFile(const std::string& path, const StageTable& stages) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return BadUsage(fmt::format("{}: is a folder; --cases takes one case file, such as {}", path,
                                (std::filesystem::path(path) / "visible.json").string()));
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return BadUsage(fmt::format("{}: cannot open the case file", path));
  // One copy of the file's text, read straight into place and wiped once parsed: a hidden
  // suite is kept only as the CaseSpecs the run needs, not as text in the runner's memory
  // while the student's code runs.
  const std::streamoff size = in.tellg();
  std::string text(size > 0 ? static_cast<size_t>(size) : 0, '\0');
  in.seekg(0);
  if (size < 0 || !in.read(text.data(), size)) return BadUsage(fmt::format("{}: cannot read the case file", path));
  auto parsed = ParseCaseFile(text, path, stages);
  explicit_bzero(text.data(), text.size());
  return parsed;
}

}  // namespace wb
