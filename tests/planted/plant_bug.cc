// plant-bug: writes a planted-bug variant of a solution file.
//
//   plant-bug SOLUTION BUG_FILE OUTPUT [DEPFILE]
//
// A bug file (tests/planted/stageNN/*.bug) is a few header lines, then one or more
// "--- find" / "--- replace" sections, or one "--- whole file" section: a complete stage file
// written another way (a correct variant that shares nothing with the solution's code). Each find text must occur in the solution exactly
// once, so a change to the solution that moves the text breaks the build loudly instead of
// silently planting nothing. The header lines are read by planted_check.cc.
//
// A stage file may include other .cc files of its folder (stage 5's decoder.cc includes
// kv_cache.cc, rope.cc, ...): each line `#include "NAME.cc"` whose NAME.cc lies beside the
// solution is replaced by that file's text before the edits apply (one level: the parts'
// own includes are left as they are), so a find text may come from any of the stage's .cc
// files, and must still occur exactly once in the whole. The variant is compiled from the
// build folder, with the solution's folder on its include path for the headers
// (tests/planted/meson.build). DEPFILE, when given, names those files for ninja (a Makefile
// rule), so a change to one of them plants the bug again.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

bool ReadFile(const char* path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return true;
}

// The folder of a path, with its trailing slash ("" for a bare file name).
std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// source with every line `#include "NAME.cc"` whose NAME.cc exists in `folder` replaced by
// that file's text (ended by a newline if it lacks one). Other lines are kept as they are.
std::string ExpandSiblingIncludes(const std::string& source, const std::string& folder,
                                  std::vector<std::string>& included_files) {
  static const std::string kOpen = "#include \"";
  std::string out;
  size_t at = 0;
  while (at < source.size()) {
    size_t end = source.find('\n', at);
    const bool last = end == std::string::npos;
    if (last) end = source.size();
    const std::string line = source.substr(at, end - at);
    std::string included;
    if (line.rfind(kOpen, 0) == 0 && line.size() > kOpen.size() + 4 && line.back() == '"') {
      const std::string name = line.substr(kOpen.size(), line.size() - kOpen.size() - 1);
      const bool sibling = name.find('/') == std::string::npos && name.size() > 3 &&
                           name.compare(name.size() - 3, 3, ".cc") == 0;
      if (sibling && ReadFile((folder + name).c_str(), included)) {
        if (included.empty() || included.back() != '\n') included += '\n';
        included_files.push_back(folder + name);
        out += included;
        at = last ? end : end + 1;
        continue;
      }
    }
    out += line;
    if (!last) out += '\n';
    at = last ? end : end + 1;
  }
  return out;
}

// A path as a Makefile rule (a depfile) writes it: spaces escaped.
std::string EscapeForMake(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

struct Edit {
  std::string find;
  std::string replace;
};

// Splits the sections of a bug file. A section's text is every line up to the next
// "--- " marker, each line with its newline.
bool ParseEdits(const std::string& bug, std::vector<Edit>& edits, std::string& wholeFile, std::string& error) {
  std::istringstream lines(bug);
  std::string line;
  std::string* current = nullptr;
  bool whole = false;
  while (std::getline(lines, line)) {
    if (whole) {
      wholeFile += line + "\n";
    } else if (line == "--- whole file") {
      if (!edits.empty()) {
        error = "a '--- whole file' section cannot follow '--- find' sections";
        return false;
      }
      whole = true;
    } else if (line == "--- find") {
      edits.push_back({});
      current = &edits.back().find;
    } else if (line == "--- replace") {
      if (edits.empty() || current != &edits.back().find) {
        error = "a '--- replace' section must follow a '--- find' section";
        return false;
      }
      current = &edits.back().replace;
    } else if (current != nullptr) {
      *current += line + "\n";
    }
  }
  if (edits.empty() && !whole) {
    error = "no '--- find' or '--- whole file' section";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: plant-bug SOLUTION BUG_FILE OUTPUT [DEPFILE]\n");
    return 2;
  }
  std::string source;
  std::string bug;
  if (!ReadFile(argv[1], source) || !ReadFile(argv[2], bug)) {
    std::fprintf(stderr, "plant-bug: cannot read %s or %s\n", argv[1], argv[2]);
    return 2;
  }
  std::vector<Edit> edits;
  std::string wholeFile;
  std::string error;
  if (!ParseEdits(bug, edits, wholeFile, error)) {
    std::fprintf(stderr, "plant-bug: %s: %s\n", argv[2], error.c_str());
    return 2;
  }
  std::vector<std::string> includedFiles;
  const std::string expanded = ExpandSiblingIncludes(source, FolderOf(argv[1]), includedFiles);
  const std::string where = std::string(argv[1]) + (includedFiles.empty() ? "" : " and the .cc files it includes");
  source = expanded;
  if (!wholeFile.empty()) source = wholeFile;
  for (size_t i = 0; i < edits.size(); ++i) {
    const size_t at = source.find(edits[i].find);
    if (at == std::string::npos || source.find(edits[i].find, at + 1) != std::string::npos) {
      std::fprintf(stderr, "plant-bug: %s: the text of find section %zu occurs %s in %s\n", argv[2], i + 1,
                   at == std::string::npos ? "nowhere" : "more than once", where.c_str());
      return 2;
    }
    source.replace(at, edits[i].find.size(), edits[i].replace);
  }
  std::ofstream out(argv[3], std::ios::binary | std::ios::trunc);
  out << "// Generated by plant-bug from " << argv[2] << ": a deliberately broken solution.\n" << source;
  if (!out.good()) return 2;
  if (argc == 5) {
    std::ofstream deps(argv[4], std::ios::binary | std::ios::trunc);
    deps << EscapeForMake(argv[3]) << ":";
    for (const std::string& file : includedFiles) deps << " " << EscapeForMake(file);
    deps << "\n";
    if (!deps.good()) return 2;
  }
  return 0;
}
