// The GGUF parser: header, metadata, tensor infos, layout checks; see gguf.h for the rules.
// Facts from ggml's docs/gguf.md and src/gguf.cpp (`gguf_init_from_reader`); the code is ours.
#include "gguf.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "byte_cursor.h"
#include "printable.h"

namespace wb {

namespace {

constexpr uint64_t kHeaderBytes = 24;  // magic, version, tensor_count, kv_count
// The smallest possible entries, used to bound counts by the bytes that remain.
constexpr uint64_t kMinKeyValueBytes = 8 + 1 + 4 + 1;       // key length, 1-byte key, type, u8
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;     // name length, n_dims, type, offset
constexpr uint64_t kArrayHeaderBytes = 4 + 8;               // element type, count
constexpr uint64_t kStringHeaderBytes = 8;                  // length

bool IsKnownValueType(uint32_t id) { return id <= static_cast<uint32_t>(GgufValueType::kF64); }

// Rounds up to a multiple of a power-of-two alignment; false on overflow.
bool AlignUp(uint64_t value, uint64_t alignment, uint64_t& out) {
  const uint64_t remainder = value % alignment;
  if (remainder == 0) {
    out = value;
    return true;
  }
  const uint64_t padding = alignment - remainder;
  if (value > std::numeric_limits<uint64_t>::max() - padding) return false;
  out = value + padding;
  return true;
}

std::string NeText(const std::vector<uint64_t>& ne) {
  std::string text = "[";
  for (size_t i = 0; i < ne.size(); ++i) text += fmt::format("{}{}", i ? ", " : "", ne[i]);
  return text + "]";
}

}  // namespace

// Parses one file. Each Read* method returns an error naming the file and `what` it was
// reading; `what` is built by the caller ("header field 'version'", "key 'general.name'").
class GgufParser {
 public:
  GgufParser(std::span<const std::byte> bytes, std::string name) : cursor_(bytes) {
    file_.name_ = std::move(name);
    file_.bytes_ = bytes;
  }

  Expected<GgufFile> Run() {
    uint64_t tensorCount = 0, keyCount = 0;
    if (Status s = ReadHeader(tensorCount, keyCount); !s.ok()) return s.error();
    if (Status s = ReadMetadata(keyCount); !s.ok()) return s.error();
    if (Status s = ReadAlignment(); !s.ok()) return s.error();
    if (Status s = ReadTensorInfos(tensorCount); !s.ok()) return s.error();
    if (Status s = PlaceTensorData(); !s.ok()) return s.error();
    return std::move(file_);
  }

 private:
  Error Fail(std::string_view what, std::string_view problem) const {
    return BadData(fmt::format("{}: {}: {}", file_.name_, what, problem));
  }
  // A read of `bytes` bytes at the cursor would run past the end of the file.
  Error Short(std::string_view what, uint64_t bytes) const {
    return Fail(what, fmt::format("needs {} bytes at byte {}, but the file ends at byte {} (truncated)", bytes,
                                  cursor_.offset(), cursor_.size()));
  }

  template <typename T>
  Status ReadField(std::string_view what, T& out) {
    if (!cursor_.Read(out)) return Short(what, sizeof(T));
    return Status::Ok();
  }

  Status ReadString(std::string_view what, std::string_view& out) {
    uint64_t length = 0;
    if (Status s = ReadField(fmt::format("{} (string length)", what), length); !s.ok()) return s;
    std::span<const std::byte> bytes;
    if (!cursor_.Take(length, bytes)) {
      return Fail(what, fmt::format("a string of {} bytes at byte {} runs past the end of the file ({} bytes; "
                                    "truncated or corrupted)",
                                    length, cursor_.offset(), cursor_.size()));
    }
    out = std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return Status::Ok();
  }

