// A GGUF file, parsed and checked, with its tensor data left in place.
//
// Layout (ggml's docs/gguf.md, ggml's src/gguf.cpp; all little-endian):
//   header        "GGUF", u32 version (2 or 3), u64 tensor_count, u64 kv_count
//   metadata      kv_count x { string key, u32 value type, value }
//   tensor infos  tensor_count x { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset }
//   padding       zeros up to a multiple of the alignment
//   data          the tensors, each at data start + offset
// A string is a u64 byte count and the bytes (no NUL). An array is a u32 element type, a u64
// count and the elements; arrays may hold arrays.
//
// Contract: Parse() accepts only a file that ggml's gguf_init_from_file would accept, restricted
// to the tensor types in tensor_types.h, and additionally checks that every tensor's bytes lie
// inside the file. In detail:
//   - version 2 or 3 (v1 had u32 counts and is rejected; a byte-swapped version is reported as a
//     big-endian file, which is not supported);
//   - keys and tensor names unique; a tensor name at most 63 bytes (ggml's GGML_MAX_NAME is 64
//     including the NUL, so ggml cannot load a longer name either);
//   - arrays nest at most kGgufMaxArrayDepth deep (ggml itself refuses nested arrays; the spec
//     allows them, so they are read, but a bound keeps a hostile file from exhausting the stack);
//   - `general.alignment`, when present, is a u32 and a nonzero power of two (gguf.cpp's rule;
//     the spec text says "a multiple of 8"); otherwise the alignment is 32;
//   - 1 to 4 dimensions (0 is also accepted, as ggml does: a scalar), each ne fits an int64 and
//     their product does too; ne[0] is a multiple of the type's block size;
//   - tensor offsets are exactly ggml's: the first is 0 and each next one is the previous offset
//     plus the previous tensor's size rounded up to the alignment. This implies every tensor is
//     aligned and no two overlap. The data section starts at the end of the tensor infos rounded
//     up to the alignment, and each tensor's last byte must be inside the file (trailing padding
//     after the last tensor is not required, as in llama.cpp's loader);
//   - every count and length is checked against the bytes that remain before anything is
//     allocated, so a hostile header fails at once instead of allocating gigabytes; counts of
//     keys, tensors and nested arrays also have fixed caps (kGgufMax* below).
// Every error is a wb::BadData (or what MappedFile::Open returned) whose message starts with the
// file's name and names the header field, key or tensor, e.g.
//   "model.gguf: tensor 'blk.0.attn_q.weight': data ends at byte 9000 but the file has 8000 bytes (truncated)".
//
// Strings and numeric arrays point into the file's bytes: a GgufFile from Open() owns its
// mapping; one from Parse() borrows `bytes`, which must outlive it. Nothing is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/expected.h"
#include "mapped_file.h"
#include "tensor_types.h"

namespace wb {

// Value type ids of GGUF metadata (`gguf_type` in ggml's include/gguf.h).
enum class GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64",
// "f64", or "type N" for an id outside 0-12.
std::string GgufValueTypeName(GgufValueType type);
// Bytes of one element of a fixed-size type; 0 for string and array.
uint32_t GgufValueTypeBytes(GgufValueType type);

constexpr uint32_t kGgufDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT, ggml's include/gguf.h
constexpr uint32_t kGgufMaxArrayDepth = 8;      // arrays inside arrays inside ... (our bound)
// Our bounds on what a file may declare, far above any real model (a few dozen keys, a few
// thousand tensors, no nested arrays), so that parsed structures stay within a small multiple
// of the file's size: an in-memory entry is larger than its smallest encoding.
constexpr uint64_t kGgufMaxKeys = uint64_t{1} << 20;
constexpr uint64_t kGgufMaxTensors = uint64_t{1} << 20;
constexpr uint64_t kGgufMaxNestedArrays = uint64_t{1} << 20;  // arrays inside arrays, whole file
constexpr uint64_t kGgufMaxNameBytes = 63;      // GGML_MAX_NAME (64) minus the NUL
constexpr uint32_t kGgufMaxDims = 4;            // GGML_MAX_DIMS

// One scalar: unsigned ids hold uint64_t, signed ones int64_t, f32/f64 double (f32 widened
// exactly), bool bool, string a view into the file.
using GgufScalar = std::variant<uint64_t, int64_t, double, bool, std::string_view>;

// An array: elementType and count, and the elements in one of three forms.
struct GgufArray {
  GgufValueType elementType = GgufValueType::kU8;
  uint64_t count = 0;
  std::span<const std::byte> raw;         // numeric and bool elements, as stored (little-endian)
  std::vector<std::string_view> strings;  // string elements
  std::vector<GgufArray> arrays;          // array elements (nested arrays)

