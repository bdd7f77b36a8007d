// The safetensors parser: header length, JSON header, entries, tiling; see safetensors.h.
// Facts from the safetensors repository: README.md and its reference reader
// safetensors/src/tensor.rs (`read_metadata`, `Metadata::validate`); the code is ours. nlohmann-json exceptions never leave this file.
#include "safetensors.h"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "byte_cursor.h"
#include "printable.h"

namespace wb {

namespace {

using Json = nlohmann::json;

struct DtypeInfo {
  SafetensorsDtype dtype;
  std::string_view name;
  uint32_t bytes;
};

// The dtypes of safetensors' safetensors/src/tensor.rs `Dtype` with whole-byte elements.
constexpr DtypeInfo kDtypes[] = {
    {SafetensorsDtype::kBool, "BOOL", 1},         {SafetensorsDtype::kU8, "U8", 1},
    {SafetensorsDtype::kI8, "I8", 1},             {SafetensorsDtype::kF8_E5M2, "F8_E5M2", 1},
    {SafetensorsDtype::kF8_E4M3, "F8_E4M3", 1},   {SafetensorsDtype::kI16, "I16", 2},
    {SafetensorsDtype::kU16, "U16", 2},           {SafetensorsDtype::kF16, "F16", 2},
    {SafetensorsDtype::kBF16, "BF16", 2},         {SafetensorsDtype::kI32, "I32", 4},
    {SafetensorsDtype::kU32, "U32", 4},           {SafetensorsDtype::kF32, "F32", 4},
    {SafetensorsDtype::kF64, "F64", 8},           {SafetensorsDtype::kI64, "I64", 8},
    {SafetensorsDtype::kU64, "U64", 8},
};

const DtypeInfo* FindDtype(std::string_view name) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const DtypeInfo& InfoOf(SafetensorsDtype dtype) {
  for (const DtypeInfo& info : kDtypes) {
    if (info.dtype == dtype) return info;
  }
  return kDtypes[0];  // unreachable: every enumerator is in the table
}

// A JSON number that is a non-negative integer, as u64.
bool AsUnsigned(const Json& value, uint64_t& out) {
  if (value.is_number_unsigned()) {
    out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(value.get<int64_t>());
    return true;
  }
  return false;
}

// Parses JSON text, turning nlohmann's exceptions into an error message (empty on success).
// Also rejects nesting deeper than maxDepth and, when topLevelKeys is given, records a key
// that appears twice in the top-level object (nlohmann would silently keep the last one).
std::string ParseJson(std::string_view text, int maxDepth, Json& out, std::string* duplicateKey) {
  bool tooDeep = false;
  std::set<std::string> keys;
  const auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) {
      if (depth >= maxDepth) {
        tooDeep = true;
        return false;  // discard: keeps the document shallow
      }
    }
    if (duplicateKey != nullptr && event == Json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      if (!keys.insert(parsed.get<std::string>()).second && duplicateKey->empty()) {
        *duplicateKey = parsed.get<std::string>();
      }
    }
    return true;
  };
  try {
    out = Json::parse(text.begin(), text.end(), callback);
  } catch (const Json::exception& e) {
    return fmt::format("invalid JSON: {}", e.what());
  } catch (const std::exception& e) {  // bad_alloc and the like, from nlohmann's allocations
    return fmt::format("cannot parse the JSON: {}", e.what());
  }
  if (tooDeep) return fmt::format("JSON nested more than {} levels deep", maxDepth);
  return "";
}

}  // namespace

// --- SafetensorsFile ------------------------------------------------------------------------

class SafetensorsParser {
 public:
  SafetensorsParser(std::span<const std::byte> bytes, std::string name) {
    file_.name_ = std::move(name);
    file_.bytes_ = bytes;
  }

  Expected<SafetensorsFile> Run() {
    if (Status s = ReadHeader(); !s.ok()) return s.error();
    return std::move(file_);
  }

 private:
  Error Fail(std::string_view what, std::string_view problem) const {
    return BadData(fmt::format("{}: {}: {}", file_.name_, what, problem));
  }

  Status ReadHeader() {
    ByteCursor cursor(file_.bytes_);
    uint64_t headerBytes = 0;
    if (!cursor.Read(headerBytes)) {
      return Fail("header field 'N' (header length)",
                  fmt::format("needs 8 bytes, but the file has {} (truncated)", cursor.size()));
    }
    if (headerBytes > cursor.remaining()) {
      return Fail("header field 'N' (header length)",
                  fmt::format("{} is larger than the {} bytes after it (truncated, or not a safetensors file)",
                              headerBytes, cursor.remaining()));
    }
    if (headerBytes > kSafetensorsMaxHeaderBytes) {
      return Fail("header field 'N' (header length)",
                  fmt::format("{} exceeds the {}-byte limit of the reference reader", headerBytes,
                              kSafetensorsMaxHeaderBytes));
    }
    file_.headerBytes_ = headerBytes;
    std::span<const std::byte> headerSpan;
    cursor.Take(headerBytes, headerSpan);
    const std::string_view header(reinterpret_cast<const char*>(headerSpan.data()), headerSpan.size());
    if (header.empty() || header.front() != '{') return Fail("header", "the JSON does not begin with '{'");
    Json root;
    std::string duplicate;
    if (std::string problem = ParseJson(header, kSafetensorsMaxJsonDepth, root, &duplicate); !problem.empty()) {
      return Fail("header", problem);
    }
    if (!root.is_object()) return Fail("header", "the JSON is not an object");
    if (!duplicate.empty()) return Fail(fmt::format("tensor '{}'", Printable(duplicate)), "appears twice in the header");
    for (const auto& [key, value] : root.items()) {
      if (key == "__metadata__") {
        if (Status s = ReadMetadata(value); !s.ok()) return s;
        continue;
      }
      if (Status s = ReadEntry(key, value); !s.ok()) return s;
    }
    return CheckTiling();
  }

