// Config validation, names and rejection messages. See types.h.
#include "batcher/types.h"

#include <string>

namespace hotpath::batcher {
namespace {

// Durations are added to steady-clock time points in nanoseconds; a bound far
// above any sane setting keeps that arithmetic from overflowing.
constexpr uint64_t kMaxMicroseconds = 1'000'000'000'000;  // ~11.6 days

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, "batcher config: " + std::move(message));
}

Status ValidatePolicy(const QueuePolicy& policy, const std::string& where) {
  if (policy.default_timeout_us > kMaxMicroseconds) {
    return Invalid(where + ".default_timeout_microseconds: expected <= " +
                   std::to_string(kMaxMicroseconds) + ", got " +
                   std::to_string(policy.default_timeout_us));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateConfig(const BatcherConfig& config) {
  if (config.input_count == 0) return Invalid("input_count: expected >= 1, got 0");
  if (config.instance_count == 0) return Invalid("instance_count: expected >= 1, got 0");
  for (uint32_t size : config.preferred_batch_sizes) {
    if (size < 1 || size > config.max_batch_size) {
      return Invalid("preferred_batch_size: expected values in [1, " +
                     std::to_string(config.max_batch_size) + "] (max_batch_size), got " +
                     std::to_string(size));
    }
  }
  if (config.max_queue_delay_us > kMaxMicroseconds) {
    return Invalid("max_queue_delay_microseconds: expected <= " +
                   std::to_string(kMaxMicroseconds) + ", got " +
                   std::to_string(config.max_queue_delay_us));
  }
  if (config.priority_levels > 0 && (config.default_priority_level < 1 ||
                                     config.default_priority_level > config.priority_levels)) {
    return Invalid("default_priority_level: expected a value in [1, " +
                   std::to_string(config.priority_levels) + "], got " +
                   std::to_string(config.default_priority_level));
  }
  if (Status s = ValidatePolicy(config.default_queue_policy, "default_queue_policy"); !s.ok()) {
    return s;
  }
  for (const auto& [level, policy] : config.priority_queue_policy) {
    const std::string where = "priority_queue_policy[" + std::to_string(level) + "]";
    if (level < 1 || level > config.priority_levels) {
      return Invalid(where + ": expected a level in [1, " +
                     std::to_string(config.priority_levels) + "] (priority_levels)");
    }
    if (Status s = ValidatePolicy(policy, where); !s.ok()) return s;
  }
  return Status::Ok();
}

const QueuePolicy& PolicyForLevel(const BatcherConfig& config, uint32_t level) {
  auto it = config.priority_queue_policy.find(level);
  return it == config.priority_queue_policy.end() ? config.default_queue_policy : it->second;
}

const char* RequestStateName(RequestState state) {
  switch (state) {
    case RequestState::kCopying: return "copying";
    case RequestState::kQueued: return "queued";
    case RequestState::kDelayed: return "delayed";
    case RequestState::kBatched: return "batched";
    case RequestState::kRejected: return "rejected";
  }
  return "unknown";
}

const char* RejectKindName(RejectKind kind) {
  switch (kind) {
    case RejectKind::kQueueFull: return "QUEUE_FULL";
    case RejectKind::kTimeout: return "TIMEOUT";
    case RejectKind::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case RejectKind::kShutdown: return "SHUTDOWN";
    case RejectKind::kOverQuota: return "OVER_QUOTA";
    case RejectKind::kInvalid: return "INVALID";
  }
  return "UNKNOWN";
}

StatusCode RejectStatusCode(RejectKind kind) {
  switch (kind) {
    case RejectKind::kQueueFull:
    case RejectKind::kShutdown: return StatusCode::kUnavailable;
    case RejectKind::kTimeout:
    case RejectKind::kDeadlineExceeded: return StatusCode::kDeadlineExceeded;
    case RejectKind::kOverQuota: return StatusCode::kResourceExhausted;
    case RejectKind::kInvalid: return StatusCode::kInvalidArgument;
  }
  return StatusCode::kInternal;
}

FailureKind KindOf(RejectKind kind) {
  switch (kind) {
    case RejectKind::kQueueFull: return FailureKind::kQueueFull;
    case RejectKind::kTimeout: return FailureKind::kTimeout;
    case RejectKind::kDeadlineExceeded: return FailureKind::kDeadline;
    case RejectKind::kShutdown: return FailureKind::kShutdown;
    case RejectKind::kOverQuota: return FailureKind::kOverQuota;
    case RejectKind::kInvalid: return FailureKind::kInvalid;
  }
  return FailureKind::kInternal;
}

Status ToStatus(const Rejection& rejection) {
  const std::string model = "model '" + rejection.model + "': ";
  const StatusCode code = RejectStatusCode(rejection.kind);
  switch (rejection.kind) {
    case RejectKind::kQueueFull:
      return Status(code, model + "queue full (max_queue_size " + std::to_string(rejection.limit) +
                              " at priority level " + std::to_string(rejection.priority_level) + ")");
    case RejectKind::kTimeout:
      return Status(code, model + "request timed out after " + std::to_string(rejection.limit) +
                              " us in the queue (timeout_action REJECT); it was not executed");
    case RejectKind::kDeadlineExceeded:
      return Status(code, model + "deadline exceeded while queued; the request was not executed");
    case RejectKind::kShutdown:
      return Status(code, model + "batcher shut down before the request was executed");
    case RejectKind::kOverQuota:
      return Status(code, model + "no room for the request's inputs in batch memory");
    case RejectKind::kInvalid:
      return Status(code, model + "invalid request");
  }
  return Status(StatusCode::kInternal, model + "unknown rejection");
}

}  // namespace hotpath::batcher
