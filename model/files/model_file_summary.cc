// Text and JSON dumps of GGUF files and safetensors checkpoints; see model_file_summary.h.
#include "model_file_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "printable.h"

namespace wb {

namespace {

using Json = nlohmann::json;

constexpr size_t kNestedSummaryDepth = 3;  // deeper arrays print as "array[...] N: [...]"

std::string ScalarText(const GgufScalar& scalar, GgufValueType type) {
  if (const auto* u = std::get_if<uint64_t>(&scalar)) return fmt::format("{}", *u);
  if (const auto* i = std::get_if<int64_t>(&scalar)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&scalar)) {
    // Shortest text that reads back as the stored value (f32 printed as a float).
    return type == GgufValueType::kF32 ? fmt::format("{}", static_cast<float>(*d)) : fmt::format("{}", *d);
  }
  if (const auto* b = std::get_if<bool>(&scalar)) return *b ? "true" : "false";
  return fmt::format("\"{}\"", Printable(std::get<std::string_view>(scalar)));
}

std::string ArrayText(const GgufArray& array, size_t depth) {
  std::string text = fmt::format("array[{}] {}: [", GgufValueTypeName(array.elementType), array.count);
  if (depth >= kNestedSummaryDepth) return text + "...]";
  const uint64_t shown = std::min<uint64_t>(array.count, kSummaryArrayItems);
  for (uint64_t i = 0; i < shown; ++i) {
    if (i) text += ", ";
    text += array.elementType == GgufValueType::kArray ? ArrayText(array.arrays[static_cast<size_t>(i)], depth + 1)
                                                       : ScalarText(array.Scalar(i), array.elementType);
  }
  if (shown < array.count) text += fmt::format(", ... {} more", array.count - shown);
  return text + "]";
}

Json ScalarJson(const GgufScalar& scalar, GgufValueType type) {
  if (const auto* u = std::get_if<uint64_t>(&scalar)) return *u;
  if (const auto* i = std::get_if<int64_t>(&scalar)) return *i;
  if (const auto* d = std::get_if<double>(&scalar)) {
    if (!std::isfinite(*d)) return NonFiniteName(*d, type == GgufValueType::kF32);  // JSON has no inf or NaN
    return type == GgufValueType::kF32 ? Json(static_cast<float>(*d)) : Json(*d);
  }
  if (const auto* b = std::get_if<bool>(&scalar)) return *b;
  const std::string_view text = std::get<std::string_view>(scalar);
  return IsValidUtf8(text) ? std::string(text) : Printable(text, text.size());
}

Json ArrayJson(const GgufArray& array, size_t depth) {
  Json out = {{"element_type", GgufValueTypeName(array.elementType)}, {"count", array.count}};
  Json items = Json::array();
  const uint64_t shown = depth >= kNestedSummaryDepth ? 0 : std::min<uint64_t>(array.count, kSummaryArrayItems);
  for (uint64_t i = 0; i < shown; ++i) {
    items.push_back(array.elementType == GgufValueType::kArray ? ArrayJson(array.arrays[static_cast<size_t>(i)], depth + 1)
                                                               : ScalarJson(array.Scalar(i), array.elementType));
  }
  out["first"] = std::move(items);
  return out;
}

std::string DumpJson(const Json& json) {
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

// Rows of text cells printed as left-aligned columns (numbers right-aligned).
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> rightAligned)
      : rightAligned_(std::move(rightAligned)) {
    rows_.push_back(std::move(header));
  }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render(std::string_view indent) const {
    std::vector<size_t> widths(rows_[0].size(), 0);
    for (const auto& row : rows_) {
      for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    }
    std::string out;
    for (const auto& row : rows_) {
      std::string line(indent);
      for (size_t c = 0; c < row.size(); ++c) {
        const bool last = c + 1 == row.size();
        if (rightAligned_[c]) {
          line += fmt::format("{:>{}}", row[c], widths[c]);
        } else {
          line += last ? row[c] : fmt::format("{:<{}}", row[c], widths[c]);
        }
        if (!last) line += "  ";
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> rightAligned_;
};

struct TypeTotal {
  uint64_t tensors = 0, elements = 0, bytes = 0;
};

std::string TotalsText(const std::map<std::string, TypeTotal>& byType) {
  TypeTotal all;
  std::string parts;
  for (const auto& [type, total] : byType) {
    all.tensors += total.tensors;
    all.elements += total.elements;
    all.bytes += total.bytes;
    parts += fmt::format("  {}: {} tensors, {} values, {} bytes\n", type, total.tensors, total.elements, total.bytes);
  }
  return fmt::format("totals: {} tensors, {} values, {} bytes of tensor data\n", all.tensors, all.elements, all.bytes) +
         parts;
}

Json TotalsJson(const std::map<std::string, TypeTotal>& byType) {
  Json perType = Json::object();
  TypeTotal all;
  for (const auto& [type, total] : byType) {
    perType[type] = {{"tensors", total.tensors}, {"values", total.elements}, {"bytes", total.bytes}};
    all.tensors += total.tensors;
    all.elements += total.elements;
    all.bytes += total.bytes;
  }
  return {{"tensors", all.tensors}, {"values", all.elements}, {"bytes", all.bytes}, {"by_type", perType}};
}

std::vector<uint64_t> Reversed(const std::vector<uint64_t>& ne) { return {ne.rbegin(), ne.rend()}; }

}  // namespace

std::string GgufValueText(const GgufValue& value) {
  if (value.type == GgufValueType::kArray) return ArrayText(value.array, 0);
  return ScalarText(value.scalar, value.type);
}

std::string DescribeGgufText(const GgufFile& file) {
  std::string out = fmt::format(
      "{}: GGUF version {}, {} bytes, alignment {}{}, {} metadata keys, {} tensors, data section at byte {}\n",
      file.name(), file.version(), file.bytes().size(), file.alignment(),
      file.HasKey("general.alignment") ? "" : " (default)", file.metadata().size(), file.tensors().size(),
      file.dataOffset());
  out += "\nmetadata:\n";
  Table metadata({"key", "type", "value"}, {false, false, false});
  for (const GgufKeyValue& kv : file.metadata()) {
    const std::string type = kv.value.type == GgufValueType::kArray
                                 ? fmt::format("array[{}]", GgufValueTypeName(kv.value.array.elementType))
                                 : GgufValueTypeName(kv.value.type);
    std::string value = GgufValueText(kv.value);
    if (kv.value.type == GgufValueType::kArray) value = value.substr(value.find(' ') + 1);  // type is its own column
    metadata.Add({Printable(kv.key), type, value});
  }
  out += metadata.Render("  ");
  out += "\ntensors (ne is ggml's order, innermost first; shape is row-major, outermost first):\n";
  Table tensors({"name", "type", "ne", "shape", "bytes", "offset"}, {false, false, false, false, true, true});
  std::map<std::string, TypeTotal> byType;
  for (const GgufTensorInfo& t : file.tensors()) {
    tensors.Add({Printable(t.name), std::string(TensorTypeName(t.type)), ShapeText(t.ne), ShapeText(Reversed(t.ne)),
                 fmt::format("{}", t.byteSize), fmt::format("{}", t.offset)});
    TypeTotal& total = byType[std::string(TensorTypeName(t.type))];
    ++total.tensors;
    total.elements += t.ElementCount();
    total.bytes += t.byteSize;
  }
  out += tensors.Render("  ");
  out += "\n" + TotalsText(byType);
  return out;
}

std::string DescribeGgufJson(const GgufFile& file) {
  Json metadata = Json::array();
  for (const GgufKeyValue& kv : file.metadata()) {
    Json entry = {{"key", IsValidUtf8(kv.key) ? kv.key : Printable(kv.key, kv.key.size())},
                  {"type", GgufValueTypeName(kv.value.type)}};
    entry["value"] = kv.value.type == GgufValueType::kArray ? ArrayJson(kv.value.array, 0)
                                                            : ScalarJson(kv.value.scalar, kv.value.type);
    metadata.push_back(std::move(entry));
  }
  Json tensors = Json::array();
  std::map<std::string, TypeTotal> byType;
  for (const GgufTensorInfo& t : file.tensors()) {
    tensors.push_back({{"name", IsValidUtf8(t.name) ? t.name : Printable(t.name, t.name.size())},
                       {"type", TensorTypeName(t.type)},
                       {"ne", t.ne},
                       {"shape", Reversed(t.ne)},
                       {"bytes", t.byteSize},
                       {"offset", t.offset}});
    TypeTotal& total = byType[std::string(TensorTypeName(t.type))];
    ++total.tensors;
    total.elements += t.ElementCount();
    total.bytes += t.byteSize;
  }
  const Json root = {{"format", "gguf"},
                     {"file", file.name()},
                     {"bytes", file.bytes().size()},
                     {"version", file.version()},
                     {"alignment", file.alignment()},
                     {"data_offset", file.dataOffset()},
                     {"metadata", std::move(metadata)},
                     {"tensors", std::move(tensors)},
                     {"totals", TotalsJson(byType)}};
  return DumpJson(root);
}

std::string DescribeSafetensorsText(const SafetensorsCheckpoint& checkpoint) {
  std::string out = fmt::format("{}: safetensors, {} file{}{}\n", checkpoint.source(), checkpoint.shards().size(),
                                checkpoint.shards().size() == 1 ? "" : "s",
                                checkpoint.indexPath().empty() ? "" : fmt::format(" (index {})", checkpoint.indexPath()));
  for (const SafetensorsFile& shard : checkpoint.shards()) {
    out += fmt::format("  {}: {} bytes, JSON header {} bytes, {} tensors\n", shard.name(), shard.bytes().size(),
                       shard.headerBytes(), shard.tensors().size());
    for (const auto& [key, value] : shard.metadata()) {
      out += fmt::format("    __metadata__ {} = \"{}\"\n", Printable(key), Printable(value));
    }
  }
  out += "\ntensors (shape is row-major, outermost first; offsets are relative to each file's byte buffer):\n";
  const bool manyFiles = checkpoint.shards().size() > 1;
  std::vector<std::string> header = {"name", "dtype", "shape", "bytes", "offset"};
  std::vector<bool> right = {false, false, false, true, true};
  if (manyFiles) {
    header.push_back("file");
    right.push_back(false);
  }
  Table tensors(header, right);
  std::map<std::string, TypeTotal> byType;
  for (const std::string& name : checkpoint.TensorNames()) {
    const auto found = checkpoint.Find(name);
    const SafetensorsTensorInfo& t = *found.tensor;
    std::vector<std::string> row = {Printable(t.name), std::string(SafetensorsDtypeName(t.dtype)), ShapeText(t.shape),
                                    fmt::format("{}", t.end - t.begin), fmt::format("{}", t.begin)};
    if (manyFiles) row.push_back(found.file->name());
    tensors.Add(std::move(row));
    TypeTotal& total = byType[std::string(SafetensorsDtypeName(t.dtype))];
    ++total.tensors;
    total.elements += t.ElementCount();
    total.bytes += t.end - t.begin;
  }
  out += tensors.Render("  ");
  out += "\n" + TotalsText(byType);
  return out;
}

std::string DescribeSafetensorsJson(const SafetensorsCheckpoint& checkpoint) {
  Json files = Json::array();
  for (const SafetensorsFile& shard : checkpoint.shards()) {
    Json metadata = Json::object();
    for (const auto& [key, value] : shard.metadata()) metadata[key] = value;
    files.push_back({{"file", shard.name()},
                     {"bytes", shard.bytes().size()},
                     {"header_bytes", shard.headerBytes()},
                     {"tensors", shard.tensors().size()},
                     {"metadata", std::move(metadata)}});
  }
  Json tensors = Json::array();
  std::map<std::string, TypeTotal> byType;
  for (const std::string& name : checkpoint.TensorNames()) {
    const auto found = checkpoint.Find(name);
    const SafetensorsTensorInfo& t = *found.tensor;
    tensors.push_back({{"name", t.name},
                       {"dtype", SafetensorsDtypeName(t.dtype)},
                       {"shape", t.shape},
                       {"bytes", t.end - t.begin},
                       {"offset", t.begin},
                       {"file", found.file->name()}});
    TypeTotal& total = byType[std::string(SafetensorsDtypeName(t.dtype))];
    ++total.tensors;
    total.elements += t.ElementCount();
    total.bytes += t.end - t.begin;
  }
  const Json root = {{"format", "safetensors"},
                     {"source", checkpoint.source()},
                     {"index", checkpoint.indexPath()},
                     {"files", std::move(files)},
                     {"tensors", std::move(tensors)},
                     {"totals", TotalsJson(byType)}};
  return DumpJson(root);
}

}  // namespace wb
