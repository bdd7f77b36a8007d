// The generate program a command runs (`generate`, and `bench 5`, which runs its bench mode):
// the solution's, prebuilt, or the student's stages/05-decoder compiled against the generate
// program's library as `check 5` compiles it (runner/generate/meson.build).
#pragma once

#include <string>

#include "common/expected.h"

namespace wb::cli {

struct GenerateChoice {
  bool mine = false;
  bool solutions = false;  // the default for generate; said for symmetry with check
  std::string kernels = "solutions";  // "mine": the student's stage-3 and stage-4 files linked in
  std::string stagesDir;              // another tree's stages/ folder
};

struct GenerateBinary {
  std::string path;  // "" when the stage file did not compile (the compiler's messages printed)
  std::string decoderName;  // "your decoder (stages/05-decoder)", for the program's messages
};

Expected<GenerateBinary> GenerateProgram(const GenerateChoice& choice);

}  // namespace wb::cli
