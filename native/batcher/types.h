// Value types shared by the batching policy (policy.h) and the thread loop
// (batcher.h): the configuration (Triton's `dynamic_batching` block), request
// states and typed rejection reasons.
//
// Time is a steady-clock time point. Real code takes it from SteadyClock, tests
// from ManualClock (clock.h); the policy never reads a clock itself.
//
// Thread-safety: plain values, no internal synchronisation.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/failure_kind.h"
#include "common/status.h"

namespace hotpath::batcher {

using TimePoint = std::chrono::steady_clock::time_point;
using Duration = std::chrono::nanoseconds;

enum class TimeoutAction { kReject, kDelay };

// Triton's ModelQueuePolicy, for one priority level.
struct QueuePolicy {
  TimeoutAction timeout_action = TimeoutAction::kReject;
  // 0: requests never time out in the queue.
  uint64_t default_timeout_us = 0;
  // A request may ask for a shorter (never a longer) timeout. With a default
  // of 0 (no timeout) any requested timeout is shorter, so it applies.
  bool allow_timeout_override = false;
  // Requests of this level waiting in the batcher (not yet dispatched);
  // 0: unbounded.
  uint32_t max_queue_size = 0;
};

// One batcher per model version. Field names follow model_config.proto.
struct BatcherConfig {
  // "name" or "name:version"; appears in rejection messages.
  std::string model_name;
  // Inputs per request, in model order; every request must carry exactly these.
  uint32_t input_count = 1;
  // Instances of the model that can run a batch at once (idle at start).
  uint32_t instance_count = 1;
  // 0: no batching. Every request is its own batch, the queue policy still
  // applies, and input shapes are passed through without a batch dimension.
  uint32_t max_batch_size = 0;
  // Each in [1, max_batch_size]; order and duplicates do not matter.
  std::vector<uint32_t> preferred_batch_sizes;
  // 0: work-conserving (a batch goes as soon as an instance is idle).
  uint64_t max_queue_delay_us = 0;
  // Responses must leave in arrival order. The batcher then dispatches ready
  // batches oldest-first and numbers requests densely (see SealedRequest).
  bool preserve_ordering = false;
  // 0: one level. Otherwise levels are 1..priority_levels, 1 the highest.
  uint32_t priority_levels = 0;
  // In [1, priority_levels] when priority_levels > 0; ignored otherwise.
  uint32_t default_priority_level = 0;
  QueuePolicy default_queue_policy;
  // Per-level overrides of default_queue_policy (Triton's priority_queue_policy).
  std::map<uint32_t, QueuePolicy> priority_queue_policy;
  // Passed to BatchMemory with every buffer (e.g. the arena owner of the
  // model version, which decides the tenant charged).
  uint64_t memory_owner = 0;
};

// INVALID_ARGUMENT naming the field when `config` is inconsistent. TypeScript
// validates the model configuration first; this is the native guard.
Status ValidateConfig(const BatcherConfig& config);

// The queue policy that governs `level` (an override or the default).
const QueuePolicy& PolicyForLevel(const BatcherConfig& config, uint32_t level);

// Lifecycle of a request inside the batcher. Terminal states are reached once.
enum class RequestState {
  kCopying,   // slot reserved in an open batch; input bytes being copied
  kQueued,    // bytes in place, waiting for its batch to be sealed
  kDelayed,   // timed out with timeout_action DELAY: kept, ordered after others
  kBatched,   // terminal: sealed into a batch and handed to dispatch
  kRejected,  // terminal: answered with a Rejection, never executed
};
const char* RequestStateName(RequestState state);

// Why a request was refused or dropped. Each crosses to JS as its name, with
// its status code and its kind in the shared vocabulary (common/failure_kind.h).
enum class RejectKind {
  kQueueFull,         // UNAVAILABLE, at enqueue
  kTimeout,           // DEADLINE_EXCEEDED: queue timeout with timeout_action REJECT
  kDeadlineExceeded,  // DEADLINE_EXCEEDED: the caller's (gRPC) deadline passed
  kShutdown,          // UNAVAILABLE: the batcher stopped with the request pending
  kOverQuota,         // RESOURCE_EXHAUSTED, at enqueue: BatchMemory had no room
  kInvalid,           // INVALID_ARGUMENT, at enqueue: the request fails the guard checks
};
// "QUEUE_FULL", "TIMEOUT", "DEADLINE_EXCEEDED", "SHUTDOWN", "OVER_QUOTA",
// "INVALID".
const char* RejectKindName(RejectKind kind);

// Every rejection reason (for tests and the exported vocabulary).
inline constexpr RejectKind kAllRejectKinds[] = {
    RejectKind::kQueueFull, RejectKind::kTimeout,   RejectKind::kDeadlineExceeded,
    RejectKind::kShutdown,  RejectKind::kOverQuota, RejectKind::kInvalid,
};

// The status code a rejection is answered with (ToStatus's code).
StatusCode RejectStatusCode(RejectKind kind);

// Its kind: QUEUE_FULL queue_full, TIMEOUT timeout, DEADLINE_EXCEEDED
// deadline, SHUTDOWN shutdown, OVER_QUOTA over_quota, INVALID invalid.
FailureKind KindOf(RejectKind kind);

struct Rejection {
  RejectKind kind = RejectKind::kShutdown;
  std::string model;
  uint32_t priority_level = 0;
  // kQueueFull: the level's max_queue_size. kTimeout: the timeout in µs.
  uint64_t limit = 0;
};

// The Status a caller should answer with, e.g. UNAVAILABLE "model 'ranker':
// queue full (max_queue_size 64 at priority level 1)".
Status ToStatus(const Rejection& rejection);

}  // namespace hotpath::batcher
