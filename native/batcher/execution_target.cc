// The typed execution failures: names, codes, kinds (execution_target.h).
// One table, so a failure's name, code and kind cannot disagree.
#include "batcher/execution_target.h"

#include <iterator>

namespace hotpath::batcher {

namespace {

struct FailureEntry {
  ExecutionFailure failure;
  const char* name;
  StatusCode code;
  FailureKind kind;
  bool worker_may_report;
};

constexpr FailureEntry kFailures[] = {
    {ExecutionFailure::kNone, "NONE", StatusCode::kOk, FailureKind::kInternal, false},
    {ExecutionFailure::kInvalid, "INVALID", StatusCode::kInvalidArgument, FailureKind::kInvalid, true},
    {ExecutionFailure::kDeviceTransient, "DEVICE_TRANSIENT", StatusCode::kUnavailable, FailureKind::kUnavailable, false},
    {ExecutionFailure::kDeviceLost, "DEVICE_LOST", StatusCode::kUnavailable, FailureKind::kUnavailable, false},
    {ExecutionFailure::kResourceExhausted, "RESOURCE_EXHAUSTED", StatusCode::kResourceExhausted, FailureKind::kOverQuota, true},
    {ExecutionFailure::kShutdown, "SHUTDOWN", StatusCode::kUnavailable, FailureKind::kShutdown, false},
    {ExecutionFailure::kInternal, "INTERNAL", StatusCode::kInternal, FailureKind::kInternal, true},
    {ExecutionFailure::kWorkerCrashed, "WORKER_CRASHED", StatusCode::kUnavailable, FailureKind::kWorkerCrashed, false},
    {ExecutionFailure::kDeadline, "DEADLINE", StatusCode::kDeadlineExceeded, FailureKind::kDeadline, true},
};

static_assert(kFailures[6].failure == ExecutionFailure::kInternal, "EntryOf's fallback is INTERNAL");
static_assert(std::size(kFailures) == std::size(kAllExecutionFailures), "one entry per failure");

// The entry of `failure`; INTERNAL's for a value outside the enum.
const FailureEntry& EntryOf(ExecutionFailure failure) {
  for (const FailureEntry& entry : kFailures) {
    if (entry.failure == failure) return entry;
  }
  return kFailures[6];
}

}  // namespace

const char* ExecutionFailureName(ExecutionFailure failure) { return EntryOf(failure).name; }

StatusCode StatusCodeOf(ExecutionFailure failure) { return EntryOf(failure).code; }

FailureKind KindOf(ExecutionFailure failure) { return EntryOf(failure).kind; }

bool WorkerMayReport(ExecutionFailure failure) { return EntryOf(failure).worker_may_report; }

std::optional<ExecutionFailure> WorkerFailureNamed(std::string_view name) {
  for (const FailureEntry& entry : kFailures) {
    if (entry.worker_may_report && name == entry.name) return entry.failure;
  }
  return std::nullopt;
}

ExecutionFailure FailureOfAllocation(const Status& status) {
  return status.code() == StatusCode::kResourceExhausted ? ExecutionFailure::kResourceExhausted
                                                         : ExecutionFailure::kInternal;
}

}  // namespace hotpath::batcher
