// Internal state of a Batcher (batcher.h). Not part of the public API.
//
// Locking: one mutex, `mu`, guards every field marked (mu). It is held only
// for bookkeeping: never while copying request bytes, allocating or freeing
// batch memory, or running callbacks. Lock order: ManualClock's waker mutex,
// then `mu`; nothing is acquired while `mu` is held except Clock::Now(),
// which takes no lock.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "batcher/batch_memory.h"
#include "batcher/batcher.h"
#include "batcher/clock.h"
#include "batcher/policy.h"

namespace hotpath::batcher::detail {

// Where one request's rows sit in its batch. Its bytes are described by
// BatchStorage::slot_bytes, not here, so a slot owns no heap memory.
struct Slot {
  uint64_t sequence = 0;
  uint32_t rows = 0;
  uint32_t row_offset = 0;
};

// One input's bytes of one slot in its batch's buffer.
struct SlotBytes {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// The memory side of an OpenBatch, keyed by batch id. Slot order is row order
// and includes expired requests (holes) until the batch is sealed.
struct BatchStorage {
  std::vector<BatchBuffer> buffers;          // per input
  std::vector<std::vector<int64_t>> dims;    // per input, from the opener
  std::vector<Slot> slots;
  // Slot-major, buffers.size() entries per slot: slot k's input i is at
  // k * buffers.size() + i. Flat, so adding a request allocates nothing
  // once the vectors have grown (they are reserved when the batch opens).
  std::vector<SlotBytes> slot_bytes;
};

// A batch the loop took out of the open set; delivered outside the lock.
struct SealedWork {
  OpenBatch meta;        // live requests only
  BatchStorage storage;
  TimePoint sealed_at{};
};

// What one loop pass hands to the callbacks, outside the lock.
struct LoopWork {
  std::vector<RejectedRequest> rejected;
  std::vector<SealedWork> sealed;
  std::vector<BatchStorage> discarded;  // freed when this is destroyed
  bool empty() const { return rejected.empty() && sealed.empty() && discarded.empty(); }
};

struct BatcherState {
  BatcherState(BatcherConfig c, std::shared_ptr<Clock> k, std::shared_ptr<BatchMemory> m,
               BatcherCallbacks cb)
      : config(std::move(c)), clock(std::move(k)), memory(std::move(m)),
        callbacks(std::move(cb)) {}

  // Immutable after Create.
  const BatcherConfig config;
  const std::shared_ptr<Clock> clock;
  const std::shared_ptr<BatchMemory> memory;
  const BatcherCallbacks callbacks;

  mutable std::mutex mu;
  // The loop waits here for wake_pending or stop, and nothing else does, so
  // a notify on it is a wake of the loop.
  std::condition_variable cv;
  // Stop() waits here for copies_in_flight and deliveries_in_flight to
  // drain; Enqueue notifies it only once `stop` is set. Apart from `cv` so
  // an Enqueue that dispatched a batch itself does not wake the loop for
  // nothing (a futex wake, and a turn of the loop on a core, per batch).
  std::condition_variable drained_cv;
  // Flush() waits here for quiet_seq to catch up.
  std::condition_variable quiet_cv;

  // Set once by Stop(); read by the loop without `mu` as well.
  std::atomic<bool> stop{false};
  bool stopped = false;            // (mu) Stop() has finished its work
  bool loop_exited = false;        // (mu)
  bool wake_pending = false;       // (mu) an event since the loop's last pass
  uint64_t wake_seq = 0;           // (mu) events so far
  uint64_t quiet_seq = 0;          // (mu) events the loop has fully acted on
  std::optional<TimePoint> next_wakeup;  // (mu) the loop's timer, for Enqueue

  std::vector<OpenBatch> batches;                         // (mu) policy view
  std::unordered_map<uint64_t, BatchStorage> storage;     // (mu) by batch id
  std::vector<uint32_t> queued_per_level;                 // (mu) live requests
  uint32_t idle_instances = 0;                            // (mu)
  uint64_t copies_in_flight = 0;                          // (mu) all batches
  uint64_t deliveries_in_flight = 0;  // (mu) Enqueues dispatching a batch themselves
  uint64_t next_batch_id = 1;                             // (mu)
  uint64_t next_sequence = 0;                             // (mu)
  BatcherStats stats;                                     // (mu) counters only

  uint64_t clock_subscription = 0;  // set in Create, before the thread starts
  std::thread thread;               // joined by Stop()
  std::once_flag stop_once;
};

}  // namespace hotpath::batcher::detail
