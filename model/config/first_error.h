// FirstError: read many fields in a row and keep only the first failure.
//
// Contract: Take(expected, fallback) returns the value, or `fallback` once anything has
// failed; error() is the first failure. A parser reads every field flat, then checks ok()
// once, instead of an early return after each read. Used by the config parsers.
#pragma once

#include <optional>
#include <utility>

#include "common/expected.h"

namespace wb::model {

class FirstError {
 public:
  template <typename T>
  T Take(Expected<T> value, T fallback = T{}) {
    if (failed_) return fallback;
    if (!value.ok()) {
      Fail(value.error());
      return fallback;
    }
    return std::move(value).value();
  }
  void Fail(Error error) {
    if (!failed_) {
      error_ = std::move(error);
      failed_ = true;
    }
  }
  void Check(Status status) {
    if (!status.ok()) Fail(status.error());
  }
  bool ok() const { return !failed_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

}  // namespace wb::model
