// What the bench tests share (doctest and nlohmann-json, on top of run_command.h): a scratch
// folder of the test's own, stdout parsed as JSON (a test failure, with the text, when it is
// not), and whether a figure is a finite positive number.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace wbtest {

// An empty folder under the temporary directory, named by the test, its process and `name`.
inline std::filesystem::path Scratch(const std::string& test, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("wb-{}-{}-{}", test, getpid(), name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline nlohmann::json Parse(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    FAIL("not JSON: " << text);
    return {};
  }
}

inline bool Positive(const nlohmann::json& value) {
  return value.is_number() && std::isfinite(value.get<double>()) && value.get<double>() > 0;
}

}  // namespace wbtest