  Status ReadHeader(uint64_t& tensorCount, uint64_t& keyCount) {
    std::span<const std::byte> magic;
    if (!cursor_.Take(4, magic)) {
      return Fail("header field 'magic'",
                  fmt::format("the file has {} bytes, too few for a GGUF header ({} bytes)", cursor_.size(),
                              kHeaderBytes));
    }
    const std::string_view magicText(reinterpret_cast<const char*>(magic.data()), 4);
    if (magicText != "GGUF") {
      return Fail("header field 'magic'",
                  fmt::format("expected \"GGUF\" (47 47 55 46), found {:02x} {:02x} {:02x} {:02x}: not a GGUF file",
                              static_cast<unsigned>(magic[0]), static_cast<unsigned>(magic[1]),
                              static_cast<unsigned>(magic[2]), static_cast<unsigned>(magic[3])));
    }
    uint32_t version = 0;
    if (Status s = ReadField("header field 'version'", version); !s.ok()) return s;
    if (version == 0) return Fail("header field 'version'", "0 is not a GGUF version");
    if ((version & 0xFFFFu) == 0) {
      return Fail("header field 'version'",
                  fmt::format("{:#010x} looks byte-swapped: a big-endian GGUF, which the workbook does not read",
                              version));
    }
    if (version == 1) {
      return Fail("header field 'version'",
                  "GGUF version 1 (32-bit counts) is not supported; convert the model again with a current llama.cpp");
    }
    if (version > 3) {
      return Fail("header field 'version'",
                  fmt::format("version {} is newer than the workbook reads (2 and 3)", version));
    }
    file_.version_ = version;
    if (Status s = ReadField("header field 'tensor_count'", tensorCount); !s.ok()) return s;
    if (Status s = ReadField("header field 'kv_count'", keyCount); !s.ok()) return s;
    // Bound both counts by the bytes left, so a hostile header fails before any allocation.
    if (tensorCount > kGgufMaxTensors) {
      return Fail("header field 'tensor_count'",
                  fmt::format("{} tensors is more than the workbook accepts ({})", tensorCount, kGgufMaxTensors));
    }
    if (keyCount > kGgufMaxKeys) {
      return Fail("header field 'kv_count'",
                  fmt::format("{} metadata entries is more than the workbook accepts ({})", keyCount, kGgufMaxKeys));
    }
    if (tensorCount > cursor_.remaining() / kMinTensorInfoBytes) {
      return Fail("header field 'tensor_count'",
                  fmt::format("{} tensors cannot fit in the {} bytes after the header (a tensor info takes at "
                              "least {} bytes)",
                              tensorCount, cursor_.remaining(), kMinTensorInfoBytes));
    }
    if (keyCount > cursor_.remaining() / kMinKeyValueBytes) {
      return Fail("header field 'kv_count'",
                  fmt::format("{} metadata entries cannot fit in the {} bytes after the header (an entry takes "
                              "at least {} bytes)",
                              keyCount, cursor_.remaining(), kMinKeyValueBytes));
    }
    return Status::Ok();
  }

  Status ReadMetadata(uint64_t keyCount) {
    file_.metadata_.reserve(static_cast<size_t>(keyCount));
    for (uint64_t i = 0; i < keyCount; ++i) {
      GgufKeyValue entry;
      entry.fileOffset = cursor_.offset();
      std::string_view key;
      if (Status s = ReadString(fmt::format("key #{} name", i), key); !s.ok()) return s;
      if (key.empty()) return Fail(fmt::format("key #{}", i), "the name is empty");
      entry.key = std::string(key);
      const std::string what = fmt::format("key '{}'", Printable(key));
      if (const auto it = file_.keyIndex_.find(key); it != file_.keyIndex_.end()) {
        return Fail(what, fmt::format("appears twice (entries #{} and #{})", it->second, i));
      }
      uint32_t typeId = 0;
      if (Status s = ReadField(what + " (value type)", typeId); !s.ok()) return s;
      if (!IsKnownValueType(typeId)) {
        return Fail(what, fmt::format("value type {} is not a GGUF type (0 to 12)", typeId));
      }
      entry.value.type = static_cast<GgufValueType>(typeId);
      if (entry.value.type == GgufValueType::kArray) {
        if (Status s = ReadArray(what, 1, entry.value.array); !s.ok()) return s;
      } else {
        if (Status s = ReadScalar(what, entry.value.type, entry.value.scalar); !s.ok()) return s;
      }
      file_.keyIndex_.emplace(entry.key, file_.metadata_.size());
      file_.metadata_.push_back(std::move(entry));
    }
    return Status::Ok();
  }

