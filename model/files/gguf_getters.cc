// Typed metadata getters of GgufFile; the accepted conversions are listed in gguf.h.
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "gguf.h"
#include "printable.h"

namespace wb {

namespace {

bool IsInteger(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kU16:
    case GgufValueType::kI16:
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kU64:
    case GgufValueType::kI64: return true;
    default: return false;
  }
}

bool IsFloat(GgufValueType type) { return type == GgufValueType::kF32 || type == GgufValueType::kF64; }

// An integer scalar as u64 (if it is non-negative) or as i64 (if it fits).
std::optional<uint64_t> AsUnsigned(const GgufScalar& s) {
  if (const auto* u = std::get_if<uint64_t>(&s)) return *u;
  if (const auto* i = std::get_if<int64_t>(&s); i != nullptr && *i >= 0) return static_cast<uint64_t>(*i);
  return std::nullopt;
}

std::optional<int64_t> AsSigned(const GgufScalar& s) {
  if (const auto* i = std::get_if<int64_t>(&s)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&s);
      u != nullptr && *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(*u);
  }
  return std::nullopt;
}

std::string ScalarText(const GgufScalar& s) {
  if (const auto* u = std::get_if<uint64_t>(&s)) return fmt::format("{}", *u);
  if (const auto* i = std::get_if<int64_t>(&s)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&s)) return fmt::format("{}", *d);
  if (const auto* b = std::get_if<bool>(&s)) return *b ? "true" : "false";
  return fmt::format("\"{}\"", Printable(std::get<std::string_view>(s), 40));
}

// The result of converting one scalar: whether its type is accepted at all, and if it is,
// why its value is out of range (empty when it converted).
struct Converted {
  bool typeOk = false;
  std::string rangeProblem;  // empty if the value converted
};

// The per-type conversion rules, shared by the scalar and array getters.
struct GgufConvert {
  static Converted ToU32(GgufValueType type, const GgufScalar& s, uint32_t& out) {
    if (!IsInteger(type)) return {};
    const auto u = AsUnsigned(s);
    if (!u || *u > std::numeric_limits<uint32_t>::max()) return {true, fmt::format("{} does not fit in a u32", ScalarText(s))};
    out = static_cast<uint32_t>(*u);
    return {true, ""};
  }
  static Converted ToU64(GgufValueType type, const GgufScalar& s, uint64_t& out) {
    if (!IsInteger(type)) return {};
    const auto u = AsUnsigned(s);
    if (!u) return {true, fmt::format("{} is negative", ScalarText(s))};
    out = *u;
    return {true, ""};
  }
  static Converted ToI64(GgufValueType type, const GgufScalar& s, int64_t& out) {
    if (!IsInteger(type)) return {};
    const auto i = AsSigned(s);
    if (!i) return {true, fmt::format("{} does not fit in an i64", ScalarText(s))};
    out = *i;
    return {true, ""};
  }
  static Converted ToF32(GgufValueType type, const GgufScalar& s, float& out) {
    if (!IsFloat(type)) return {};
    out = static_cast<float>(std::get<double>(s));  // exact for f32; f64 rounds to nearest
    return {true, ""};
  }
  static Converted ToBool(GgufValueType type, const GgufScalar& s, bool& out) {
    if (type != GgufValueType::kBool) return {};
    out = std::get<bool>(s);
    return {true, ""};
  }
  static Converted ToString(GgufValueType type, const GgufScalar& s, std::string& out) {
    if (type != GgufValueType::kString) return {};
    out = std::string(std::get<std::string_view>(s));
    return {true, ""};
  }
};

template <typename T, typename Convert>
Expected<T> GetScalar(const GgufFile& file, std::string_view key, std::string_view expected, Convert convert) {
  const GgufValue* value = file.FindValue(key);
  if (value == nullptr) return BadData(fmt::format("{}: key '{}' is missing", file.name(), Printable(key)));
  if (value->type == GgufValueType::kArray) {
    return BadData(fmt::format("{}: key '{}' is an array of {}, expected {}", file.name(), Printable(key),
                               GgufValueTypeName(value->array.elementType), expected));
  }
  T out{};
  const Converted c = convert(value->type, value->scalar, out);
  if (!c.typeOk) {
    return BadData(fmt::format("{}: key '{}' is a {}, expected {}", file.name(), Printable(key),
                               GgufValueTypeName(value->type), expected));
  }
  if (!c.rangeProblem.empty()) {
    return BadData(fmt::format("{}: key '{}' ({}): {}", file.name(), Printable(key), GgufValueTypeName(value->type),
                               c.rangeProblem));
  }
  return out;
}

