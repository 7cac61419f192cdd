// Result<T>: either a value or a non-OK Status (like absl::StatusOr).
//
// Used as the return type of core functions that produce a value and may fail.
// Accessing value() on an error Result is a programming error and aborts in
// debug builds (assert); check ok() first.
//
// Thread-safety: value type, no internal synchronisation.
#pragma once

#include <cassert>
#include <optional>
#include <utility>

#include "common/status.h"

namespace hotpath {

template <typename T>
class Result {
 public:
  // Implicit on purpose so `return value;` and `return status;` both read well.
  Result(T value) : value_(std::move(value)) {}  // NOLINT(runtime/explicit)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(runtime/explicit)
    assert(!status_.ok() && "Result built from an OK status has no value");
    if (status_.ok()) {
      status_ = Status(StatusCode::kInternal, "Result built from an OK status");
    }
  }

  bool ok() const { return value_.has_value(); }
  // OK when a value is held.
  const Status& status() const { return status_; }

  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T& value() & {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace hotpath
