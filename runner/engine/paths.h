// Where the workbook's own files are: the source tree (WORKBOOK_ROOT may move it, for a
// copy of the tree) and the build tree.
#pragma once

#include <string>

namespace wb {

struct WorkbookPaths {
  std::string sourceRoot;
  std::string buildRoot;

  std::string Source(const std::string& relative) const;  // a path in the source tree
  std::string Build(const std::string& relative) const;
};

WorkbookPaths DefaultPaths();

}  // namespace wb
