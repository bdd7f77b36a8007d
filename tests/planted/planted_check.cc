// planted-check: runs the runner on a planted-bug variant and checks it is caught where
// the bug file says.
//
//   planted-check STAGE RUNNER HARNESS BUG_FILE VISIBLE_CASES HIDDEN_CASES
//
// Bug file header lines (all optional but caught-at):
//   caught-at: CHECKPOINT | none | null   the first failing checkpoint of every failing case;
//                                    none: the variant is correct and must pass everything;
//                                    null: cases fail with every checkpoint right (e.g. output flood)
//   caught-at[CASE]: CHECKPOINT      the first failing checkpoint of case CASE instead (a
//                                    bug that shows elsewhere in a case shaped differently);
//                                    CASE may be a pattern ("*block-*"): the exact name wins,
//                                    then the first pattern in the header's sorted order
//   misconception: ID | none         named at caught-at in some failing case; none: never
//                                    named there (the runner must not guess)
//   observation: TEXT                appears in caught-at's observation in some failing case
//   status: fail | crash | timeout   the status of every failing case (default fail)
//   status[CASE]: STATUS             the status of case CASE instead (a write past a buffer
//                                    hits a guard page or a canary, as T lays the buffer out)
//   headline: TEXT                   appears in every failing case's headline
//   suites: visible | hidden | both  which suites must have a failing case (default visible);
//           visible-only             run the visible suite only (the outcome depends on T)
//   time-limit: SECONDS              passed to the runner
//   kernel-version: NAME             passed to the runner (--kernel-version): the bug is in the
//                                    kernels' version for one instruction set, which the stage
//                                    file runs when asked; on a CPU without that instruction
//                                    set the test is skipped (exit 77)
// Both suites are run (hidden cases revealed) unless the file says visible-only, so a bug
// that shows where it should not, or first shows at another checkpoint, fails the test too.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fnmatch.h>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

std::map<std::string, std::string> ReadHeader(const std::string& path) {
  std::map<std::string, std::string> fields;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line) && line.rfind("--- ", 0) != 0) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    fields[line.substr(0, colon)] = value;
  }
  return fields;
}

bool Run(const std::string& command, std::string& output, int& status) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return false;
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  const int raw = pclose(pipe);
  status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return true;
}

std::string Get(const std::map<std::string, std::string>& m, const std::string& key, const std::string& fallback) {
  auto it = m.find(key);
  return it == m.end() ? fallback : it->second;
}

// FIELD[CASE] for this case: the exact name first, then the first pattern (fnmatch, as
// in "caught-at[*block-*]") that matches it, else the fallback.
std::string GetForCase(const std::map<std::string, std::string>& m, const std::string& field, const std::string& name,
                       const std::string& fallback) {
  if (const auto exact = m.find(field + "[" + name + "]"); exact != m.end()) return exact->second;
  for (const auto& [key, value] : m) {
    if (key.rfind(field + "[", 0) != 0 || key.back() != ']') continue;
    const std::string pattern = key.substr(field.size() + 1, key.size() - field.size() - 2);
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return value;
  }
  return fallback;
}

