// Runs a libFuzzer target over a committed corpus, without libFuzzer.
//
// `meson test` links each fuzz target with this driver, so every build replays the corpus
// (seed inputs plus anything a fuzzing session found) through the parser under test. With
// -Dfuzzing=true and clang, the same target files are linked with -fsanitize=fuzzer instead
// and can fuzz for real (see docs/instructors.md, "Fuzzing the parsers").
//
//   fuzz-driver DIR_OR_FILE...   exit 0 when every input was processed without a crash
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) inputs.push_back(e.path());
      }
    } else {
      inputs.push_back(p);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "fuzz driver: no corpus files given\n");
    return 2;
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("fuzz driver: %zu corpus inputs processed\n", inputs.size());
  return 0;
}