  Status ReadMetadata(const Json& value) {
    if (!value.is_object()) return Fail("header field '__metadata__'", "is not an object of strings");
    for (const auto& [key, text] : value.items()) {
      if (!text.is_string()) {
        return Fail(fmt::format("header field '__metadata__' entry '{}'", Printable(key)),
                    fmt::format("is a {}, expected a string", text.type_name()));
      }
      file_.metadata_.emplace(key, text.get<std::string>());
    }
    return Status::Ok();
  }

  Status ReadEntry(const std::string& name, const Json& entry) {
    const std::string what = fmt::format("tensor '{}'", Printable(name));
    if (!entry.is_object()) return Fail(what, fmt::format("the entry is a {}, expected an object", entry.type_name()));
    SafetensorsTensorInfo info;
    info.name = name;
    // dtype
    const auto dtype = entry.find("dtype");
    if (dtype == entry.end()) return Fail(what, "field 'dtype' is missing");
    if (!dtype->is_string()) return Fail(what, "field 'dtype' is not a string");
    const DtypeInfo* dtypeInfo = FindDtype(dtype->get<std::string>());
    if (dtypeInfo == nullptr) {
      return Fail(what, fmt::format("field 'dtype': \"{}\" is not a safetensors dtype the workbook knows",
                                    Printable(dtype->get<std::string>(), 40)));
    }
    info.dtype = dtypeInfo->dtype;
    // shape
    const auto shape = entry.find("shape");
    if (shape == entry.end()) return Fail(what, "field 'shape' is missing");
    if (!shape->is_array()) return Fail(what, "field 'shape' is not an array");
    // The element count; an overflow matters only when no dimension is 0.
    uint64_t elements = 1;
    bool overflow = false, empty = false;
    for (size_t d = 0; d < shape->size(); ++d) {
      uint64_t n = 0;
      if (!AsUnsigned((*shape)[d], n)) {
        return Fail(what, fmt::format("field 'shape' element {} is not a non-negative integer", d));
      }
      info.shape.push_back(n);
      if (n == 0) empty = true;
      if (n != 0 && elements > std::numeric_limits<uint64_t>::max() / n) overflow = true;
      elements *= n;
    }
    if (empty) elements = 0;
    if (overflow && !empty) {
      return Fail(what, fmt::format("field 'shape' {} has more than 2^64 elements", ShapeText(info.shape)));
    }
    // data_offsets
    const auto offsets = entry.find("data_offsets");
    if (offsets == entry.end()) return Fail(what, "field 'data_offsets' is missing");
    if (!offsets->is_array() || offsets->size() != 2 || !AsUnsigned((*offsets)[0], info.begin) ||
        !AsUnsigned((*offsets)[1], info.end)) {
      return Fail(what, "field 'data_offsets' is not two non-negative integers [begin, end]");
    }
    if (info.end < info.begin) {
      return Fail(what, fmt::format("field 'data_offsets' [{}, {}) ends before it begins", info.begin, info.end));
    }
    if (elements > std::numeric_limits<uint64_t>::max() / dtypeInfo->bytes) {
      return Fail(what, fmt::format("field 'shape' {} of {} needs more than 2^64 bytes", ShapeText(info.shape),
                                    dtypeInfo->name));
    }
    const uint64_t needed = elements * dtypeInfo->bytes;
    if (info.end - info.begin != needed) {
      return Fail(what, fmt::format("field 'data_offsets' [{}, {}) holds {} bytes, but shape {} of {} needs {}",
                                    info.begin, info.end, info.end - info.begin, ShapeText(info.shape),
                                    dtypeInfo->name, needed));
    }
    const uint64_t bufferOffset = 8 + file_.headerBytes_;
    const uint64_t bufferBytes = file_.bytes_.size() - bufferOffset;
    if (info.end > bufferBytes) {
      const bool overflows = info.end > std::numeric_limits<uint64_t>::max() - bufferOffset;
      const std::string endText = overflows ? std::string("beyond byte 2^64")
                                            : fmt::format("at byte {}", bufferOffset + info.end);
      return Fail(what, fmt::format("data ends {} but the file has {} bytes (truncated)", endText,
                                    file_.bytes_.size()));
    }
    info.data = file_.bytes_.subspan(static_cast<size_t>(bufferOffset + info.begin),
                                     static_cast<size_t>(info.end - info.begin));
    file_.tensors_.push_back(std::move(info));
    return Status::Ok();
  }

