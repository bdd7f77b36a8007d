#include "model/config/json_keys.h"

#include <limits>

#include <fmt/format.h>

namespace wb::model {

JsonKeys::JsonKeys(const nlohmann::json& object, std::string file, std::string prefix)
    : object_(&object), file_(std::move(file)), prefix_(std::move(prefix)) {}

const nlohmann::json* JsonKeys::Find(std::string_view key) const {
  if (!object_->is_object()) return nullptr;
  auto it = object_->find(std::string(key));
  return it == object_->end() ? nullptr : &*it;
}

bool JsonKeys::Has(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  return v != nullptr && !v->is_null();
}

std::string JsonKeys::Path(std::string_view key) const {
  return prefix_.empty() ? std::string(key) : fmt::format("{}.{}", prefix_, key);
}

Error JsonKeys::Wrong(std::string_view key, std::string_view what) const {
  return BadData(fmt::format("{}: {}: {}", file_, Path(key), what));
}

Error JsonKeys::WrongType(std::string_view key, std::string_view wanted, const nlohmann::json& got) const {
  std::string shown = got.dump();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  return Wrong(key, fmt::format("expected {}, got {}", wanted, shown));
}

Expected<int> JsonKeys::Int(std::string_view key, std::optional<int> fallback) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || (v->is_null() && fallback)) {
    if (fallback) return *fallback;
    return Wrong(key, "missing");
  }
  if (!v->is_number_integer()) return WrongType(key, "an integer", *v);
  const int64_t value = v->get<int64_t>();
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    return WrongType(key, "an integer that fits in 32 bits", *v);
  }
  return static_cast<int>(value);
}

Expected<double> JsonKeys::Number(std::string_view key, std::optional<double> fallback) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || (v->is_null() && fallback)) {
    if (fallback) return *fallback;
    return Wrong(key, "missing");
  }
  if (!v->is_number()) return WrongType(key, "a number", *v);
  return v->get<double>();
}

Expected<bool> JsonKeys::Bool(std::string_view key, std::optional<bool> fallback) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || (v->is_null() && fallback)) {
    if (fallback) return *fallback;
    return Wrong(key, "missing");
  }
  if (!v->is_boolean()) return WrongType(key, "true or false", *v);
  return v->get<bool>();
}

Expected<std::string> JsonKeys::String(std::string_view key, std::optional<std::string> fallback) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || (v->is_null() && fallback)) {
    if (fallback) return *fallback;
    return Wrong(key, "missing");
  }
  if (!v->is_string()) return WrongType(key, "a string", *v);
  return v->get<std::string>();
}

Expected<int> JsonKeys::NullableInt(std::string_view key, int absent, int null) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return absent;
  if (v->is_null()) return null;
  return Int(key);
}

Expected<JsonKeys> JsonKeys::Object(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr) return Wrong(key, "missing");
  if (!v->is_object()) return WrongType(key, "an object", *v);
  return JsonKeys(*v, file_, Path(key));
}

}  // namespace wb::model
