// The student's stage file compiled in the compiler's sandbox, cached by content; see
// student_build.h.
#include "student_build.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "../../common/fnv1a.h"
#include "../isolation/run_folder.h"
#include "../isolation/sandbox.h"
#include "process.h"

namespace wb {
namespace {

namespace fsys = std::filesystem;

constexpr size_t kShownErrors = 3;                 // errors shown in full; the rest are counted
constexpr size_t kShownCompilerBytes = 16 * 1024;  // at most this much compiler output
constexpr uintmax_t kHashedFileBytes = 1 << 20;    // larger files in the stage folder: size and time
constexpr size_t kKeptBuildsPerName = 3;           // cached builds kept per stage, tree and harness
constexpr const char* kHeadersRecord = ".headers"; // beside a build: every file its compile read
constexpr int kCompileAttempts = 3;                // compiles in a row whose files changed under them

bool ReadAll(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return true;
}

uint64_t HashText(const std::string& text, uint64_t hash) { return Fnv1a64(text.data(), text.size(), hash); }

// What a file of the build's record says of it: "SIZE MTIME PATH", MTIME in nanoseconds.
std::string Stamp(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return fmt::format("missing {}", path);
  return fmt::format("{} {} {}", info.st_size, info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec, path);
}

// One file into the key: its name and content, or for a large one (a precompiled header,
// tens of MiB, which only the build writes) its stamp.
uint64_t HashFile(const fsys::path& file, uint64_t key) {
  std::error_code ec;
  key = HashText(file.string(), key);
  const uintmax_t size = fsys::file_size(file, ec);
  std::string text;
  if (ec || size > kHashedFileBytes) return HashText(Stamp(file.string()), key);
  return ReadAll(file.string(), text) ? HashText(text, key) : key;
}

// The stage's files as the compiler will see them: each read through a descriptor opened
// without following a link, from a regular file with one name, in a folder that is itself no
// link. A symbolic link (to the solution, say), a hard link (a second name of a file anywhere
// on the machine), a FIFO or a device is refused with the reason, never compiled: the build
// is of these bytes, copied into the compiler's own folder, so nothing the stage folder
// points at reaches the compiler, and the key is of exactly what is compiled.
struct StageFiles {
  std::string folder;  // as given (absolute, not resolved)
  std::vector<std::pair<std::string, std::string>> files;  // name, bytes; the set's order
};

constexpr off_t kLargestStageFileBytes = off_t{4} << 20;

Expected<StageFiles> ReadStageFiles(const fsys::path& folder, const std::vector<std::string>& names) {
  StageFiles snapshot;
  snapshot.folder = folder.string();
  const int dir = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) {
    const int e = errno;
    struct stat info {};
    if (lstat(folder.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
      return BadUsage(fmt::format("{}: the stage's folder is a symbolic link; only a real folder of regular files "
                                  "is graded (copy the files themselves in)", folder.string()));
    }
    return BadUsage(fmt::format("{}: cannot open the stage's folder: {}", folder.string(), std::strerror(e)));
  }
  struct CloseDir {
    int fd;
    ~CloseDir() { close(fd); }
  } closeDir{dir};
  for (const std::string& name : names) {
    const std::string shown = (folder / name).string();
    const int fd = openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == ELOOP) {
        return BadUsage(fmt::format("{}: a symbolic link; only regular files are graded (put the file itself there, "
                                    "not a link to it)", shown));
      }
      if (e == ENOENT && names.size() > 1) {
        std::string all;
        for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
        return BadUsage(fmt::format("{}: no such file; this stage's files are {} (data/stages.json)", shown, all));
      }
      return BadUsage(fmt::format("{}: cannot open it: {}", shown, std::strerror(e)));
    }
    struct CloseFile {
      int fd;
      ~CloseFile() { close(fd); }
    } closeFile{fd};
    struct stat info {};
    if (fstat(fd, &info) != 0) return BadUsage(fmt::format("{}: cannot read it: {}", shown, std::strerror(errno)));
    if (!S_ISREG(info.st_mode)) {
      const char* what = S_ISDIR(info.st_mode) ? "a folder" : S_ISFIFO(info.st_mode) ? "a FIFO"
                         : S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) ? "a device" : S_ISSOCK(info.st_mode) ? "a socket"
                                                                                                                : "not a file";
      return BadUsage(fmt::format("{}: {}, not a regular file; only regular files are graded", shown, what));
    }
    if (info.st_nlink > 1) {
      return BadUsage(fmt::format("{}: a hard link ({} names for one file); only a file of its own is graded (copy "
                                  "it: cp --no-preserve=links, or save it anew)", shown, info.st_nlink));
    }
    if (info.st_size > kLargestStageFileBytes) {
      return BadUsage(fmt::format("{}: {} bytes; a stage file may have at most {} MiB", shown, info.st_size,
                                  kLargestStageFileBytes >> 20));
    }
    std::string bytes;
    char chunk[65536];
    for (ssize_t n; (n = read(fd, chunk, sizeof chunk)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return BadUsage(fmt::format("{}: cannot read it: {}", shown, std::strerror(errno)));
      bytes.append(chunk, static_cast<size_t>(n));
      if (bytes.size() > static_cast<size_t>(kLargestStageFileBytes)) {
        return BadUsage(fmt::format("{}: grew past {} MiB while read", shown, kLargestStageFileBytes >> 20));
      }
    }
    snapshot.files.emplace_back(name, std::move(bytes));
  }
  return snapshot;
}

