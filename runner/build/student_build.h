// Compiles a stage file from any tree into a child executable: the stage's files, the
// contract headers and the stage's harness library, nothing else.
//
// Contract: a file that does not compile is a result (compiled = false, with the
// compiler's messages), not an error; errors are for a missing file or a compiler that
// cannot run, and for a stage file that is not a regular file of its own in a real folder (a
// symbolic link, a hard link, a FIFO, a device: bad usage, naming the file and why), which is
// never compiled. The compiler reads a copy of the stage's files (CompilerSetup::stageFiles,
// from data/stages.json), made through descriptors that follow no link, and its messages name
// the files where they are; a build whose compile read any file outside that copy, the
// contract headers, the source folders and the system's headers is refused. A build is reused
// while the stage's files, the contract headers, the prelude, the flags and the harness
// library are unchanged (its key), and every file its compile read, the system's headers
// included, has the size and time it had then (a record beside it); so a re-run after no edit
// costs nothing. A compile during which the stage's files changed is no build of either text:
// it is dropped and the newest files compiled (three tries).
#pragma once

#include <string>
#include <vector>

#include "../../common/expected.h"

namespace wb {

struct CompilerSetup {
  std::vector<std::string> compiler;  // e.g. {"c++"} or {"ccache", "c++"}
  std::vector<std::string> flags;
  std::string contractsDir;
  std::string cacheDir;
  // A header of standard includes given to the compiler with -include, its precompiled form
  // (PRELUDE.gch) beside it; "" for none. It only speeds the compile up.
  std::string prelude;
  double wallSeconds = 60;  // the compiler's time limit
  // Folders of the workbook's sources the stage's code includes headers from ("model" for
  // "model/config/config.h"), under sourceRoot, which is given to the compiler with -I; the
  // compiler sees only these folders of the tree. And what the link needs besides the
  // harness library ("-lfmt").
  std::string sourceRoot;
  std::vector<std::string> sourceFolders;
  std::vector<std::string> linkArgs;
  // Other stage files compiled into the same child before the stage's own (stage 5's
  // --kernels mine: the student's stage-3 and stage-4 files); each one's folder is visible.
  std::vector<std::string> extraSources;
  // The stage's files, by name, in the stage file's folder (data/stages.json's "files"; the
  // stage file's name alone when empty). Only these are copied for the compiler.
  std::vector<std::string> stageFiles;
  // Whether the stage counts its allocations (stage 5's "allocations"): then the objects'
  // undefined symbols are listed and a file that names a way around the count is refused.
  bool refuseUncountedAllocation = false;
};

struct StudentBinary {
  bool compiled = false;
  std::string executable;
  std::string diagnostics;  // what the compiler printed
  bool stoppedAtLimit = false;  // not compiled because the compiler ran past its time or CPU limit
};

// Copies `names` from `folder` into `into` (a folder it makes), each read as the compiler's
// copy is: a regular file of its own through a descriptor that follows no link, in a folder
// that is no link; anything else is refused (bad usage, naming the file and why). For a
// submission whose files are not in a stages/ tree (`grade`).
Status CopyStageFiles(const std::string& folder, const std::vector<std::string>& names, const std::string& into);

Expected<StudentBinary> BuildStageHarness(const CompilerSetup& setup, const std::string& source,
                                          const std::string& harnessLibrary, const std::string& cacheName);

}  // namespace wb
