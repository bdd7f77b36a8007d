#include "model/config/weight_source.h"

#include <fmt/format.h>

#include "model/config/gguf_config.h"
#include "model/config/hf_config.h"
#include "model/config/hf_names.h"
#include "model/config/model_path.h"
#include "model/files/printable.h"

namespace wb::model {


Status WeightMatrix::ReadRows(uint64_t first, uint64_t count, std::span<float> out) const {
  if (first > rows || count > rows - first) {
    return InternalError(fmt::format("{}: tensor '{}': rows [{}, {}) requested of {}", tensor.file, name, first,
                                     first + count, rows));
  }
  return DequantizeRows(tensor, firstRow + first, count, out);
}

Expected<WeightSource> WeightSource::Open(const std::string& path, Residence residence) {
  auto kind = ClassifyModelPath(path);
  if (!kind) return kind.error();
  WeightSource source;
  source.path_ = path;
  if (*kind == ModelPathKind::kGguf) {
    auto file = GgufFile::Open(path, residence);
    if (!file) return file.error();
    auto config = ModelConfigFromGguf(*file);
    if (!config) return config.error();
    source.config_ = std::move(config).value();
    source.gguf_.emplace(std::move(file).value());
    return source;
  }
  const std::string configPath = HfConfigPath(path, *kind);
  auto text = ReadWholeFile(configPath);
  if (!text) return text.error();
  auto config = ParseHfConfig(*text, configPath);
  if (!config) return config.error();
  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(HfWeightsPath(path, *kind), residence);
  if (!checkpoint) return checkpoint.error();
  source.config_ = std::move(config).value();
  source.safetensors_.emplace(std::move(checkpoint).value());
  return source;
}

std::string WeightSource::Describe(std::string_view ggufName) const {
  if (gguf_) return fmt::format("'{}'", ggufName);
  const std::vector<std::string> names = HfNamesFor(ggufName, config_.family);
  if (names.empty()) return fmt::format("'{}'", ggufName);
  return fmt::format("'{}' (HF '{}')", ggufName, fmt::join(names, "' or '"));
}

bool WeightSource::Has(std::string_view ggufName) const {
  if (gguf_) return gguf_->FindTensor(ggufName) != nullptr;
  for (const std::string& name : HfNamesFor(ggufName, config_.family)) {
    if (safetensors_->Find(name).tensor != nullptr) return true;
  }
  return false;
}

Expected<TensorView> WeightSource::Find(std::string_view ggufName) const {
  if (gguf_) {
    if (gguf_->FindTensor(ggufName) == nullptr) {
      return BadData(fmt::format("{}: tensor {} is missing", path_, Describe(ggufName)));
    }
    return ViewTensor(*gguf_, ggufName);
  }
  for (const std::string& name : HfNamesFor(ggufName, config_.family)) {
    if (safetensors_->Find(name).tensor != nullptr) return ViewTensor(*safetensors_, name);
  }
  return BadData(fmt::format("{}: tensor {} is missing", path_, Describe(ggufName)));
}

Expected<WeightMatrix> WeightSource::Matrix(std::string_view ggufName, uint64_t rows, uint64_t cols) const {
  auto view = Find(ggufName);
  if (!view) return view.error();
  const std::vector<uint64_t> expected = {rows, cols};
  if (view->shape != expected) {
    return BadData(fmt::format("{}: tensor {} has shape {}, expected {}", view->file, Describe(ggufName),
                               ShapeText(view->shape), ShapeText(expected)));
  }
  return WeightMatrix{std::string(ggufName), std::move(view).value(), 0, rows, cols};
}

Expected<WeightMatrix> WeightSource::Expert(std::string_view stackedName, int expert, uint64_t rows,
                                            uint64_t cols) const {
  const uint64_t experts = static_cast<uint64_t>(config_.experts);
  const std::string label = fmt::format("{}[expert {}]", stackedName, expert);
  if (gguf_) {
    auto view = Find(stackedName);
    if (!view) return view.error();
    const std::vector<uint64_t> expected = {experts, rows, cols};
    if (view->shape != expected) {
      return BadData(fmt::format("{}: tensor '{}' has shape {}, expected {} (experts, rows, cols)", view->file,
                                 stackedName, ShapeText(view->shape), ShapeText(expected)));
    }
    return WeightMatrix{label, std::move(view).value(), static_cast<uint64_t>(expert) * rows, rows, cols};
  }
  const std::vector<HfExpertSlice> slices = HfExpertSlices(stackedName, expert, config_.family);
  for (const HfExpertSlice& slice : slices) {
    if (safetensors_->Find(slice.name).tensor == nullptr) continue;
    auto view = ViewTensor(*safetensors_, slice.name);
    if (!view) return view.error();
    const std::vector<uint64_t> expected =
        slice.fused ? std::vector<uint64_t>{experts, slice.rowsPerExpertMultiple * rows, cols}
                    : std::vector<uint64_t>{rows, cols};
    if (view->shape != expected) {
      return BadData(fmt::format("{}: tensor '{}' (HF '{}') has shape {}, expected {}", view->file, label, slice.name,
                                 ShapeText(view->shape), ShapeText(expected)));
    }
    const uint64_t firstRow =
        slice.fused ? (static_cast<uint64_t>(expert) * slice.rowsPerExpertMultiple + slice.rowBlock) * rows : 0;
    return WeightMatrix{label, std::move(view).value(), firstRow, rows, cols};
  }
  return BadData(fmt::format("{}: tensor '{}' (HF '{}') is missing", path_, label,
                             slices.empty() ? std::string("?") : slices.front().name));
}

Expected<std::vector<float>> WeightSource::Vector(std::string_view ggufName, uint64_t length) const {
  auto view = Find(ggufName);
  if (!view) return view.error();
  if (view->ElementCount() != length || view->shape.size() != 1) {
    return BadData(fmt::format("{}: tensor {} has shape {}, expected [{}]", view->file, Describe(ggufName),
                               ShapeText(view->shape), length));
  }
  return DequantizeAll(*view);
}

Expected<std::vector<float>> WeightSource::Norm(std::string_view ggufName, uint64_t length, NormShift shift) const {
  auto values = Vector(ggufName, length);
  if (!values) return values.error();
  if (shift == NormShift::kAddOne) {
    for (float& w : *values) w = 1.0f + w;  // Gemma3RMSNorm's (1 + w), in f32
  }
  return values;
}

}  // namespace wb::model
