#include "model/config/model_path.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace wb::model {

namespace fs = std::filesystem;

Expected<ModelPathKind> ClassifyModelPath(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status)) return BadUsage(fmt::format("{}: no such file or directory", path));
  if (fs::is_directory(status)) return ModelPathKind::kHfDirectory;
  if (!fs::is_regular_file(status)) return BadUsage(fmt::format("{}: not a regular file or directory", path));
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() == 4 && std::string_view(magic, 4) == "GGUF") return ModelPathKind::kGguf;
  if (fs::path(path).extension() == ".json") return ModelPathKind::kHfConfigFile;
  return BadData(fmt::format("{}: neither a GGUF file (no \"GGUF\" magic) nor a Hugging Face directory", path));
}

std::string HfConfigPath(const std::string& path, ModelPathKind kind) {
  return kind == ModelPathKind::kHfConfigFile ? path : (fs::path(path) / "config.json").string();
}

std::string HfWeightsPath(const std::string& path, ModelPathKind kind) {
  if (kind != ModelPathKind::kHfConfigFile) return path;
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

Expected<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadData(fmt::format("{}: cannot be opened", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return BadData(fmt::format("{}: read failed", path));
  return text.str();
}

}  // namespace wb::model
