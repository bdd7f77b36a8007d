// safetensors files and Hugging Face checkpoints made of them.
//
// Layout (the safetensors repository's README.md "Format"; its safetensors/src/tensor.rs is
// the reference reader):
//   u64 N (little-endian) | N bytes of UTF-8 JSON | the byte buffer
// The JSON is an object: tensor name -> {"dtype", "shape", "data_offsets": [begin, end)} with
// offsets relative to the byte buffer (file offset 8+N), plus an optional "__metadata__"
// string->string map. Shapes are row-major, outermost first.
//
// Contract: SafetensorsFile::Parse accepts what the reference reader accepts:
//   - N at most the bytes after it and at most kSafetensorsMaxHeaderBytes (the reference
//     reader's 100 MB cap); the header begins with '{'; trailing spaces are allowed;
//   - JSON that parses (nlohmann-json; its exceptions are caught here and become errors), at
//     most kSafetensorsMaxJsonDepth deep, with no duplicate tensor names;
//   - each entry has a known dtype, a shape of non-negative integers and two offsets
//     begin <= end; end - begin == product(shape) * dtype size, computed without overflow;
//   - the tensors tile the byte buffer exactly: sorted by offset, the first begins at 0, each
//     next one begins where the previous ended (no holes, no overlaps) and the last ends at
//     the end of the file. This is the reference reader's `validate` rule: a file with a hole
//     or stray trailing bytes is as suspect as one with an overlap;
//   - "__metadata__" holds only strings.
// Tensors of every dtype are listed; only F32, F16 and BF16 map to a TensorType (weights).
// Errors are wb::BadData whose message starts with the file name and names the tensor or field.
//
// SafetensorsCheckpoint opens a directory: `model.safetensors.index.json` (whose "weight_map"
// maps each tensor name to a shard file in the same directory) and all its shards, or else a
// single `model.safetensors`. Every weight_map entry must be found in its shard; a tensor in
// two shards is an error. Spans point into the mappings, which the checkpoint owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "mapped_file.h"
#include "tensor_types.h"

namespace wb {

constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;  // MAX_HEADER_SIZE, safetensors/src/tensor.rs
constexpr int kSafetensorsMaxJsonDepth = 16;                   // a tensor entry needs 3; this is our bound

enum class SafetensorsDtype {
  kBool, kU8, kI8, kF8_E5M2, kF8_E4M3, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kF64, kI64, kU64,
};

std::string_view SafetensorsDtypeName(SafetensorsDtype dtype);  // as written in files: "BF16"
uint32_t SafetensorsDtypeBytes(SafetensorsDtype dtype);
// F32, F16, BF16 -> the TensorType of the same layout; anything else is not a weight type.
std::optional<TensorType> WeightTypeOf(SafetensorsDtype dtype);

struct SafetensorsTensorInfo {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<uint64_t> shape;       // row-major, outermost first
  uint64_t begin = 0, end = 0;       // data_offsets, relative to the byte buffer
  std::span<const std::byte> data;   // the tensor's bytes inside the file

  uint64_t ElementCount() const;
};

class SafetensorsFile {
 public:
  static Expected<SafetensorsFile> Open(const std::string& path, Residence residence = Residence::kMapped);
  // Parses bytes someone else owns (they must outlive the result); messages name displayName.
  static Expected<SafetensorsFile> Parse(std::span<const std::byte> bytes, std::string displayName);

  const std::string& name() const { return name_; }
  std::span<const std::byte> bytes() const { return bytes_; }
  uint64_t headerBytes() const { return headerBytes_; }  // N
  uint64_t bufferOffset() const { return 8 + headerBytes_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Sorted by data offset, i.e. in file order.
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  const SafetensorsTensorInfo* FindTensor(std::string_view name) const;

 private:
  friend class SafetensorsParser;
  SafetensorsFile() = default;

  std::optional<MappedFile> mapping_;
  std::string name_;
  std::span<const std::byte> bytes_;
  uint64_t headerBytes_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensorIndex_;
};

class SafetensorsCheckpoint {
 public:
  static constexpr const char* kSingleFileName = "model.safetensors";
  static constexpr const char* kIndexFileName = "model.safetensors.index.json";

  // `directory` holds model.safetensors.index.json and its shards, or model.safetensors.
  static Expected<SafetensorsCheckpoint> OpenDirectory(const std::string& directory,
                                                       Residence residence = Residence::kMapped);
  // One .safetensors file on its own.
  static Expected<SafetensorsCheckpoint> OpenFile(const std::string& path, Residence residence = Residence::kMapped);
  // Files already parsed (tests, the fuzzer); fails if two of them hold the same tensor.
  static Expected<SafetensorsCheckpoint> FromFiles(std::vector<SafetensorsFile> files, std::string source);
  // Parses the text of an index file (exposed for tests and the fuzzer): the weight_map as
  // tensor name -> shard file name. Shard names must be relative and must not contain "..".
  static Expected<std::map<std::string, std::string>> ParseIndex(std::string_view json,
                                                                  const std::string& displayName);

  const std::string& source() const { return source_; }   // the directory or file opened
  const std::string& indexPath() const { return indexPath_; }  // empty without an index
  const std::vector<SafetensorsFile>& shards() const { return shards_; }

  struct Located {
    const SafetensorsFile* file = nullptr;
    const SafetensorsTensorInfo* tensor = nullptr;
  };
  // The tensor and its shard, or nullptr fields if there is no such tensor.
  Located Find(std::string_view name) const;
  // Every tensor name, sorted.
  std::vector<std::string> TensorNames() const;

 private:
  SafetensorsCheckpoint() = default;
  Status IndexTensors();

  std::string source_;
  std::string indexPath_;
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, std::pair<size_t, size_t>, std::less<>> where_;  // name -> shard, tensor
};

}  // namespace wb
