// Typed reads of one JSON object's keys, for config.json parsing.
//
// Contract: every read says what it wants (an integer, a number, a bool, a string) and
// whether the key may be absent (then the fallback is returned); a key that is present
// with the wrong type, or missing without a fallback, is an Error whose message names the
// file and the key's dotted path ("config.json: rope_scaling.factor: expected a number,
// got "x""). JSON null counts as absent only where a read says so (Nullable*).
// Nothing here throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/expected.h"

namespace wb::model {

class JsonKeys {
 public:
  // `object` must outlive this reader; `prefix` is prepended to key names in messages.
  JsonKeys(const nlohmann::json& object, std::string file, std::string prefix = "");

  // The value at `key`, or nullptr when absent. Null values are returned as they are.
  const nlohmann::json* Find(std::string_view key) const;
  // Present and not null.
  bool Has(std::string_view key) const;

  Expected<int> Int(std::string_view key, std::optional<int> fallback = std::nullopt) const;
  Expected<double> Number(std::string_view key, std::optional<double> fallback = std::nullopt) const;
  Expected<bool> Bool(std::string_view key, std::optional<bool> fallback = std::nullopt) const;
  Expected<std::string> String(std::string_view key,
                               std::optional<std::string> fallback = std::nullopt) const;

  // Absent: `absent`; null: `null`; otherwise an integer.
  Expected<int> NullableInt(std::string_view key, int absent, int null) const;

  // A reader of the object at `key` (which must be an object).
  Expected<JsonKeys> Object(std::string_view key) const;

  // "file: prefix.key: what".
  Error Wrong(std::string_view key, std::string_view what) const;
  std::string Path(std::string_view key) const;  // prefix.key
  const std::string& file() const { return file_; }
  const nlohmann::json& json() const { return *object_; }

 private:
  Error WrongType(std::string_view key, std::string_view wanted, const nlohmann::json& got) const;

  const nlohmann::json* object_;
  std::string file_;
  std::string prefix_;
};

}  // namespace wb::model
