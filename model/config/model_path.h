// What a model path names: a GGUF file, a Hugging Face directory, or a config.json.
//
// Contract: ClassifyModelPath looks at the file system only (a directory; a file starting
// with the GGUF magic "GGUF"; a file ending in .json) and fails with "<path>: <why>" for a
// path that is missing or none of these. HfConfigPath gives the config.json of a directory
// (or the json file itself); HfWeightsPath the directory the safetensors live in.
// ReadWholeFile reads a (small) text file, naming the path when it cannot.
#pragma once

#include <string>

#include "common/expected.h"

namespace wb::model {

enum class ModelPathKind { kGguf, kHfDirectory, kHfConfigFile };

Expected<ModelPathKind> ClassifyModelPath(const std::string& path);
std::string HfConfigPath(const std::string& path, ModelPathKind kind);
std::string HfWeightsPath(const std::string& path, ModelPathKind kind);
Expected<std::string> ReadWholeFile(const std::string& path);

}  // namespace wb::model