uint64_t HashStageFiles(const StageFiles& snapshot, uint64_t key) {
  key = Fnv1a64(snapshot.folder.data(), snapshot.folder.size(), key);  // the path appears in messages
  for (const auto& [name, bytes] : snapshot.files) {
    key = Fnv1a64(name.data(), name.size(), key);
    const uint64_t size = bytes.size();
    key = Fnv1a64(&size, sizeof size, key);
    key = Fnv1a64(bytes.data(), bytes.size(), key);
  }
  return key;
}

// Writes the snapshot into `into` (a new folder), each file 0644: what the compiler reads.
Status WriteStageFiles(const StageFiles& snapshot, const std::string& into) {
  if (mkdir(into.c_str(), 0755) != 0) return SystemError(fmt::format("{}: {}", into, std::strerror(errno)));
  for (const auto& [name, bytes] : snapshot.files) {
    const std::string path = into + "/" + name;
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return SystemError(fmt::format("{}: {}", path, std::strerror(errno)));
    const bool written = write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    close(fd);
    if (!written) return SystemError(fmt::format("{}: cannot write the copy the compiler reads", path));
  }
  return Status::Ok();
}

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// The symbols a file of a stage that counts allocations may not call by name, each a way
// around the count: glibc's own allocators beside the counted malloc (any __libc_ name), the
// system calls that map or grow memory, raw system calls, and looking up the real allocator
// by name. (Starting processes is the sandbox's business, in every stage alike.) The first
// one `nm -P -u`'s listing names ("NAME U" lines, and "FILE:" headers when it lists several
// objects), or "".
std::string FirstRefusedSymbol(const std::string& listing) {
  static const char* const kRefused[] = {"mmap",  "mmap64", "__mmap", "mremap", "__mremap", "brk",
                                         "__brk", "sbrk",   "__sbrk", "syscall", "dlopen",  "dlmopen",
                                         "dlsym", "dlvsym"};
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.empty() || name.back() == ':') continue;
    const std::string bare = name.substr(0, name.find('@'));  // "mmap@GLIBC_2.2.5"
    if (bare.rfind("__libc_", 0) == 0) return bare;
    for (const char* refused : kRefused) {
      if (bare == refused) return bare;
    }
  }
  return "";
}

