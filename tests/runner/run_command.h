// Test helpers: run a shell command (its exit status, stdout and stderr), find the workbook's
// files, read a file whole.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
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

}  // namespace wbtest