const json* FindCheckpoint(const json& c, const std::string& name) {
  for (const auto& cp : c["checkpoints"]) {
    if (cp["name"] == name) return &cp;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: planted-check STAGE RUNNER HARNESS BUG_FILE VISIBLE_CASES HIDDEN_CASES\n");
    return 2;
  }
  const std::string stage = argv[1], runner = argv[2], harness = argv[3], bugFile = argv[4];
  const auto header = ReadHeader(bugFile);
  const std::string caughtAt = Get(header, "caught-at", "");
  if (caughtAt.empty()) {
    std::fprintf(stderr, "%s: no 'caught-at:' line\n", bugFile.c_str());
    return 2;
  }
  const std::string misconception = Get(header, "misconception", "");
  const std::string observation = Get(header, "observation", "");
  const std::string status = Get(header, "status", "fail");
  const std::string headline = Get(header, "headline", "");
  const std::string suites = Get(header, "suites", "visible");
  const std::string timeLimit = Get(header, "time-limit", "");
  const std::string kernelVersion = Get(header, "kernel-version", "");

  int failures = 0;
  auto fail = [&failures](const std::string& what) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  };
  bool misconceptionSeen = false;
  bool observationSeen = false;
  std::set<std::string> caseNames;
  const std::pair<std::string, std::string> runs[] = {{"visible", argv[5]}, {"hidden", argv[6]}};
  for (const auto& [suite, cases] : runs) {
    if (suites == "visible-only" && suite != "visible") continue;
    std::string command = "'" + runner + "' check " + stage + " --format json --show-hidden --harness '" + harness +
                          "' --cases '" + cases + "'";
    if (!timeLimit.empty()) command += " --time-limit " + timeLimit;
    if (!kernelVersion.empty()) command += " --kernel-version " + kernelVersion;
    std::string output;
    int exitStatus = 0;
    if (!Run(command + " 2>&1", output, exitStatus)) return 2;
    if (!kernelVersion.empty() && output.find("this CPU lacks") != std::string::npos) {
      std::printf("skipped: %s", output.c_str());
      return 77;
    }
    json report;
    try {
      report = json::parse(output);
    } catch (const std::exception&) {
      fail(suite + ": the runner's output is not JSON:\n" + output);
      continue;
    }
    int failing = 0;
    for (const auto& c : report["cases"]) {
      caseNames.insert(c["name"].get<std::string>());
      if (c["status"] == "pass") continue;
      ++failing;
      const std::string where = suite + " case " + c["name"].get<std::string>();
      if (caughtAt == "none") {
        fail(where + " failed (" + c["status"].get<std::string>() + "), but this variant is correct");
        continue;
      }
      const std::string caseStatus = GetForCase(header, "status", c["name"].get<std::string>(), status);
      if (c["status"] != caseStatus) fail(where + ": status is " + c["status"].dump() + ", expected " + caseStatus);
      const std::string caseCaughtAt = GetForCase(header, "caught-at", c["name"].get<std::string>(), caughtAt);
      const json expectedFirst = caseCaughtAt == "null" ? json(nullptr) : json(caseCaughtAt);
      if (c["first_failure"] != expectedFirst) {
        fail(where + ": first failure is " + c["first_failure"].dump() + ", expected " + caseCaughtAt);
      }
      if (!headline.empty() &&
          (!c["headline"].is_string() || c["headline"].get<std::string>().find(headline) == std::string::npos)) {
        fail(where + ": headline " + c["headline"].dump() + " lacks '" + headline + "'");
      }
      const json* cp = FindCheckpoint(c, caseCaughtAt);
      if (cp == nullptr) continue;
      const json& id = (*cp)["misconception_id"];
      if (misconception == "none" && !id.is_null()) fail(where + ": the runner named " + id.dump() + " at " + caughtAt);
      if (!misconception.empty() && id == misconception) misconceptionSeen = true;
      const json& seen = (*cp)["observation"];
      if (!observation.empty() && seen.is_string() && seen.get<std::string>().find(observation) != std::string::npos) {
        observationSeen = true;
      }
    }
    const bool mustFail = suites == "both" || suites == suite || (suites == "visible-only" && suite == "visible");
    if (caughtAt == "none" && exitStatus != 0) fail(suite + ": exit status " + std::to_string(exitStatus) + ", expected 0");
    if (caughtAt != "none" && mustFail && failing == 0) fail(suite + ": no case caught the bug");
    if (caughtAt != "none" && failing > 0 && exitStatus != 1) {
      fail(suite + ": exit status " + std::to_string(exitStatus) + ", expected 1");
    }
  }
  for (const auto& [key, value] : header) {
    for (const std::string prefix : {"caught-at[", "status["}) {
      if (key.rfind(prefix, 0) != 0) continue;
      const std::string name = key.substr(prefix.size(), key.size() - prefix.size() - 1);
      const bool matches = std::any_of(caseNames.begin(), caseNames.end(), [&name](const std::string& c) {
        return fnmatch(name.c_str(), c.c_str(), 0) == 0;
      });
      if (!matches) fail("'" + key + "' names a case that neither suite has");
    }
  }
  if (!misconception.empty() && misconception != "none" && !misconceptionSeen) {
    fail("the misconception " + misconception + " was never named at " + caughtAt);
  }
  if (!observation.empty() && !observationSeen) fail("no observation at " + caughtAt + " mentions '" + observation + "'");
  if (failures == 0) std::printf("%s: caught as expected\n", bugFile.c_str());
  return failures == 0 ? 0 : 1;
}
