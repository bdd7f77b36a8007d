// The generate program a command runs (`generate`, and `bench 5`, which runs its bench mode;
// generate_program.cc):
// the solution's, prebuilt, or the student's stages/05-decoder compiled against the generate
// program's library as `check 5` compiles it (runner/generate/meson.build).
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"

namespace wb::stage05 {

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

// What the generate program must read of a model: the file or folder, absolute, and, where it
// or an entry of the folder is a symbolic link (a Hugging Face cache's snapshots link into its
// blobs), where each link leads. The program runs confined (RunConfinedProgram), from "/",
// seeing only these; `model` in its arguments must be the first of them.
std::vector<std::string> ModelReadablePaths(const std::string& model);

}  // namespace wb::stage05
