// Fuzz target: the case-file parser must turn any bytes into a case file or an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runner/cases/case_file.h"

namespace {

// A stage table shaped like the workbook's: stage 1 takes "T", stage 2 "steps", 3 to 5 are coming.
const wb::StageTable& Stages() {
  static const wb::StageTable table = wb::ParseStageTable(R"({"version": 1, "stages": [
      {"number": 1, "dir": "01-a", "title": "a", "lesson": "a.md", "available": true, "file": "a.cc",
       "function": "a", "visible": "v.json", "hidden_example": "h.json", "checkpoints": ["x"], "planted": "p"},
      {"number": 2, "dir": "02-b", "title": "b", "lesson": "b.md", "available": true, "file": "b.cc",
       "function": "b", "visible": "v.json", "hidden_example": "h.json", "checkpoints": ["x"], "planted": "p",
       "case_length": "steps"},
      {"number": 3, "dir": "03-c", "title": "c", "lesson": "c.md"},
      {"number": 4, "dir": "04-d", "title": "d", "lesson": "d.md"},
      {"number": 5, "dir": "05-e", "title": "e", "lesson": "e.md"}]})", "stages.json").value();
  return table;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = wb::ParseCaseFile(text, "fuzz.json", Stages());
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
