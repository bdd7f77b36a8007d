// Fuzz target: the case-file parser must turn any bytes into a case file or an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runner/cases/case_file.h"
#include "tests/runner/test_stage_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = wb::ParseCaseFile(text, "fuzz.json", wbtest::Stages());
  if (parsed.ok()) {
    // A parsed file keeps the parser's promises.
    if (parsed->cases.empty()) __builtin_trap();
    for (const auto& c : parsed->cases) {
      if (c.name.empty() || c.Tokens() < 1 || c.Tokens() > wb::kMaxCaseTokens) __builtin_trap();
    }
  } else if (parsed.error().message.rfind("fuzz.json: ", 0) != 0) {
    __builtin_trap();  // every refusal names the file
  }
  return 0;
}
