// Tests for the failure vocabulary (common/failure_kind.h) and the code
// families that map into it: status codes, batcher rejections, execution
// failures. The TypeScript side is compared with the addon's export in
// test/native/failure-vocabulary.test.ts; this checks the native tables on
// their own (distinct names, one kind each, the worker names round-trip).
#include <set>
#include <string>

#include "batcher/execution_target.h"
#include "batcher/types.h"
#include "common/failure_kind.h"
#include "common/status.h"
#include "tests/check.h"

namespace hotpath {
namespace {

namespace bt = batcher;

void TestKindNamesAreDistinct(test::Checker& check) {
  std::set<std::string> names;
  for (FailureKind kind : kAllFailureKinds) names.insert(FailureKindName(kind));
  check.Equal(names.size(), std::size(kAllFailureKinds), "every kind has its own name");
  check.Equal(std::string(FailureKindName(FailureKind::kOverQuota)), std::string("over_quota"), "TS spelling");
  check.Equal(std::string(FailureKindName(FailureKind::kWorkerCrashed)), std::string("worker_crashed"), "TS spelling");
}

void TestStatusCodeKinds(test::Checker& check) {
  check.True(KindOfStatusCode(StatusCode::kResourceExhausted) == FailureKind::kOverQuota, "RESOURCE_EXHAUSTED");
  check.True(KindOfStatusCode(StatusCode::kDeadlineExceeded) == FailureKind::kDeadline, "DEADLINE_EXCEEDED");
  check.True(KindOfStatusCode(StatusCode::kFailedPrecondition) == FailureKind::kPrecondition, "FAILED_PRECONDITION");
  check.True(KindOfStatusCode(StatusCode::kOk) == FailureKind::kInternal, "OK is no failure: internal");
  std::set<std::string> names;
  for (StatusCode code : kAllStatusCodes) names.insert(StatusCodeName(code));
  check.Equal(names.size(), std::size(kAllStatusCodes), "the code list has every code once");
}

void TestRejections(test::Checker& check) {
  std::set<std::string> names;
  for (bt::RejectKind reason : bt::kAllRejectKinds) {
    names.insert(bt::RejectKindName(reason));
    bt::Rejection rejection;
    rejection.kind = reason;
    rejection.model = "m";
    // ToStatus answers with the code the vocabulary exports for the reason.
    check.True(bt::ToStatus(rejection).code() == bt::RejectStatusCode(reason), bt::RejectKindName(reason));
  }
  check.Equal(names.size(), std::size(bt::kAllRejectKinds), "distinct rejection names");
  check.True(bt::KindOf(bt::RejectKind::kQueueFull) == FailureKind::kQueueFull, "QUEUE_FULL");
  check.True(bt::KindOf(bt::RejectKind::kTimeout) == FailureKind::kTimeout, "TIMEOUT");
  check.True(bt::KindOf(bt::RejectKind::kDeadlineExceeded) == FailureKind::kDeadline, "DEADLINE_EXCEEDED");
  check.True(bt::KindOf(bt::RejectKind::kOverQuota) == FailureKind::kOverQuota, "OVER_QUOTA");
}

void TestExecutionFailures(test::Checker& check) {
  std::set<std::string> names;
  int reportable = 0;
  for (bt::ExecutionFailure failure : bt::kAllExecutionFailures) {
    const std::string name = bt::ExecutionFailureName(failure);
    names.insert(name);
    const std::optional<bt::ExecutionFailure> parsed = bt::WorkerFailureNamed(name);
    if (bt::WorkerMayReport(failure)) {
      ++reportable;
      check.True(parsed.has_value() && *parsed == failure, "a worker's name round-trips: " + name);
    } else {
      check.True(!parsed.has_value(), "a worker cannot report " + name);
    }
  }
  check.Equal(names.size(), std::size(bt::kAllExecutionFailures), "distinct failure names");
  check.Equal(reportable, 4, "INVALID, INTERNAL, DEADLINE, RESOURCE_EXHAUSTED");
  check.True(!bt::WorkerFailureNamed("invalid").has_value(), "names are case-sensitive");
  check.True(!bt::WorkerFailureNamed("").has_value(), "an empty name is nothing");
  check.True(bt::StatusCodeOf(bt::ExecutionFailure::kDeadline) == StatusCode::kDeadlineExceeded, "DEADLINE code");
  check.True(bt::StatusCodeOf(bt::ExecutionFailure::kNone) == StatusCode::kOk, "NONE is OK");
  check.True(bt::KindOf(bt::ExecutionFailure::kResourceExhausted) == FailureKind::kOverQuota, "RESOURCE_EXHAUSTED");
  check.True(bt::KindOf(bt::ExecutionFailure::kDeviceLost) == FailureKind::kUnavailable, "DEVICE_LOST");
  check.True(bt::KindOf(bt::ExecutionFailure::kWorkerCrashed) == FailureKind::kWorkerCrashed, "WORKER_CRASHED");
  check.True(bt::FailureOfAllocation(Status(StatusCode::kResourceExhausted, "quota")) ==
                 bt::ExecutionFailure::kResourceExhausted,
             "an allocation refused for room");
  check.True(bt::FailureOfAllocation(Status(StatusCode::kInternal, "mmap")) == bt::ExecutionFailure::kInternal,
             "an allocation that failed otherwise");
}

}  // namespace
}  // namespace hotpath

int main() {
  hotpath::test::Checker check;
  hotpath::TestKindNamesAreDistinct(check);
  hotpath::TestStatusCodeKinds(check);
  hotpath::TestRejections(check);
  hotpath::TestExecutionFailures(check);
  return check.ExitCode();
}
