// The batching policy: pure functions over request metadata, with the time
// passed in. No threads, no clock reads, no memory: the thread loop
// (batcher.h) owns the state, applies the decisions and copies the bytes.
//
// Batches are assembled in place (each request is copied once, straight into
// its batch's buffers), so a request's batch is chosen when it arrives
// (Place) and a batch is never split or re-cut later. Triton's rules, as they
// read under that constraint:
//   - A request joins the growing batch of its shape key (non-batch dims of
//     every input) while its rows fit under the largest preferred batch size
//     (max_batch_size without preferred sizes). Otherwise that batch closes and
//     the request opens a new one. Rows are never split; different shapes
//     never mix; max_batch_size 0 gives every request a batch of its own.
//   - A batch is ready when it is closed or full, when its rows are a
//     preferred size (the request completing it sends it at once), when its
//     oldest request has waited max_queue_delay, or always with a delay of 0
//     (work-conserving). Decide seals ready batches only while instances are
//     idle; with every instance busy, open batches keep growing instead.
//     Since batches stop at the largest preferred size, the batch sent to a
//     freed instance is the largest one that could be formed. Unlike Triton,
//     a batch that grew past a smaller preferred size while instances were
//     busy goes as it is rather than being cut back.
//   - Ready batches go in priority order: the best level among their live
//     requests (1 is highest), a request past a DELAY timeout counting after
//     undelayed requests of its level; then the oldest request. With
//     preserve_ordering, strictly by arrival (the responses are released in
//     arrival order anyway, so running a later batch first gains nothing).
//   - A request past its gRPC deadline, or past its queue timeout with
//     timeout_action REJECT, is expired and never executed; DELAY keeps it.
//
// Thread-safety: every function is pure and reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "batcher/types.h"

namespace hotpath::batcher {

// Non-batch dims of every input, flattened as [rank0, dims0..., rank1, ...].
// Requests share a batch only when their keys are equal.
using ShapeKey = std::vector<int64_t>;

// What the policy knows about one accepted, not yet dispatched request.
struct QueuedRequest {
  uint64_t id = 0;        // the caller's id, opaque here
  uint64_t door = 0;      // the caller's door, opaque here
  uint64_t sequence = 0;  // arrival order within the batcher; unique, the key
  uint32_t priority_level = 1;
  uint32_t rows = 1;
  TimePoint enqueued{};
  std::optional<TimePoint> timeout_at;  // enqueued + effective queue timeout
  TimeoutAction timeout_action = TimeoutAction::kReject;
  std::optional<TimePoint> deadline;  // the caller's deadline
  RequestState state = RequestState::kCopying;  // kCopying, kQueued or kDelayed
};

// A batch being assembled.
struct OpenBatch {
  uint64_t id = 0;
  ShapeKey shape;
  // Rows handed out so far, including those of expired requests: their rows
  // stay as holes in the buffers until the batch is sealed and compacted.
  uint32_t reserved_rows = 0;
  std::vector<uint64_t> bytes_reserved;  // per input, holes included
  std::vector<uint64_t> bytes_capacity;  // per input
  bool closed = false;                   // takes no more requests
  uint32_t copies_in_flight = 0;         // a batch is not sealed while > 0
  std::vector<QueuedRequest> requests;   // live requests, in row order
};

// A request asking for a place.
struct Arrival {
  uint32_t priority_level = 1;  // already EffectiveLevel
  uint32_t rows = 1;
  ShapeKey shape;
  std::vector<uint64_t> input_bytes;  // per input
  std::optional<TimePoint> deadline;
};

struct Placement {
  enum class Kind { kJoin, kOpen, kReject };
  Kind kind = Kind::kOpen;
  size_t batch_index = 0;               // kJoin: index of the batch to join
  std::optional<size_t> close_index;    // kOpen: same-shape batch to close first
  std::vector<uint64_t> capacity_bytes; // kOpen: per-input buffer sizes
  Rejection rejection;                  // kReject: queue full or deadline passed
};

// Triton: 0, or a level above priority_levels, means the default level.
// Always in [1, max(priority_levels, 1)].
uint32_t EffectiveLevel(const BatcherConfig& config, uint32_t requested_priority);

// The queue timeout for a request asking for `requested_timeout_us` (0: none):
// the default, lowered (never raised) when the policy allows overrides.
// nullopt: no timeout.
std::optional<Duration> EffectiveTimeout(const QueuePolicy& policy, uint64_t requested_timeout_us);

// Rows at which a batch stops growing: the largest preferred size, else
// max_batch_size (1 when batching is off).
uint32_t MaxPreferredBatchSize(const BatcherConfig& config);
bool IsPreferredBatchSize(const BatcherConfig& config, uint32_t rows);

// Where a request goes. `queued_per_level[l - 1]` counts live requests of
// level l (size max(priority_levels, 1)).
Placement Place(const BatcherConfig& config, std::span<const OpenBatch> batches,
                const Arrival& arrival, std::span<const uint32_t> queued_per_level,
                TimePoint now);

struct Expiry {
  uint64_t sequence = 0;  // QueuedRequest::sequence
  uint64_t batch_id = 0;
  RejectKind kind = RejectKind::kTimeout;  // kTimeout or kDeadlineExceeded
};

struct Decision {
  std::vector<Expiry> expired;         // reject these now; never executed
  std::vector<uint64_t> delayed;       // sequences newly past a DELAY timeout
  std::vector<uint64_t> seal;          // batch ids, in dispatch order, <= idle instances
  std::vector<uint64_t> discard;       // batch ids left without live requests
  std::optional<TimePoint> next_wakeup;  // nullopt: only an event can change anything
};

// The next step at `now` with `idle_instances` free. Requests being expired
// or discarded by this decision are already left out of readiness, ordering
// and wake-up. Batches with copies in flight are never sealed or discarded
// (finishing a copy is an event).
Decision Decide(const BatcherConfig& config, std::span<const OpenBatch> batches,
                uint32_t idle_instances, TimePoint now);

// The time the loop sleeps to after a pass at `now` (nullopt: until an
// event). Decide's next_wakeup, brought forward to now + max_queue_delay
// (the linger) when the pass followed an event (an enqueue that woke it, an
// instance coming back, Create; not its own timer), an instance is idle and
// the delay is positive.
//
// Why: a request that opens a batch while the loop sleeps without a timer
// must wake it (a futex wake on the enqueuing thread: per batch, the largest
// single cost of an enqueue under load). A request that arrives at t >= now
// needs a wake-up no earlier than t + max_queue_delay >= the linger, so
// while the loop lingers Enqueue's rule (wake only for an earlier time than
// the loop's timer) skips the wake; the loop wakes at the linger, decides
// again and sleeps to the batch's own time. It never wakes later than
// Decide asks, so no seal is delayed. A linger that finds nothing costs one
// timer wake of the loop thread, once per event, never on an idle batcher.
std::optional<TimePoint> LoopTimer(const BatcherConfig& config, const Decision& decision,
                                   uint32_t idle_instances, TimePoint now, bool after_event);

}  // namespace hotpath::batcher