  Status ReadScalar(const std::string& what, GgufValueType type, GgufScalar& out) {
    const std::string field = fmt::format("{} ({} value)", what, GgufValueTypeName(type));
    switch (type) {
      case GgufValueType::kU8: return ReadAs<uint8_t, uint64_t>(field, out);
      case GgufValueType::kI8: return ReadAs<int8_t, int64_t>(field, out);
      case GgufValueType::kU16: return ReadAs<uint16_t, uint64_t>(field, out);
      case GgufValueType::kI16: return ReadAs<int16_t, int64_t>(field, out);
      case GgufValueType::kU32: return ReadAs<uint32_t, uint64_t>(field, out);
      case GgufValueType::kI32: return ReadAs<int32_t, int64_t>(field, out);
      case GgufValueType::kU64: return ReadAs<uint64_t, uint64_t>(field, out);
      case GgufValueType::kI64: return ReadAs<int64_t, int64_t>(field, out);
      case GgufValueType::kF32: return ReadAs<float, double>(field, out);
      case GgufValueType::kF64: return ReadAs<double, double>(field, out);
      case GgufValueType::kBool: {
        uint8_t byte = 0;
        if (Status s = ReadField(field, byte); !s.ok()) return s;
        if (byte > 1) return Fail(what, fmt::format("bool byte at {} is {}, expected 0 or 1", cursor_.offset() - 1, byte));
        out = byte == 1;
        return Status::Ok();
      }
      case GgufValueType::kString: {
        std::string_view text;
        if (Status s = ReadString(what, text); !s.ok()) return s;
        out = text;
        return Status::Ok();
      }
      case GgufValueType::kArray: break;
    }
    return InternalError(fmt::format("{}: {}: ReadScalar called for an array", file_.name_, what));
  }

  template <typename Stored, typename Held>
  Status ReadAs(const std::string& field, GgufScalar& out) {
    Stored value{};
    if (Status s = ReadField(field, value); !s.ok()) return s;
    out = static_cast<Held>(value);
    return Status::Ok();
  }

  Status ReadArray(const std::string& what, uint32_t depth, GgufArray& out) {
    if (depth > kGgufMaxArrayDepth) {
      return Fail(what, fmt::format("arrays nest more than {} deep", kGgufMaxArrayDepth));
    }
    uint32_t elementTypeId = 0;
    if (Status s = ReadField(what + " (array element type)", elementTypeId); !s.ok()) return s;
    if (!IsKnownValueType(elementTypeId)) {
      return Fail(what, fmt::format("array element type {} is not a GGUF type (0 to 12)", elementTypeId));
    }
    out.elementType = static_cast<GgufValueType>(elementTypeId);
    if (Status s = ReadField(what + " (array count)", out.count); !s.ok()) return s;
    const std::string elementName = GgufValueTypeName(out.elementType);
    const uint32_t elementBytes = GgufValueTypeBytes(out.elementType);
    if (elementBytes != 0) {
      if (out.count > cursor_.remaining() / elementBytes) {
        return Fail(what, fmt::format("an array of {} {} values needs more than the {} bytes left at byte {} "
                                      "(truncated or corrupted)",
                                      out.count, elementName, cursor_.remaining(), cursor_.offset()));
      }
      const uint64_t start = cursor_.offset();
      cursor_.Take(out.count * elementBytes, out.raw);
      if (out.elementType == GgufValueType::kBool) {
        for (uint64_t i = 0; i < out.count; ++i) {
          const auto byte = static_cast<uint8_t>(out.raw[static_cast<size_t>(i)]);
          if (byte > 1) {
            return Fail(what, fmt::format("bool element {} (byte {}) is {}, expected 0 or 1", i, start + i, byte));
          }
        }
      }
      return Status::Ok();
    }
    const uint64_t minimumBytes = out.elementType == GgufValueType::kString ? kStringHeaderBytes : kArrayHeaderBytes;
    if (out.count > cursor_.remaining() / minimumBytes) {
      return Fail(what, fmt::format("an array of {} {} values cannot fit in the {} bytes left at byte {} "
                                    "(truncated or corrupted)",
                                    out.count, elementName, cursor_.remaining(), cursor_.offset()));
    }
    if (out.elementType == GgufValueType::kString) {
      out.strings.reserve(static_cast<size_t>(out.count));
      for (uint64_t i = 0; i < out.count; ++i) {
        std::string_view text;
        if (Status s = ReadString(fmt::format("{} element {}", what, i), text); !s.ok()) return s;
        out.strings.push_back(text);
      }
      return Status::Ok();
    }
    nestedArrays_ += out.count;  // cannot overflow: each count is below the file size
    if (nestedArrays_ > kGgufMaxNestedArrays) {
      return Fail(what, fmt::format("the file nests more than {} arrays inside arrays", kGgufMaxNestedArrays));
    }
    out.arrays.resize(static_cast<size_t>(out.count));
    for (uint64_t i = 0; i < out.count; ++i) {
      if (Status s = ReadArray(fmt::format("{} element {}", what, i), depth + 1, out.arrays[static_cast<size_t>(i)]);
          !s.ok()) {
        return s;
      }
    }
    return Status::Ok();
  }

