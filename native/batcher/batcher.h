// The dynamic batcher of one model version: a thread loop around the pure
// policy (policy.h).
//
//   auto batcher = Batcher::Create(config, std::make_shared<SteadyClock>(),
//                                  std::make_shared<HostBatchMemory>(), callbacks);
//   batcher.value()->Enqueue(request);   // from any thread; copies the inputs once
//   ...callbacks.dispatch(SealedBatch)   // on the batcher thread, or in Enqueue
//   batcher.value()->InstanceIdle();     // when that batch's instance is free again
//
// Enqueue copies the request's input bytes straight into its open batch's
// buffers (BatchMemory) and returns. A timer thread seals batches when the
// policy says so and hands them to `dispatch`; when a batch is ready the
// moment a request lands (no batching, a preferred size reached, no delay)
// and the model does not preserve ordering, Enqueue seals and dispatches it
// itself, on the calling thread, before it returns; each sealed batch occupies one
// instance until InstanceIdle(). Accepted requests that are never executed
// (timeout, deadline, shutdown) are reported through `reject`. Every accepted
// request ends in exactly one of the two callbacks.
//
// Thread-safety: all public members may be called from any thread, except that
// the Batcher must not be destroyed (or Stop()ped) from inside its own
// callbacks. Callbacks run without any batcher lock held, so they may call
// Enqueue, InstanceIdle or Stats.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "batcher/batch_memory.h"
#include "batcher/clock.h"
#include "batcher/types.h"
#include "common/result.h"

namespace hotpath::batcher {

namespace detail {
struct BatcherState;
}

struct RequestInput {
  const void* data = nullptr;  // borrowed: only read during Enqueue
  uint64_t bytes = 0;
  // Without the batch dimension; the full shape when max_batch_size is 0.
  std::vector<int64_t> dims;
};

struct EnqueueRequest {
  uint64_t id = 0;      // the caller's id, echoed back; the batcher never reads it
  // The door (JS environment) that took the request, echoed back like `id`
  // so its answer can be routed there (doors.h); 0 when the caller has none.
  // Ids are unique per door only, so (door, id) names a request.
  uint64_t door = 0;
  uint32_t rows = 1;    // the batch dimension, >= 1 (1 when max_batch_size is 0)
  uint32_t priority = 0;     // "priority" parameter; 0 or out of range: default level
  uint64_t timeout_us = 0;   // "timeout" parameter; 0: none; may only lower the default
  std::optional<TimePoint> deadline;  // gRPC deadline, on the batcher's clock
  std::vector<RequestInput> inputs;   // exactly config.input_count, model order
};

struct SealedRequest {
  uint64_t id = 0;
  // Dense arrival number over accepted requests (0, 1, 2, ...). Each appears
  // exactly once across SealedBatch and RejectedRequest, so a caller with
  // preserve_ordering can release responses in sequence order.
  uint64_t sequence = 0;
  uint32_t rows = 0;
  uint32_t row_offset = 0;  // first row of this request in the batch
  uint32_t priority_level = 1;
  Duration queue_time{};    // enqueue to seal
  uint64_t door = 0;        // EnqueueRequest::door, echoed
};

struct SealedInput {
  BatchBuffer buffer;          // owns the memory; data packed from offset 0
  uint64_t bytes = 0;          // bytes in use
  std::vector<int64_t> shape;  // [rows, dims...]; dims alone when max_batch_size is 0
};

// Move-only; destroying it (or its buffers) frees the batch memory.
struct SealedBatch {
  uint64_t batch_id = 0;
  uint32_t rows = 0;
  std::vector<SealedRequest> requests;  // in row order
  std::vector<SealedInput> inputs;      // model input order
};

struct RejectedRequest {
  uint64_t id = 0;
  uint64_t sequence = 0;
  Rejection rejection;  // ToStatus(rejection) is the answer
  Duration queue_time{};
  uint64_t door = 0;    // EnqueueRequest::door, echoed
};

// Enqueue's answer: accepted (ok()), or refused, with `status` the answer and
// `kind` why. `kind` is unset on acceptance and for a failure that is no
// refusal (a BatchMemory error other than RESOURCE_EXHAUSTED: a fault).
struct EnqueueResult {
  Status status;
  std::optional<RejectKind> kind;

