#include <cmath>

#include <nlohmann/json.hpp>

#include "renderers.h"
#include "../isolation/sandbox.h"

namespace wb {
namespace {

using nlohmann::json;

json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json Element(const ElementDetail& d) {
  json e = {{"where", d.where}, {"expected", Number(d.expected)}};
  e["got"] = d.gotNote.empty() ? Number(d.got) : json(nullptr);
  e["note"] = d.gotNote.empty() ? json(nullptr) : json(d.gotNote);
  return e;
}

json Checkpoint(const CheckpointReport& c, bool hidden) {
  json j = {
      {"name", c.name},
      {"status", ToString(c.status)},
      {"max_abs_error", Number(c.maxAbsError)},
      {"points", c.points},
      {"max_points", c.maxPoints},
      {"misconception", c.misconception ? json(c.misconception->sentence) : json(nullptr)},
      {"never_written", c.total > 0 && c.unwritten == c.total},
      {"gated_by", c.gatedBy.empty() ? json(nullptr) : json(c.gatedBy)},
  };
  if (hidden) return j;  // names, pass/fail and the error's size: nothing that shows the case
  j["failing"] = c.failing;
  j["total"] = c.total;
  j["unwritten"] = c.unwritten;
  j["nan"] = c.nanCount + c.fromUnwritten;
  j["inf"] = c.infCount;
  j["shape"] = c.shape;
  j["local"] = ToString(c.local);
  j["tolerance"] = {{"atol", Number(c.atol)}, {"rtol", Number(c.rtol)}};
  j["worst"] = c.worst ? Element(*c.worst) : json(nullptr);
  j["samples"] = json::array();
  for (const auto& s : c.samples) j["samples"].push_back(Element(s));
  j["misconception_id"] = c.misconception ? json(c.misconception->id) : json(nullptr);
  j["lesson"] = c.misconception ? json(c.misconception->lesson) : json(nullptr);
  j["observation"] = c.observation.empty() ? json(nullptr) : json(c.observation);
  return j;
}

}  // namespace

std::string RenderJson(const RunReport& r) {
  json root = {
      {"stage", r.stage},
      {"title", r.stageTitle},
      {"impl", r.impl},
      {"source", r.source},
      {"case_file", r.caseFile},
      {"status", ToString(r.status)},
      {"lesson", r.lesson},
      {"compile_flags", r.compileFlags},
      {"compiler_output", r.status == RunStatus::kCompileError ? json(r.compilerOutput) : json(nullptr)},
      {"cases", json::array()},
  };
  if (!r.leaderboard.empty()) {
    root["leaderboard"] = json::array();
    for (const LeaderboardEntry& e : r.leaderboard) {
      root["leaderboard"].push_back({{"name", e.name}, {"value", e.value}, {"ascending", e.ascending}});
    }
  }
  if (!r.kernelVersions.empty()) {
    root["kernel_versions"] = json::array();
    for (const KernelVersionRun& v : r.kernelVersions) {
      root["kernel_versions"].push_back(
          {{"name", v.name}, {"ran", v.ran}, {"passed", v.passed}, {"cases", v.total}, {"note", v.note}});
    }
  }
  // What protected the runner from the code it ran (runner/isolation/sandbox.h).
  const SandboxPlan& sandbox = CurrentSandbox();
  root["sandbox"] = {{"in_force", sandbox.inForce}, {"missing", sandbox.missing}};
  for (const auto& c : r.cases) {
    json jc = {
        {"name", c.name},
        {"hidden", c.hidden},
        {"status", ToString(c.status)},
        {"first_failure", c.firstFailure ? json(*c.firstFailure) : json(nullptr)},
        {"headline", c.headline.empty() ? json(nullptr) : json(c.headline)},
        {"zeroed_because", c.zeroedBecause.empty() ? json(nullptr) : json(c.zeroedBecause)},
        {"checkpoints", json::array()},
    };
    if (!c.hidden) {
      jc["parameters"] = c.parameters;
      jc["notes"] = c.notes;
      jc["output"] = c.childOutput;
      jc["call_seconds"] = c.callSeconds;
    }
    for (const auto& cp : c.checkpoints) jc["checkpoints"].push_back(Checkpoint(cp, c.hidden));
    root["cases"].push_back(std::move(jc));
  }
  // Replace, not throw: compiler messages and a crash's output quote the student's bytes, which
  // need not be UTF-8.
  return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace wb