// Every file the compiler may include from a folder (its own folder for the stage file,
// the contract headers): names and contents, in name order.
uint64_t HashFolder(const fsys::path& folder, uint64_t key) {
  std::error_code ec;
  std::vector<fsys::path> files;
  for (const auto& entry : fsys::directory_iterator(folder, ec)) {
    if (entry.is_regular_file(ec)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) key = HashFile(file, key);
  return key;
}

// The compiler's messages for a reader: the first kShownErrors errors in full, a count of the
// rest, at most kShownCompilerBytes; and where an include was not found, what the compiler
// can see (the same words whether or not such a file exists outside, so that nothing is
// learnt about the grader's files).
std::string TrimCompilerOutput(const std::string& output, uint64_t totalBytes) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  size_t errors = 0;
  size_t cut = lines.size();
  bool missingInclude = false;
  bool redefinesHarness = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool error = lines[i].find(": error: ") != std::string::npos || lines[i].find(": fatal error: ") != std::string::npos;
    if (lines[i].find(": fatal error: ") != std::string::npos && lines[i].find("No such file or directory") != std::string::npos) {
      missingInclude = true;
    }
    if (lines[i].find("multiple definition of") != std::string::npos) redefinesHarness = true;
    if (error && ++errors == kShownErrors + 1) cut = i;
  }
  std::string text;
  size_t shownLines = 0;
  for (; shownLines < cut && text.size() + lines[shownLines].size() < kShownCompilerBytes; ++shownLines) {
    text += lines[shownLines] + "\n";
  }
  if (errors > kShownErrors) {
    text += fmt::format("[... and {} more errors, not shown: fix the first ones first]\n", errors - kShownErrors);
  } else if (shownLines < lines.size() || totalBytes > output.size()) {
    text += fmt::format("[... {} more bytes of compiler output, not shown]\n", totalBytes - std::min<uint64_t>(totalBytes, text.size()));
  }
  if (redefinesHarness) {
    text += "Your file defines a symbol the harness defines (`main`, operator new or delete, or one of its own "
            "functions): a stage file "
            "defines the stage function and its helpers only; the harness is the program around it.\n";
  }
  if (missingInclude) {
    text += "The compiler sees only the stage file's own folder, the contract headers and the system's headers: "
            "an #include of anything else is refused.\n";
  }
  return text;
}

// Older builds of the same name, beyond the newest few, each with its record of headers: a
// build is never replaced in place, so a check still running one is unaffected.
void PruneOldBuilds(const fsys::path& cacheDir, const std::string& cacheName) {
  std::error_code ec;
  std::vector<std::pair<fsys::file_time_type, fsys::path>> builds;
  for (const auto& entry : fsys::directory_iterator(cacheDir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(cacheName + "-", 0) == 0 && entry.path().extension() != kHeadersRecord) {
      builds.emplace_back(entry.last_write_time(ec), entry.path());
    }
  }
  if (builds.size() <= kKeptBuildsPerName) return;
  std::sort(builds.begin(), builds.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = kKeptBuildsPerName; i < builds.size(); ++i) {
    fsys::remove(builds[i].second, ec);
    fsys::remove(builds[i].second.string() + kHeadersRecord, ec);
  }
}

// The files the compiler read, from the make rule it wrote (-MD -MF): the names after
// "target: ", split at blanks and at backslash-newlines, a space within a name escaped by a
// backslash. Empty when the rule cannot be read.
std::vector<std::string> ReadDependencies(const std::string& rule) {
  std::string text;
  if (!ReadAll(rule, text)) return {};
  const size_t colon = text.find(": ");
  if (colon == std::string::npos) return {};
  std::vector<std::string> files;
  std::string current;
  for (size_t i = colon + 2; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == ' ' || text[i + 1] == '\n')) {
      if (text[i + 1] == ' ') current += ' ';
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      if (!current.empty()) files.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) files.push_back(current);
  return files;
}

