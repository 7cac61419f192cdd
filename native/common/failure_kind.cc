// Kind names and the status-code kinds. See failure_kind.h.
#include "common/failure_kind.h"

namespace hotpath {

const char* FailureKindName(FailureKind kind) {
  switch (kind) {
    case FailureKind::kInvalid: return "invalid";
    case FailureKind::kNotFound: return "not_found";
    case FailureKind::kPrecondition: return "precondition";
    case FailureKind::kUnavailable: return "unavailable";
    case FailureKind::kQueueFull: return "queue_full";
    case FailureKind::kShutdown: return "shutdown";
    case FailureKind::kTimeout: return "timeout";
    case FailureKind::kDeadline: return "deadline";
    case FailureKind::kOverQuota: return "over_quota";
    case FailureKind::kWorkerCrashed: return "worker_crashed";
    case FailureKind::kInternal: return "internal";
  }
  return "internal";
}

FailureKind KindOfStatusCode(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return FailureKind::kInvalid;
    case StatusCode::kNotFound: return FailureKind::kNotFound;
    case StatusCode::kFailedPrecondition: return FailureKind::kPrecondition;
    case StatusCode::kResourceExhausted: return FailureKind::kOverQuota;
    case StatusCode::kUnavailable: return FailureKind::kUnavailable;
    case StatusCode::kDeadlineExceeded: return FailureKind::kDeadline;
    case StatusCode::kOk:
    case StatusCode::kInternal: return FailureKind::kInternal;
  }
  return FailureKind::kInternal;
}

}  // namespace hotpath