  bool ok() const { return status.ok(); }
  StatusCode code() const { return status.code(); }
};

// Both must be set and must not throw (they run on the loop thread, or on a
// thread inside Enqueue).
struct BatcherCallbacks {
  // Runs on the batcher thread, or on an enqueuing thread that found a batch
  // ready (see above); keep it short and non-blocking (hand off to a
  // ThreadSafeFunction). The batch has taken one idle instance.
  std::function<void(SealedBatch)> dispatch;
  // Runs on the batcher thread, on an enqueuing thread with a dispatch, or at
  // shutdown on the thread stopping it.
  std::function<void(std::vector<RejectedRequest>)> reject;
};

// Counters since Create, read at scrape time (Triton ModelStatistics names).
struct BatcherStats {
  uint64_t pending_requests = 0;     // accepted, not yet dispatched or rejected
  uint64_t open_batches = 0;
  uint32_t idle_instances = 0;
  uint64_t execution_count = 0;      // sealed batches dispatched
  uint64_t inference_count = 0;      // rows in those batches
  uint64_t dispatched_requests = 0;  // requests in those batches ("queue" count)
  uint64_t queue_ns = 0;             // their summed queue time ("queue" ns)
  uint64_t rejected_queue_full = 0;
  uint64_t rejected_timeout = 0;
  uint64_t rejected_deadline = 0;    // at enqueue or while queued
  uint64_t rejected_shutdown = 0;
  uint64_t delayed = 0;              // requests past a DELAY timeout
  uint64_t memory_failures = 0;      // Enqueue refused by BatchMemory
};

class Batcher {
 public:
  // INVALID_ARGUMENT for a bad config or missing callbacks; INTERNAL when the
  // thread cannot start. `clock` and `memory` are shared with the caller.
  static Result<std::unique_ptr<Batcher>> Create(BatcherConfig config,
                                                 std::shared_ptr<Clock> clock,
                                                 std::shared_ptr<BatchMemory> memory,
                                                 BatcherCallbacks callbacks);
  // Stop(), then frees everything.
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Accepts the request and copies its inputs, or refuses it, saying why:
  // kQueueFull and kShutdown (UNAVAILABLE), kDeadlineExceeded (the deadline
  // already passed), kOverQuota (RESOURCE_EXHAUSTED from BatchMemory, with its
  // message), kInvalid (INVALID_ARGUMENT from the guard checks). Any other
  // BatchMemory failure comes back as is, without a kind. A refused request
  // is never reported through the callbacks.
  EnqueueResult Enqueue(const EnqueueRequest& request);

  // An instance finished its batch (or came back). FAILED_PRECONDITION if all
  // instance_count instances are already idle.
  Status InstanceIdle();
  // An instance was taken by work outside the batcher (warm-up, restart).
  // FAILED_PRECONDITION if none is idle.
  Status InstanceBusy();

  // Stops the thread and rejects every pending request with SHUTDOWN (through
  // `reject`, on the calling thread). Later Enqueues get UNAVAILABLE.
  // Idempotent; concurrent callers all return after the first finishes.
  void Stop();

  BatcherStats Stats() const;

  // Test hook: returns once the loop has acted on every event before the call
  // (enqueues, instance notices, ManualClock advances) and its callbacks have
  // returned. With ManualClock this makes thread tests deterministic.
  void Flush();

 private:
  explicit Batcher(std::unique_ptr<detail::BatcherState> state);
  std::unique_ptr<detail::BatcherState> state_;
};

}  // namespace hotpath::batcher