// Whether every file a cached build's record names is as it was when the build was made: the
// key covers the stage folder, the contracts and the prelude; this covers the system's
// headers too (a library upgraded since), which no key computed before compiling can know.
bool HeadersUnchanged(const std::string& executable) {
  std::string record;
  if (!ReadAll(executable + kHeadersRecord, record)) return false;
  std::istringstream lines(record);
  for (std::string line; std::getline(lines, line);) {
    const size_t path = line.find(' ', line.find(' ') + 1);
    if (path == std::string::npos || Stamp(line.substr(path + 1)) != line) return false;
  }
  return true;
}

}  // namespace

Status CopyStageFiles(const std::string& folder, const std::vector<std::string>& names, const std::string& into) {
  auto read = ReadStageFiles(fsys::absolute(folder).lexically_normal(), names);
  if (!read.ok()) return read.error();
  return WriteStageFiles(*read, into);
}

Expected<StudentBinary> BuildStageHarness(const CompilerSetup& setup, const std::string& source,
                                          const std::string& harnessLibrary, const std::string& cacheName) {
  std::error_code ec;
  // Not resolved: a link anywhere under the stage's folder is refused, not followed.
  const fsys::path sourcePath = fsys::absolute(source, ec).lexically_normal();
  if (ec) return BadUsage(fmt::format("{}: cannot read the stage file", source));
  const std::string mainName = sourcePath.filename().string();
  std::vector<std::string> stageNames = setup.stageFiles;
  if (std::find(stageNames.begin(), stageNames.end(), mainName) == stageNames.end()) {
    stageNames.insert(stageNames.begin(), mainName);
  }
  // The stage's files, then each extra source (a stage file of its own folder).
  std::vector<std::pair<fsys::path, std::vector<std::string>>> sets = {{sourcePath.parent_path(), stageNames}};
  for (const std::string& extra : setup.extraSources) {
    const fsys::path path = fsys::absolute(extra, ec).lexically_normal();
    if (ec || !fsys::exists(fsys::symlink_status(path, ec))) return BadUsage(fmt::format("{}: no such stage file", extra));
    sets.push_back({path.parent_path(), {path.filename().string()}});
  }
  auto readAll = [&]() -> Expected<std::vector<StageFiles>> {
    std::vector<StageFiles> snapshots;
    for (const auto& [folder, names] : sets) {
      auto read = ReadStageFiles(folder, names);
      if (!read.ok()) return read.error();
      snapshots.push_back(std::move(*read));
    }
    return snapshots;
  };
  const fsys::path library = fsys::weakly_canonical(fsys::absolute(harnessLibrary), ec);
  std::string libraryBytes;
  if (ec || !ReadAll(library.string(), libraryBytes)) {
    return InternalError(fmt::format("{}: the harness library is missing; run ./workbook again to rebuild it",
                                     harnessLibrary));
  }
  // Meson makes thin archives: the library names its objects, which sit in LIBRARY.p.
  const fsys::path libraryObjects = library.string() + ".p";
  const bool thinArchive = fsys::is_directory(libraryObjects, ec);
  const fsys::path contracts = fsys::weakly_canonical(fsys::absolute(setup.contractsDir), ec);
  std::vector<std::string> folders;  // the source folders the code may include from
  for (const std::string& folder : setup.sourceFolders) {
    folders.push_back((fsys::path(setup.sourceRoot) / folder).lexically_normal().string());
  }
  // The prelude's two files, when this build has them: a .gch that is missing or out of
  // date is not an error, since GCC then reads the header itself.
  std::vector<std::string> preludeFiles;  // the header first, then its .gch
  const fsys::path prelude = setup.prelude.empty() ? fsys::path() : fsys::absolute(setup.prelude);
  if (!prelude.empty() && fsys::is_regular_file(prelude, ec)) {
    preludeFiles.push_back(prelude.string());
    if (fsys::is_regular_file(prelude.string() + ".gch", ec)) preludeFiles.push_back(prelude.string() + ".gch");
  }
  // The key: everything that changes the executable, every file the compiler may include
  // but the system's headers, for which the compiler's own file stands in. It is taken
  // again after a compile: a file saved while the compiler ran may or may not be in the
  // build, which then belongs to no key and is not kept.
  auto keyOf = [&](const std::vector<StageFiles>& snapshots) {
    uint64_t key = 0xcbf29ce484222325ull;
    for (const StageFiles& snapshot : snapshots) key = HashStageFiles(snapshot, key);
    key = HashText(sourcePath.string(), key);  // the path appears in debug info and messages
    key = HashText(libraryBytes, key);
    if (thinArchive) key = HashFolder(libraryObjects, key);
    key = HashFolder(contracts, key);
    for (const std::string& folder : folders) key = HashFolder(folder, key);
    for (const auto& arg : setup.linkArgs) key = HashText(arg, key);
    for (const auto& file : preludeFiles) key = HashFile(file, key);
    for (const auto& part : setup.compiler) key = HashText(part, key);
    for (const auto& flag : setup.flags) key = HashText(flag, key);
    key = HashText(setup.refuseUncountedAllocation ? "refuse-uncounted-allocation" : "", key);
    return key;
  };

  const fsys::path cacheDir = fsys::absolute(setup.cacheDir);
  fsys::create_directories(cacheDir, ec);
  if (ec || access(cacheDir.c_str(), W_OK) != 0) {
    return SystemError(fmt::format("{}: the build cache folder cannot be written: {}", cacheDir.string(),
                                   ec ? ec.message() : std::strerror(errno)));
  }
  for (int attempt = 1;; ++attempt) {
    auto snapshots = readAll();
    if (!snapshots.ok()) return snapshots.error();
    const uint64_t key = keyOf(*snapshots);
    StudentBinary binary;
    binary.executable = (cacheDir / fmt::format("{}-{:016x}", cacheName, key)).string();
    if (access(binary.executable.c_str(), X_OK) == 0 && HeadersUnchanged(binary.executable)) {
      binary.compiled = true;
      return binary;
    }

    // The compiler writes into a folder of its own, which only it (the sandbox uid, when the
    // runner is root) may write; the build then moves into the cache under its key. The copy
    // of the stage's files it reads is written there first, by the runner.
    auto made = MakeRunFolder(cacheDir.string(), ".compile-");
    if (!made.ok()) return made.error();
    const std::string work = *made;
    struct RemoveWork {
      std::string path;
      ~RemoveWork() {
        std::error_code ignored;
        fsys::remove_all(path, ignored);
      }
    } removeWork{work};
    // Each set's copy, and the folder it stands for: the compiler's messages, __FILE__ and
    // the debug information name the files where the student keeps them.
    std::vector<std::pair<std::string, std::string>> copies;  // copy folder, original folder
    if (mkdir((work + "/src").c_str(), 0755) != 0) {
      return SystemError(fmt::format("{}/src: {}", work, std::strerror(errno)));
    }
    for (size_t i = 0; i < snapshots->size(); ++i) {
      const std::string copy = fmt::format("{}/src/{}", work, i);
      if (auto written = WriteStageFiles((*snapshots)[i], copy); !written.ok()) return written.error();
      copies.emplace_back(copy, (*snapshots)[i].folder);
    }
    const std::string compiledSource = copies[0].first + "/" + mainName;
    const SandboxPlan& sandbox = CurrentSandbox();
    if (sandbox.dropPrivileges && chown(work.c_str(), kSandboxUid, kSandboxGid) != 0) {
      return SystemError(fmt::format("{}: cannot hand the folder to the compiler's uid: {}", work, std::strerror(errno)));
    }
    CompilerView view;
    view.readOnly = {contracts.string(), library.string()};
    view.readOnly.insert(view.readOnly.end(), folders.begin(), folders.end());
    if (thinArchive) view.readOnly.push_back(libraryObjects.string());
    view.readOnly.insert(view.readOnly.end(), preludeFiles.begin(), preludeFiles.end());
    view.writable = work;
    CompileLimits limits;
    limits.wallSeconds = setup.wallSeconds;
    // Three steps, each confined alike: each source compiled on its own (the extras first,
    // then the stage's; GCC's dependency record is the stage's), the objects' undefined
    // symbols listed (nm), and the link.
    const std::string dependencies = work + "/harness.d";
    std::vector<std::string> sources;  // as compiled
    for (size_t i = 1; i < copies.size(); ++i) sources.push_back(copies[i].first + "/" + (*snapshots)[i].files[0].first);
    sources.push_back(compiledSource);
    std::vector<std::string> objects;
    std::string messages;
    uint64_t messageBytes = 0;
    std::optional<CommandResult> failed;  // the step that did not succeed, if one did not
    for (size_t i = 0; i < sources.size() && !failed; ++i) {
      std::vector<std::string> argv = setup.compiler;
      argv.insert(argv.end(), setup.flags.begin(), setup.flags.end());
      for (const auto& [copy, original] : copies) argv.push_back(fmt::format("-ffile-prefix-map={}={}", copy, original));
      if (!preludeFiles.empty()) argv.insert(argv.end(), {"-include", preludeFiles[0]});
      if (i + 1 == sources.size()) argv.insert(argv.end(), {"-MD", "-MF", dependencies});
      argv.insert(argv.end(), {"-I", contracts.string()});
      if (!folders.empty()) argv.insert(argv.end(), {"-I", setup.sourceRoot});
      objects.push_back(fmt::format("{}/object-{}.o", work, i));
      argv.insert(argv.end(), {"-c", sources[i], "-o", objects.back()});
      auto ran = RunCompiler(argv, view, limits);
      if (!ran.ok()) return ran.error();
      messages += ran->output;
      messageBytes += ran->outputBytes;
      if (ran->timedOut || ran->exitStatus != 0) failed = *ran;
    }
    // What the student's objects call by name: the policy below refuses a file that would go
    // around the runner's checks.
    std::string undefined;
    if (!failed && setup.refuseUncountedAllocation) {
      std::vector<std::string> argv = {"nm", "-P", "-u"};
      argv.insert(argv.end(), objects.begin(), objects.end());
      auto listed = RunCompiler(argv, view, limits);
      if (!listed.ok()) return listed.error();
      if (listed->timedOut || listed->exitStatus != 0) {
        return SystemError(fmt::format("nm could not list the symbols of the compiled stage file (exit status {}): {}",
                                       listed->exitStatus, listed->output.substr(0, 400)));
      }
      undefined = listed->output;
    }
    const std::string refusedSymbol = failed ? "" : FirstRefusedSymbol(undefined);
    // The whole harness library is linked, not just the members the student's object needs,
    // so a file that defines `main`, operator new or any of the harness's own symbols is a
    // link error ("multiple definition"), never a silent replacement of the harness.
    const std::string output = work + "/harness";
    if (!failed && refusedSymbol.empty()) {
      std::vector<std::string> argv = setup.compiler;
      argv.insert(argv.end(), setup.flags.begin(), setup.flags.end());
      argv.insert(argv.end(), objects.begin(), objects.end());
      argv.insert(argv.end(), {"-Wl,--whole-archive", library.string(), "-Wl,--no-whole-archive"});
      argv.insert(argv.end(), setup.linkArgs.begin(), setup.linkArgs.end());
      argv.insert(argv.end(), {"-o", output});
      auto linked = RunCompiler(argv, view, limits);
      if (!linked.ok()) return linked.error();
      messages += linked->output;
      messageBytes += linked->outputBytes;
      if (linked->timedOut || linked->exitStatus != 0) failed = *linked;
    }
    // A file saved while the compiler ran may or may not be in what it made (or in its
    // messages), so that build belongs to no key: it is dropped and the newest files compiled.
    auto now = readAll();
    if (!now.ok() || keyOf(*now) != key) {
      if (attempt < kCompileAttempts) continue;
      if (!now.ok()) return now.error();
      return BadUsage(fmt::format("{}: the stage's files changed during each of {} compiles in a row; check again "
                                  "once they are saved", source, kCompileAttempts));
    }
    for (const auto& [copy, original] : copies) ReplaceAll(messages, copy, original);
    binary.diagnostics = TrimCompilerOutput(messages, messageBytes);
    if (failed) {
      const bool cpuLimit = failed->exitStatus == 128 + SIGKILL || failed->exitStatus == 128 + SIGXCPU;
      binary.stoppedAtLimit = failed->timedOut || cpuLimit;
      if (failed->timedOut) {
        binary.diagnostics += fmt::format("The compiler was still running after {:.0f} s, its time limit, and was stopped.\n",
                                          limits.wallSeconds);
      } else if (cpuLimit) {
        binary.diagnostics += "The compiler was stopped at its CPU-time limit.\n";
      }
      binary.compiled = false;
      return binary;
    }
    if (!refusedSymbol.empty()) {
      binary.compiled = false;
      binary.diagnostics += fmt::format(
          "Your code calls {}, which a stage file may not: glibc's own allocators (__libc_malloc, ...), the memory "
          "system calls (mmap, mremap, brk, sbrk), raw system calls (syscall) and looking up functions by name "
          "(dlsym) would each allocate where the runner's count cannot see it. "
          "Allocate with new or a std::vector, which are counted, or not at all.\n",
          refusedSymbol);
      return binary;
    }
    // What the compile read: the copy, the contracts, the source folders, the prelude and
    // the system's headers, nothing else. Where the machine has no filesystem view (a
    // container that refuses namespaces), this is what keeps an #include of the solution
    // by its absolute path from being graded.
    const std::vector<std::string> read = ReadDependencies(dependencies);
    std::vector<std::string> allowed = {work + "/src/", contracts.string() + "/", "/usr/"};
    for (const std::string& folder : folders) allowed.push_back(folder + "/");
    for (const std::string& file : preludeFiles) allowed.push_back(file);
    for (const std::string& named : read) {
      const std::string file = fsys::path(named).lexically_normal().string();
      const bool inside = std::any_of(allowed.begin(), allowed.end(),
                                      [&](const std::string& prefix) { return file.rfind(prefix, 0) == 0; });
      if (!inside) {
        binary.compiled = false;
        binary.diagnostics = fmt::format(
            "The compile read {}, which is not one of the stage's files: the compiler may read only the stage's own "
            "files, the contract headers and the system's headers, so this build is not graded.\n", file);
        return binary;
      }
    }
    if (sandbox.dropPrivileges && chown(output.c_str(), geteuid(), getegid()) != 0) {
      return SystemError(fmt::format("{}: cannot take the build back from the compiler's uid: {}", output, std::strerror(errno)));
    }
    // The record of what the compile read, stamped by the runner itself (the compiler only
    // named the files), the copy's files under their own names. A build whose record is
    // missing is rebuilt, never trusted.
    std::string record;
    for (std::string file : read) {
      for (const auto& [copy, original] : copies) {
        if (file.rfind(copy + "/", 0) == 0) file = original + file.substr(copy.size());
      }
      record += Stamp(file) + "\n";
    }
    const std::string recordPath = binary.executable + kHeadersRecord;
    const std::string recordTemporary = work + "/headers";
    if (record.empty() || !std::ofstream(recordTemporary, std::ios::binary).write(record.data(), record.size())) {
      return SystemError(fmt::format("{}: cannot record the headers the compile read", recordTemporary));
    }
    fsys::rename(recordTemporary, recordPath, ec);
    if (!ec) fsys::rename(output, binary.executable, ec);
    if (ec) return SystemError(fmt::format("{}: cannot move the new build into place: {}", binary.executable, ec.message()));
    PruneOldBuilds(cacheDir, cacheName);
    binary.compiled = true;
    return binary;
  }
}

}  // namespace wb
