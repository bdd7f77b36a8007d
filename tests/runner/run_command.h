// Test helpers: run a shell command (its exit status, stdout and stderr), find the workbook's
// files, read a file whole, list a Markdown page's heading anchors.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace wbtest {

struct Ran {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

inline Ran RunShell(const std::string& command) {
  const std::string errPath = "/tmp/wb-test-stderr-" + std::to_string(getpid());
  Ran ran;
  FILE* pipe = popen((command + " 2>" + errPath).c_str(), "r");
  if (pipe == nullptr) return ran;
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) ran.out.append(buffer, n);
  const int raw = pclose(pipe);
  ran.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream err(errPath);
  std::ostringstream text;
  text << err.rdbuf();
  ran.err = text.str();
  std::remove(errPath.c_str());
  return ran;
}

// The runner with arguments (already quoted where needed).
inline Ran Workbook(const std::string& arguments) { return RunShell(Quote(Env("WB_RUNNER")) + " " + arguments); }

inline std::string Source(const std::string& relative) { return Env("WB_SOURCE") + "/" + relative; }

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A heading's anchor as the site makes it (Python-Markdown's toc slugify, which GitHub's
// matches for these headings): lowercase word characters, spaces and hyphens kept, every
// run of spaces and hyphens one hyphen.
inline std::string Slug(const std::string& heading) {
  std::string slug;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '_') {
      slug += static_cast<char>(std::tolower(c));
    } else if ((c == ' ' || c == '-') && !slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug;
}

// The anchors of a Markdown file's headings (outside fenced code blocks).
inline std::set<std::string> HeadingAnchors(const std::string& path) {
  std::set<std::string> anchors;
  std::istringstream lines(ReadFile(path));
  std::string line;
  bool fenced = false;
  while (std::getline(lines, line)) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || line.empty() || line[0] != '#') continue;
    const size_t text = line.find_first_not_of('#');
    if (text == std::string::npos || line[text] != ' ') continue;
    anchors.insert(Slug(line.substr(text + 1)));
  }
  return anchors;
}

// The misconception ids the planted bugs of a folder name ("misconception: ID" headers).
inline std::set<std::string> PlantedMisconceptions(const std::string& folder) {
  std::set<std::string> ids;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".bug") continue;
    std::istringstream lines(ReadFile(entry.path().string()));
    std::string line;
    while (std::getline(lines, line) && line.rfind("--- ", 0) != 0) {
      if (line.rfind("misconception: ", 0) == 0 && line != "misconception: none") ids.insert(line.substr(15));
    }
  }
  return ids;
}

// The ids in the first column of a lesson's table under "## Mistakes the runner names".
inline std::set<std::string> MisconceptionTableIds(const std::string& path) {
  std::set<std::string> ids;
  std::istringstream lines(ReadFile(path));
  std::string line;
  bool inSection = false;
  while (std::getline(lines, line)) {
    if (line.rfind("## ", 0) == 0) inSection = line == "## Mistakes the runner names";
    if (!inSection || line.rfind("| `", 0) != 0) continue;
    const size_t end = line.find('`', 3);
    if (end != std::string::npos) ids.insert(line.substr(3, end - 3));
  }
  return ids;
}

}  // namespace wbtest