  // Element i of a numeric, bool or string array (i < count; not for nested arrays).
  GgufScalar Scalar(uint64_t i) const;
};

struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  GgufScalar scalar;  // unless type is kArray
  GgufArray array;    // when type is kArray
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
  uint64_t fileOffset = 0;  // where the key's entry starts, for messages and dumps
};

struct GgufTensorInfo {
  std::string name;
  TensorType type = TensorType::kF32;
  std::vector<uint64_t> ne;          // ggml order: ne[0] varies fastest; n_dims entries
  uint64_t offset = 0;               // relative to the data section
  uint64_t byteSize = 0;             // without padding
  std::span<const std::byte> data;   // the tensor's bytes inside the file

  uint64_t ElementCount() const;
};

class GgufFile {
 public:
  // Maps `path` and parses it; messages name the path as given.
  static Expected<GgufFile> Open(const std::string& path, Residence residence = Residence::kMapped);
  // Parses bytes someone else owns; messages name `displayName`.
  static Expected<GgufFile> Parse(std::span<const std::byte> bytes, std::string displayName);

  const std::string& name() const { return name_; }
  std::span<const std::byte> bytes() const { return bytes_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t dataOffset() const { return dataOffset_; }  // absolute file offset of the data section

  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  const GgufValue* FindValue(std::string_view key) const;
  bool HasKey(std::string_view key) const { return FindValue(key) != nullptr; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;

  // Typed getters. A missing key is "model.gguf: key 'k' is missing"; a key of another type is
  // "model.gguf: key 'k' is a string, expected u32". Conversions accepted (and nothing else):
  //   GetU32  u8, u16, u32; also i8, i16, i32, u64, i64 when the value fits in u32. llama.cpp's
  //           loader insists on exactly u32 (GKV::get_kv in llama.cpp's
  //           src/llama-model-loader.cpp); we are lenient because hand-written and older files use i32 and u64 for counts.
  //   GetU64  any integer type whose value is non-negative.
  //   GetI64  any integer type whose value fits in i64.
  //   GetF32  f32; also f64 (rounded to nearest f32). Integers are rejected: a float key written
  //           as an integer is a converter bug worth seeing.
  //   GetBool bool only.  GetString string only.
  // Array getters take an array of the same element types, element by element, with the
  // same conversions; nested arrays are rejected.
  Expected<uint32_t> GetU32(std::string_view key) const;
  Expected<uint64_t> GetU64(std::string_view key) const;
  Expected<int64_t> GetI64(std::string_view key) const;
  Expected<float> GetF32(std::string_view key) const;
  Expected<bool> GetBool(std::string_view key) const;
  Expected<std::string> GetString(std::string_view key) const;
  Expected<std::vector<uint32_t>> GetU32Array(std::string_view key) const;
  Expected<std::vector<int64_t>> GetI64Array(std::string_view key) const;
  Expected<std::vector<float>> GetF32Array(std::string_view key) const;
  Expected<std::vector<std::string>> GetStringArray(std::string_view key) const;

  // The same, but a missing key gives `fallback` (a key of the wrong type is still an error).
  Expected<uint32_t> GetU32Or(std::string_view key, uint32_t fallback) const;
  Expected<float> GetF32Or(std::string_view key, float fallback) const;
  Expected<bool> GetBoolOr(std::string_view key, bool fallback) const;
  Expected<std::string> GetStringOr(std::string_view key, std::string fallback) const;

 private:
  friend class GgufParser;
  GgufFile() = default;

  std::optional<MappedFile> mapping_;
  std::string name_;
  std::span<const std::byte> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t dataOffset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> keyIndex_;
  std::map<std::string, size_t, std::less<>> tensorIndex_;
};

}  // namespace wb
