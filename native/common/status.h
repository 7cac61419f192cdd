// Status: the error-as-data type every core (non-N-API) function returns.
//
// A Status is a code plus a human-readable message. Core code never throws for
// expected failures (a failed system/CUDA call, a quota hit); it returns a Status
// and native/napi/ turns it into a plain `{code, message}` JS object, which the
// TypeScript wrapper rethrows as a typed error. Code names follow gRPC status
// names so the server can map them one-to-one.
//
// Thread-safety: a Status is a value type; distinct objects may be used from
// different threads freely, one object is not synchronised.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace hotpath {

enum class StatusCode {
  kOk,
  kInvalidArgument,
  kNotFound,
  kFailedPrecondition,
  kResourceExhausted,
  kUnavailable,
  kDeadlineExceeded,
  kInternal,
};

// Upper-snake name of a code as it crosses to JS ("RESOURCE_EXHAUSTED").
// Never returns null.
const char* StatusCodeName(StatusCode code);

class Status {
 public:
  // The OK status carries no message.
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  // INTERNAL status for a failed system call: "<what>: <strerror(err)>".
  // Uses a thread-safe errno-to-text conversion.
  static Status FromErrno(std::string_view what, int err);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "CODE: message", for logs and test output.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace hotpath