  // `general.alignment`: optional, u32, a nonzero power of two (gguf.cpp).
  Status ReadAlignment() {
    const GgufValue* value = file_.FindValue("general.alignment");
    if (value == nullptr) return Status::Ok();
    if (value->type != GgufValueType::kU32) {
      return Fail("key 'general.alignment'",
                  fmt::format("is a {}, expected u32", GgufValueTypeName(value->type)));
    }
    const uint64_t alignment = std::get<uint64_t>(value->scalar);
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      return Fail("key 'general.alignment'", fmt::format("{} is not a power of two", alignment));
    }
    file_.alignment_ = static_cast<uint32_t>(alignment);
    return Status::Ok();
  }

  Status ReadTensorInfos(uint64_t tensorCount) {
    file_.tensors_.reserve(static_cast<size_t>(tensorCount));
    for (uint64_t i = 0; i < tensorCount; ++i) {
      GgufTensorInfo info;
      std::string_view name;
      if (Status s = ReadString(fmt::format("tensor #{} name", i), name); !s.ok()) return s;
      if (name.size() > kGgufMaxNameBytes) {
        return Fail(fmt::format("tensor #{} '{}'", i, Printable(name)),
                    fmt::format("the name is {} bytes; ggml allows at most {}", name.size(), kGgufMaxNameBytes));
      }
      info.name = std::string(name);
      const std::string what = fmt::format("tensor '{}'", Printable(name));
      if (const auto it = file_.tensorIndex_.find(name); it != file_.tensorIndex_.end()) {
        return Fail(what, fmt::format("appears twice (tensors #{} and #{})", it->second, i));
      }
      uint32_t dims = 0;
      if (Status s = ReadField(what + " field 'n_dims'", dims); !s.ok()) return s;
      if (dims > kGgufMaxDims) {
        return Fail(what, fmt::format("field 'n_dims' is {}; ggml allows at most {}", dims, kGgufMaxDims));
      }
      info.ne.resize(dims);
      for (uint32_t d = 0; d < dims; ++d) {
        if (Status s = ReadField(fmt::format("{} field 'ne[{}]'", what, d), info.ne[d]); !s.ok()) return s;
        if (info.ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return Fail(what, fmt::format("field 'ne[{}]' is {}, negative as ggml's int64", d, info.ne[d]));
        }
      }
      if (Status s = CheckElementCount(what, info.ne); !s.ok()) return s;
      uint32_t typeId = 0;
      if (Status s = ReadField(what + " field 'type'", typeId); !s.ok()) return s;
      const Expected<TensorType> type = LookupTensorType(typeId);
      if (!type.ok()) return Fail(what, fmt::format("field 'type': {}", type.error().message));
      info.type = *type;
      if (Status s = ComputeByteSize(what, info); !s.ok()) return s;
      if (Status s = ReadField(what + " field 'offset'", info.offset); !s.ok()) return s;
      file_.tensorIndex_.emplace(info.name, file_.tensors_.size());
      file_.tensors_.push_back(std::move(info));
    }
    return Status::Ok();
  }

