// SafetensorsCheckpoint: a Hugging Face directory with one file or an index and its shards.
// The index format (`weight_map`: tensor -> shard) is what transformers writes and llama.cpp's
// converter reads (`ModelBase.index_tensors`, llama.cpp's conversion/base.py).
#include <filesystem>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "printable.h"
#include "safetensors.h"

namespace wb {

namespace fsys = std::filesystem;

Expected<SafetensorsCheckpoint> SafetensorsCheckpoint::OpenFile(const std::string& path, Residence residence) {
  Expected<SafetensorsFile> file = SafetensorsFile::Open(path, residence);
  if (!file.ok()) return file.error();
  std::vector<SafetensorsFile> files;
  files.push_back(std::move(*file));
  return FromFiles(std::move(files), path);
}

Expected<SafetensorsCheckpoint> SafetensorsCheckpoint::FromFiles(std::vector<SafetensorsFile> files,
                                                                  std::string source) {
  SafetensorsCheckpoint checkpoint;
  checkpoint.source_ = std::move(source);
  checkpoint.shards_ = std::move(files);
  if (Status s = checkpoint.IndexTensors(); !s.ok()) return s.error();
  return checkpoint;
}

Expected<SafetensorsCheckpoint> SafetensorsCheckpoint::OpenDirectory(const std::string& directory,
                                                                      Residence residence) {
  std::error_code error;
  if (!fsys::is_directory(directory, error)) {
    if (!fsys::exists(directory, error)) return BadUsage(fmt::format("{}: no such file or directory", directory));
    return BadUsage(fmt::format("{}: is not a directory", directory));
  }
  const fsys::path dir(directory);
  const std::string indexPath = (dir / kIndexFileName).string();
  const std::string singlePath = (dir / kSingleFileName).string();
  if (!fsys::exists(indexPath, error)) {
    if (!fsys::exists(singlePath, error)) {
      return BadData(fmt::format("{}: has neither {} nor {}", directory, kSingleFileName, kIndexFileName));
    }
    Expected<SafetensorsCheckpoint> checkpoint = OpenFile(singlePath, residence);
    if (checkpoint.ok()) checkpoint->source_ = directory;
    return checkpoint;
  }

  Expected<MappedFile> indexFile = MappedFile::Open(indexPath);
  if (!indexFile.ok()) return indexFile.error();
  const auto indexBytes = indexFile->bytes();
  const std::string_view indexText(reinterpret_cast<const char*>(indexBytes.data()), indexBytes.size());
  Expected<std::map<std::string, std::string>> weightMap = ParseIndex(indexText, indexPath);
  if (!weightMap.ok()) return weightMap.error();

  SafetensorsCheckpoint checkpoint;
  checkpoint.source_ = directory;
  checkpoint.indexPath_ = indexPath;
  std::set<std::string> shardNames;
  for (const auto& [tensor, shard] : *weightMap) shardNames.insert(shard);
  std::map<std::string, size_t> shardIndex;
  for (const std::string& shard : shardNames) {
    Expected<SafetensorsFile> file = SafetensorsFile::Open((dir / shard).string(), residence);
    if (!file.ok()) return file.error();
    shardIndex.emplace(shard, checkpoint.shards_.size());
    checkpoint.shards_.push_back(std::move(*file));
  }
  if (Status s = checkpoint.IndexTensors(); !s.ok()) return s.error();
  // Every entry of the weight_map must be in the shard it names.
  for (const auto& [tensor, shard] : *weightMap) {
    const auto where = checkpoint.where_.find(tensor);
    const size_t expected = shardIndex.at(shard);
    if (where == checkpoint.where_.end() || where->second.first != expected) {
      const std::string found = where == checkpoint.where_.end()
                                    ? std::string("that shard does not hold it")
                                    : fmt::format("it is in {}", checkpoint.shards_[where->second.first].name());
      return BadData(fmt::format("{}: tensor '{}' is mapped to {}, but {}", indexPath, Printable(tensor),
                                 Printable(shard), found));
    }
  }
  return checkpoint;
}

Status SafetensorsCheckpoint::IndexTensors() {
  for (size_t s = 0; s < shards_.size(); ++s) {
    const auto& tensors = shards_[s].tensors();
    for (size_t t = 0; t < tensors.size(); ++t) {
      const auto [it, inserted] = where_.emplace(tensors[t].name, std::make_pair(s, t));
      if (!inserted) {
        return BadData(fmt::format("{}: tensor '{}' is also in {}", shards_[s].name(), Printable(tensors[t].name),
                                   shards_[it->second.first].name()));
      }
    }
  }
  return Status::Ok();
}

SafetensorsCheckpoint::Located SafetensorsCheckpoint::Find(std::string_view name) const {
  const auto it = where_.find(name);
  if (it == where_.end()) return {};
  const SafetensorsFile& file = shards_[it->second.first];
  return {&file, &file.tensors()[it->second.second]};
}

std::vector<std::string> SafetensorsCheckpoint::TensorNames() const {
  std::vector<std::string> names;
  names.reserve(where_.size());
  for (const auto& [name, where] : where_) names.push_back(name);
  return names;
}

}  // namespace wb