template <typename T, typename Convert>
Expected<std::vector<T>> GetArray(const GgufFile& file, std::string_view key, std::string_view expected,
                                  Convert convert) {
  const GgufValue* value = file.FindValue(key);
  if (value == nullptr) return BadData(fmt::format("{}: key '{}' is missing", file.name(), Printable(key)));
  if (value->type != GgufValueType::kArray) {
    return BadData(fmt::format("{}: key '{}' is a {}, expected an array of {}", file.name(), Printable(key),
                               GgufValueTypeName(value->type), expected));
  }
  const GgufArray& array = value->array;
  if (array.elementType == GgufValueType::kArray) {
    return BadData(fmt::format("{}: key '{}' is an array of arrays, expected an array of {}", file.name(),
                               Printable(key), expected));
  }
  std::vector<T> out;
  out.reserve(static_cast<size_t>(array.count));
  for (uint64_t i = 0; i < array.count; ++i) {
    T element{};
    const Converted c = convert(array.elementType, array.Scalar(i), element);
    if (!c.typeOk) {
      return BadData(fmt::format("{}: key '{}' is an array of {}, expected an array of {}", file.name(),
                                 Printable(key), GgufValueTypeName(array.elementType), expected));
    }
    if (!c.rangeProblem.empty()) {
      return BadData(fmt::format("{}: key '{}' element {}: {}", file.name(), Printable(key), i, c.rangeProblem));
    }
    out.push_back(std::move(element));
  }
  return out;
}

}  // namespace

Expected<uint32_t> GgufFile::GetU32(std::string_view key) const {
  return GetScalar<uint32_t>(*this, key, "u32", GgufConvert::ToU32);
}
Expected<uint64_t> GgufFile::GetU64(std::string_view key) const {
  return GetScalar<uint64_t>(*this, key, "u64", GgufConvert::ToU64);
}
Expected<int64_t> GgufFile::GetI64(std::string_view key) const {
  return GetScalar<int64_t>(*this, key, "i64", GgufConvert::ToI64);
}
Expected<float> GgufFile::GetF32(std::string_view key) const {
  return GetScalar<float>(*this, key, "f32", GgufConvert::ToF32);
}
Expected<bool> GgufFile::GetBool(std::string_view key) const {
  return GetScalar<bool>(*this, key, "bool", GgufConvert::ToBool);
}
Expected<std::string> GgufFile::GetString(std::string_view key) const {
  return GetScalar<std::string>(*this, key, "string", GgufConvert::ToString);
}
Expected<std::vector<uint32_t>> GgufFile::GetU32Array(std::string_view key) const {
  return GetArray<uint32_t>(*this, key, "u32", GgufConvert::ToU32);
}
Expected<std::vector<int64_t>> GgufFile::GetI64Array(std::string_view key) const {
  return GetArray<int64_t>(*this, key, "i64", GgufConvert::ToI64);
}
Expected<std::vector<float>> GgufFile::GetF32Array(std::string_view key) const {
  return GetArray<float>(*this, key, "f32", GgufConvert::ToF32);
}
Expected<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  return GetArray<std::string>(*this, key, "string", GgufConvert::ToString);
}

Expected<uint32_t> GgufFile::GetU32Or(std::string_view key, uint32_t fallback) const {
  return HasKey(key) ? GetU32(key) : Expected<uint32_t>(fallback);
}
Expected<float> GgufFile::GetF32Or(std::string_view key, float fallback) const {
  return HasKey(key) ? GetF32(key) : Expected<float>(fallback);
}
Expected<bool> GgufFile::GetBoolOr(std::string_view key, bool fallback) const {
  return HasKey(key) ? GetBool(key) : Expected<bool>(fallback);
}
Expected<std::string> GgufFile::GetStringOr(std::string_view key, std::string fallback) const {
  return HasKey(key) ? GetString(key) : Expected<std::string>(std::move(fallback));
}

}  // namespace wb