  // The element count must fit in an int64, like ggml's `ggml_nelements`. As in gguf.cpp, a
  // tensor with a zero dimension has no elements and passes whatever its other dimensions.
  Status CheckElementCount(const std::string& what, const std::vector<uint64_t>& ne) {
    if (std::find(ne.begin(), ne.end(), uint64_t{0}) != ne.end()) return Status::Ok();
    uint64_t count = 1;
    for (uint64_t n : ne) {
      if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n) {
        return Fail(what, fmt::format("ne {} has more than 2^63-1 elements", NeText(ne)));
      }
      count *= n;
    }
    return Status::Ok();
  }

  Status ComputeByteSize(const std::string& what, GgufTensorInfo& info) {
    const uint64_t rowLength = info.ne.empty() ? 1 : info.ne[0];
    if (rowLength % BlockElements(info.type) != 0) {
      return Fail(what, fmt::format("field 'ne[0]' is {}, not a multiple of the {} block size {}", rowLength,
                                    TensorTypeName(info.type), BlockElements(info.type)));
    }
    const Expected<uint64_t> rowBytes = RowBytes(info.type, rowLength);
    if (!rowBytes.ok()) return Fail(what, rowBytes.error().message);
    uint64_t rows = 1;
    // No overflow: the element count fits, or some dimension is 0 and so is the product (or the row).
    for (size_t d = 1; d < info.ne.size(); ++d) rows *= info.ne[d];
    if (rows != 0 && *rowBytes > std::numeric_limits<uint64_t>::max() / rows) {
      return Fail(what, fmt::format("ne {} of type {} needs more than 2^64 bytes", NeText(info.ne),
                                    TensorTypeName(info.type)));
    }
    info.byteSize = *rowBytes * rows;
    return Status::Ok();
  }

  // The data section follows the tensor infos, padded to the alignment (only when there are
  // tensors, as in gguf.cpp). Offsets must be ggml's running sum of padded sizes, and each
  // tensor must end inside the file.
  Status PlaceTensorData() {
    const uint64_t alignment = file_.alignment_;
    uint64_t dataOffset = cursor_.offset();
    if (!file_.tensors_.empty()) {
      if (!AlignUp(cursor_.offset(), alignment, dataOffset) || dataOffset > cursor_.size()) {
        return Fail("data section",
                    fmt::format("starts at byte {} (the end of the tensor infos, {}, padded to {}), but the file has "
                                "{} bytes (truncated)",
                                dataOffset, cursor_.offset(), alignment, cursor_.size()));
      }
    }
    file_.dataOffset_ = dataOffset;
    uint64_t expectedOffset = 0;
    for (GgufTensorInfo& info : file_.tensors_) {
      const std::string what = fmt::format("tensor '{}'", Printable(info.name));
      if (info.offset != expectedOffset) {
        return Fail(what, fmt::format("field 'offset' is {}, expected {}: ggml places each tensor right after the "
                                      "previous one, padded to the alignment ({})",
                                      info.offset, expectedOffset, alignment));
      }
      const uint64_t fileSize = cursor_.size();
      // dataOffset <= fileSize; check the sum without overflowing.
      if (info.offset > fileSize - dataOffset || info.byteSize > fileSize - dataOffset - info.offset) {
        constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
        const bool overflows = info.offset > kMax - dataOffset || info.byteSize > kMax - dataOffset - info.offset;
        const std::string endText =
            overflows ? std::string("beyond byte 2^64") : fmt::format("at byte {}", dataOffset + info.offset + info.byteSize);
        return Fail(what, fmt::format("data ends {} but the file has {} bytes (truncated)", endText, fileSize));
      }
      info.data = file_.bytes_.subspan(static_cast<size_t>(dataOffset + info.offset), static_cast<size_t>(info.byteSize));
      uint64_t padded = 0;
      if (!AlignUp(info.byteSize, alignment, padded) ||
          expectedOffset > std::numeric_limits<uint64_t>::max() - padded) {
        return Fail(what, "the running data size overflows 64 bits");
      }
      expectedOffset += padded;
    }
    return Status::Ok();
  }

  ByteCursor cursor_;
  GgufFile file_;
  uint64_t nestedArrays_ = 0;  // arrays read as elements of arrays, in the whole file
};

