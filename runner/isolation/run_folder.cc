// Run folders named by their runner's pid, and the leftovers of dead runners; see run_folder.h.
#include "run_folder.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace wb {
namespace {

namespace fsys = std::filesystem;

// The runner's pid in NAME = PREFIX<pid>-XXXXXX, or 0 when the name is not of that form.
pid_t RunnerOf(const std::string& name, const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return 0;
  const char* begin = name.data() + prefix.size();
  const char* end = name.data() + name.size();
  long pid = 0;
  const auto [rest, ec] = std::from_chars(begin, end, pid);
  if (ec != std::errc() || rest == begin || rest == end || *rest != '-' || pid <= 0) return 0;
  return static_cast<pid_t>(pid);
}

}  // namespace

Expected<std::string> MakeRunFolder(const std::string& parent, const std::string& prefix) {
  std::error_code ec;
  for (const auto& entry : fsys::directory_iterator(parent, ec)) {
    const pid_t runner = RunnerOf(entry.path().filename().string(), prefix);
    struct stat info {};
    if (runner == 0 || runner == getpid() || lstat(entry.path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
        (info.st_uid != geteuid() && geteuid() != 0)) {  // as root, a compile folder is the sandbox uid's
      continue;
    }
    if (kill(runner, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fsys::remove_all(entry.path(), ignored);  // the dead runner's; a folder still in use keeps its runner alive
    }
  }
  std::string folder = fmt::format("{}/{}{}-XXXXXX", parent, prefix, getpid());
  if (mkdtemp(folder.data()) == nullptr) {
    return SystemError(fmt::format("{}: cannot make a folder for this run: {}", parent, std::strerror(errno)));
  }
  return folder;
}

}  // namespace wb
