#include "student_build.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "../../common/fnv1a.h"
#include "process.h"

namespace wb {
namespace {

namespace fsys = std::filesystem;

bool ReadAll(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return true;
}

uint64_t HashText(const std::string& text, uint64_t hash) { return Fnv1a64(text.data(), text.size(), hash); }

}  // namespace

Expected<StudentBinary> BuildStageHarness(const CompilerSetup& setup, const std::string& source,
                                          const std::string& harnessLibrary, const std::string& cacheName) {
  std::string sourceText;
  if (!ReadAll(source, sourceText)) return BadUsage(fmt::format("{}: cannot read the stage file", source));
  std::string libraryBytes;
  if (!ReadAll(harnessLibrary, libraryBytes)) {
    return InternalError(fmt::format("{}: the harness library is missing; run ./workbook again to rebuild it",
                                     harnessLibrary));
  }
  // The key: everything that changes the executable.
  uint64_t key = HashText(sourceText, 0xcbf29ce484222325ull);
  key = HashText(source, key);  // the path appears in debug info and messages
  key = HashText(libraryBytes, key);
  for (const auto& part : setup.compiler) key = HashText(part, key);
  for (const auto& flag : setup.flags) key = HashText(flag, key);
  std::error_code ec;
  std::vector<fsys::path> contractFiles;
  for (const auto& entry : fsys::directory_iterator(setup.contractsDir, ec)) contractFiles.push_back(entry.path());
  std::sort(contractFiles.begin(), contractFiles.end());
  for (const auto& header : contractFiles) {
    std::string text;
    if (ReadAll(header.string(), text)) key = HashText(header.string() + text, key);
  }

  fsys::create_directories(setup.cacheDir, ec);
  StudentBinary binary;
  binary.executable = (fsys::path(setup.cacheDir) / cacheName).string();
  const std::string keyPath = binary.executable + ".key";
  const std::string keyText = fmt::format("{:016x}", key);
  std::string storedKey;
  if (ReadAll(keyPath, storedKey) && storedKey == keyText && access(binary.executable.c_str(), X_OK) == 0) {
    binary.compiled = true;
    return binary;
  }

  const std::string temporary = fmt::format("{}.{}.partial", binary.executable, getpid());
  std::vector<std::string> argv = setup.compiler;
  argv.insert(argv.end(), setup.flags.begin(), setup.flags.end());
  argv.insert(argv.end(), {"-I", setup.contractsDir, source, harnessLibrary, "-o", temporary});
  auto ran = RunCommand(argv);
  if (!ran.ok()) return ran.error();
  binary.diagnostics = ran->output;
  if (ran->exitStatus != 0) {
    std::remove(temporary.c_str());
    binary.compiled = false;
    return binary;
  }
  fsys::rename(temporary, binary.executable, ec);
  if (ec) return SystemError(fmt::format("{}: cannot move the new build into place: {}", binary.executable, ec.message()));
  std::ofstream(keyPath, std::ios::trunc) << keyText;
  binary.compiled = true;
  return binary;
}

}  // namespace wb
