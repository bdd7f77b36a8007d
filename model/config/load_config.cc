// LoadModelConfig: a GGUF file, a Hugging Face directory, or a config.json on its own.
#include "model/config/config.h"
#include "model/config/gguf_config.h"
#include "model/config/hf_config.h"
#include "model/config/model_path.h"

namespace wb::model {

Expected<ModelConfig> LoadModelConfig(const std::string& path) {
  auto kind = ClassifyModelPath(path);
  if (!kind) return kind.error();
  if (*kind == ModelPathKind::kGguf) {
    auto file = GgufFile::Open(path);
    if (!file) return file.error();
    return ModelConfigFromGguf(*file);
  }
  const std::string configPath = HfConfigPath(path, *kind);
  auto text = ReadWholeFile(configPath);
  if (!text) return text.error();
  return ParseHfConfig(*text, configPath);
}

}  // namespace wb::model