  // The tensors, in offset order, must cover the byte buffer exactly (Metadata::validate).
  Status CheckTiling() {
    auto& tensors = file_.tensors_;
    std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
      return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
    });
    uint64_t covered = 0;
    const SafetensorsTensorInfo* previous = nullptr;
    for (const SafetensorsTensorInfo& info : tensors) {
      if (info.begin != covered) {
        const std::string after =
            previous ? fmt::format("the previous tensor ('{}') ends at {}", Printable(previous->name), covered)
                     : std::string("the buffer starts at 0");
        return Fail(fmt::format("tensor '{}'", Printable(info.name)),
                    fmt::format("data_offsets begin at {}, but {}: {} (the tensors must tile the byte buffer)",
                                info.begin, after, info.begin > covered ? "a hole" : "an overlap"));
      }
      covered = info.end;
      previous = &info;
    }
    const uint64_t bufferBytes = file_.bytes_.size() - 8 - file_.headerBytes_;
    if (covered != bufferBytes) {
      return Fail("byte buffer", fmt::format("the tensors cover {} bytes, but the buffer after the header has {}: "
                                             "{} stray bytes at the end",
                                             covered, bufferBytes, bufferBytes - covered));
    }
    for (size_t i = 0; i < tensors.size(); ++i) file_.tensorIndex_.emplace(tensors[i].name, i);
    return Status::Ok();
  }

  SafetensorsFile file_;
};

Expected<SafetensorsFile> SafetensorsFile::Parse(std::span<const std::byte> bytes, std::string displayName) {
  return SafetensorsParser(bytes, std::move(displayName)).Run();
}

Expected<SafetensorsFile> SafetensorsFile::Open(const std::string& path, Residence residence) {
  Expected<MappedFile> mapping = MappedFile::Open(path, residence);
  if (!mapping.ok()) return mapping.error();
  Expected<SafetensorsFile> file = Parse(mapping->bytes(), path);
  if (!file.ok()) return file.error();
  file->mapping_ = std::move(*mapping);  // the mapping stays at the same address
  return file;
}

const SafetensorsTensorInfo* SafetensorsFile::FindTensor(std::string_view name) const {
  const auto it = tensorIndex_.find(name);
  return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

uint64_t SafetensorsTensorInfo::ElementCount() const {
  uint64_t count = 1;
  for (uint64_t n : shape) count *= n;  // checked at parse time
  return count;
}

std::string_view SafetensorsDtypeName(SafetensorsDtype dtype) { return InfoOf(dtype).name; }
uint32_t SafetensorsDtypeBytes(SafetensorsDtype dtype) { return InfoOf(dtype).bytes; }

std::optional<TensorType> WeightTypeOf(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::kF32: return TensorType::kF32;
    case SafetensorsDtype::kF16: return TensorType::kF16;
    case SafetensorsDtype::kBF16: return TensorType::kBF16;
    default: return std::nullopt;
  }
}

// --- the index of a sharded checkpoint -------------------------------------------------------

Expected<std::map<std::string, std::string>> SafetensorsCheckpoint::ParseIndex(std::string_view json,
                                                                               const std::string& displayName) {
  const auto fail = [&](std::string_view problem) { return BadData(fmt::format("{}: {}", displayName, problem)); };
  Json root;
  if (std::string problem = ParseJson(json, kSafetensorsMaxJsonDepth, root, nullptr); !problem.empty()) {
    return fail(problem);
  }
  if (!root.is_object()) return fail("the JSON is not an object");
  const auto weightMap = root.find("weight_map");
  if (weightMap == root.end()) return fail("field 'weight_map' is missing");
  if (!weightMap->is_object()) return fail("field 'weight_map' is not an object");
  std::map<std::string, std::string> result;
  for (const auto& [tensor, shard] : weightMap->items()) {
    const std::string what = fmt::format("field 'weight_map' entry '{}'", Printable(tensor));
    if (!shard.is_string()) return fail(fmt::format("{} is a {}, expected a file name", what, shard.type_name()));
    const std::string file = shard.get<std::string>();
    bool escapes = file.empty() || file.front() == '/' || file.find('\0') != std::string::npos;
    for (size_t start = 0; !escapes && start <= file.size();) {
      const size_t slash = std::min(file.find('/', start), file.size());
      if (file.substr(start, slash - start) == "..") escapes = true;
      start = slash + 1;
    }
    if (escapes) {
      return fail(fmt::format("{}: shard \"{}\" is not a file name inside the checkpoint directory", what,
                              Printable(file)));
    }
    result.emplace(tensor, file);
  }
  if (result.empty()) return fail("field 'weight_map' lists no tensors");
  return result;
}

}  // namespace wb
