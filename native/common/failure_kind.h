// FailureKind: the failure vocabulary native code shares with TypeScript.
//
// Every failure the native core reports crosses to JS under a code name (a
// StatusCode, a batcher RejectKind, an ExecutionFailure), and every code name
// has exactly one kind here. The kind names are src/common/error-kinds.ts's
// ErrorKind strings; TypeScript keeps one table per code family with the same
// kinds, and test/native/failure-vocabulary.test.ts compares them with what
// the addon exports (failureVocabulary(), napi/failure_vocabulary_binding.cc),
// so neither side can drift. TypeScript has more kinds than these (a door's
// refusals: unauthenticated, rate_limited, ...); native code never makes them.
//
// Classification is by code only: nothing here, or in TypeScript, reads a
// message.
//
// Thread-safety: pure functions over enums; the names are static strings.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace hotpath {

enum class FailureKind : int32_t {
  kInvalid,        // the request or batch is malformed, or does not fit the model
  kNotFound,       // no such object (arena, tenant, executor, ...)
  kPrecondition,   // valid, but the state forbids it
  kUnavailable,    // cannot serve now
  kQueueFull,      // the batcher's queue for the request's level is full
  kShutdown,       // the batcher or target stopped with the work pending
  kTimeout,        // the queue policy's timeout passed in the queue
  kDeadline,       // the caller's deadline passed before it ran
  kOverQuota,      // a tenant's quota, or the memory, has no room
  kWorkerCrashed,  // the onnxruntime worker running it exited
  kInternal,       // a bug, or a failure nothing above classifies
};

// Every kind, in declaration order (for tests and the exported vocabulary).
inline constexpr FailureKind kAllFailureKinds[] = {
    FailureKind::kInvalid,   FailureKind::kNotFound, FailureKind::kPrecondition, FailureKind::kUnavailable,
    FailureKind::kQueueFull, FailureKind::kShutdown, FailureKind::kTimeout,      FailureKind::kDeadline,
    FailureKind::kOverQuota, FailureKind::kWorkerCrashed, FailureKind::kInternal,
};

// The TypeScript ErrorKind string ("over_quota"). Never null.
const char* FailureKindName(FailureKind kind);

// The kind of a non-OK status code. kOk is not a failure: kInternal (a
// caller that reports a failure with an OK code has a bug).
FailureKind KindOfStatusCode(StatusCode code);

// Every status code, OK first (for tests and the exported vocabulary).
inline constexpr StatusCode kAllStatusCodes[] = {
    StatusCode::kOk,          StatusCode::kInvalidArgument,  StatusCode::kNotFound,
    StatusCode::kFailedPrecondition, StatusCode::kResourceExhausted, StatusCode::kUnavailable,
    StatusCode::kDeadlineExceeded,   StatusCode::kInternal,
};

}  // namespace hotpath
