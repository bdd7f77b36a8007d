// Errors as values at module boundaries.
//
// Contract: a function that can fail on bad input returns Status (nothing else to
// return) or Expected<T>. The Error carries a kind, which fixes the command's exit status
// (ExitStatusOf: 2 for bad data or usage, 3 for a failure of the system or of the workbook
// itself; 1 is kept for a student's code that fails, which is a result, not an error), and
// a message that names the file, tensor or field that is wrong and, where one exists, says
// how to fix it. Nothing here throws.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace wb {

enum class ErrorKind {
  kBadData,   // a file's contents are wrong: truncated, corrupted, wrong version or shape
  kBadUsage,  // the invocation is wrong: unknown stage, missing file, bad flag value
  kSystem,    // the operating system refused something (fork, mmap, ...)
  kInternal,  // a bug in the workbook itself
};

// The exit statuses of every workbook command.
constexpr int kExitPass = 0;           // everything checked passed
constexpr int kExitFail = 1;           // a checkpoint failed, or the student's code did not compile, crashed or hung
constexpr int kExitBadInput = 2;       // bad usage or bad data: the message names the file and what is wrong
constexpr int kExitWorkbookFailed = 3;  // the system refused something, or a bug in the workbook itself

constexpr int ExitStatusOf(ErrorKind kind) {
  return kind == ErrorKind::kBadData || kind == ErrorKind::kBadUsage ? kExitBadInput : kExitWorkbookFailed;
}

struct Error {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
};

inline Error BadData(std::string message) { return {ErrorKind::kBadData, std::move(message)}; }
inline Error BadUsage(std::string message) { return {ErrorKind::kBadUsage, std::move(message)}; }
inline Error SystemError(std::string message) { return {ErrorKind::kSystem, std::move(message)}; }
inline Error InternalError(std::string message) { return {ErrorKind::kInternal, std::move(message)}; }

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT: implicit on purpose
  static Status Ok() { return {}; }

  bool ok() const { return !failed_; }
  const Error& error() const {
    assert(failed_);
    return error_;
  }

 private:
  Error error_;
  bool failed_ = false;
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}    // NOLINT: implicit on purpose
  Expected(Error error) : state_(std::move(error)) {}  // NOLINT: implicit on purpose

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<T>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<Error>(state_);
  }
  Status status() const { return ok() ? Status::Ok() : Status(error()); }

 private:
  std::variant<T, Error> state_;
};

}  // namespace wb