// --- GgufFile -------------------------------------------------------------------------------

Expected<GgufFile> GgufFile::Parse(std::span<const std::byte> bytes, std::string displayName) {
  return GgufParser(bytes, std::move(displayName)).Run();
}

Expected<GgufFile> GgufFile::Open(const std::string& path, Residence residence) {
  Expected<MappedFile> mapping = MappedFile::Open(path, residence);
  if (!mapping.ok()) return mapping.error();
  Expected<GgufFile> file = Parse(mapping->bytes(), path);
  if (!file.ok()) return file.error();
  file->mapping_ = std::move(*mapping);  // the mapping stays at the same address
  return file;
}

const GgufValue* GgufFile::FindValue(std::string_view key) const {
  const auto it = keyIndex_.find(key);
  return it == keyIndex_.end() ? nullptr : &metadata_[it->second].value;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  const auto it = tensorIndex_.find(name);
  return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

uint64_t GgufTensorInfo::ElementCount() const {
  uint64_t count = 1;
  for (uint64_t n : ne) count *= n;  // checked at parse time to fit in an int64
  return count;
}

std::string GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8: return "u8";
    case GgufValueType::kI8: return "i8";
    case GgufValueType::kU16: return "u16";
    case GgufValueType::kI16: return "i16";
    case GgufValueType::kU32: return "u32";
    case GgufValueType::kI32: return "i32";
    case GgufValueType::kF32: return "f32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kU64: return "u64";
    case GgufValueType::kI64: return "i64";
    case GgufValueType::kF64: return "f64";
  }
  return fmt::format("type {}", static_cast<uint32_t>(type));
}

uint32_t GgufValueTypeBytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16: return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32: return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64: return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray: return 0;
  }
  return 0;
}

GgufScalar GgufArray::Scalar(uint64_t i) const {
  const std::byte* p = raw.data() + i * GgufValueTypeBytes(elementType);
  switch (elementType) {
    case GgufValueType::kU8: return static_cast<uint64_t>(LoadLE<uint8_t>(p));
    case GgufValueType::kI8: return static_cast<int64_t>(LoadLE<int8_t>(p));
    case GgufValueType::kU16: return static_cast<uint64_t>(LoadLE<uint16_t>(p));
    case GgufValueType::kI16: return static_cast<int64_t>(LoadLE<int16_t>(p));
    case GgufValueType::kU32: return static_cast<uint64_t>(LoadLE<uint32_t>(p));
    case GgufValueType::kI32: return static_cast<int64_t>(LoadLE<int32_t>(p));
    case GgufValueType::kU64: return LoadLE<uint64_t>(p);
    case GgufValueType::kI64: return LoadLE<int64_t>(p);
    case GgufValueType::kF32: return static_cast<double>(LoadLE<float>(p));
    case GgufValueType::kF64: return LoadLE<double>(p);
    case GgufValueType::kBool: return LoadLE<uint8_t>(p) != 0;
    case GgufValueType::kString: return strings[static_cast<size_t>(i)];
    case GgufValueType::kArray: break;
  }
  return uint64_t{0};  // nested arrays have no scalar form; callers check elementType first
}

}  // namespace wb
