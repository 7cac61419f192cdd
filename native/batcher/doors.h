// Doors: where a batcher's answers go. A door is one JS environment (the main
// thread or a worker_threads thread) that enqueues into process-wide
// batchers (batcher_registry.h). Every request carries the id of the door
// that took it (EnqueueRequest::door), and every answer is posted straight
// to that door, from whichever native thread produced it (the batcher
// thread, an executor or worker-channel thread), never through another JS
// thread. The N-API side implements Door with one ThreadSafeFunction per
// environment (napi/batcher_door.h); tests implement it with a queue.
//
// A batch may hold requests from several doors. The routing functions below
// split it: each door gets ONE event carrying only its own requests and a
// share of the batch (SharedBatch, refcounted by shared_ptr). The batch's
// input and output buffers are freed when the last share goes, whichever
// door (or thread) drops it last: a door releasing its batch, a door's event
// destroyed undelivered, or a door table dropping a closed door's events.
//
// A door that goes away (its environment tears down) is removed from the
// table and closed: posts to it fail and the event is destroyed on the
// posting thread, which releases its share. Nothing ever touches the gone
// environment's memory: a door holds its own state, and the table holds the
// door by shared_ptr, so a Post racing a close sees a closed door, not a
// freed one. Its requests still queued stay in their batches (a batcher
// cannot take back a request whose bytes are copied in) and run with them;
// their answers are dropped as above, so other doors' requests in the same
// batch are answered as usual.
//
// Thread-safety: DoorTable's members may be called from any thread;
// `mutex_` guards the map only and is never held while posting (Post copies
// the door out first). Door::Post must accept calls from any thread,
// concurrently with its own close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "batcher/batch_memory.h"
#include "batcher/batcher.h"
#include "batcher/execution_target.h"

namespace hotpath::batcher {

// 1-based, unique within a DoorTable; 0 names no door.
using DoorId = uint64_t;

// One sealed batch shared by every door with requests in it. Immutable once
// shared (several JS threads read its buffers), so it carries no lock.
struct SharedBatch {
  SealedBatch batch;  // `requests` lists every door's requests
  // An executed batch's outputs (empty otherwise), model order.
  std::vector<BatchBuffer> outputs;
  std::vector<uint64_t> output_bytes;
};

// What one door receives. Move-only; destroying it drops its share.
struct DoorEvent {
  enum class Kind { kBatch, kExecuted, kRejected, kMarker };
  Kind kind = Kind::kMarker;
  uint64_t batcher = 0;                 // the batcher it concerns (registry id)
  std::shared_ptr<SharedBatch> batch;   // kBatch, kExecuted: this door's share
  std::vector<SealedRequest> requests;  // kBatch, kExecuted: this door's requests, row order
  // kExecuted: status, failure, shapes and timing. Its `outputs` and
  // `output_bytes` are empty: they live in `batch`, shared.
  BatchOutcome outcome;
  std::vector<RejectedRequest> rejected;  // kRejected: this door's requests
  uint64_t marker = 0;                    // kMarker
};

class Door {
 public:
  virtual ~Door() = default;
  // Queues `event` for the door's JS thread. Any thread. False once the door
  // is closed: the event is then destroyed (its share released) before
  // Post returns. Must not block and must not call back into a batcher.
  virtual bool Post(std::unique_ptr<DoorEvent> event) = 0;
};

// The doors of a process (Process()), or of a test.
class DoorTable {
 public:
  // The process-wide table. Never destroyed (native threads may post to it
  // while static destructors run at exit).
  static DoorTable& Process();

  DoorTable() = default;
  DoorTable(const DoorTable&) = delete;
  DoorTable& operator=(const DoorTable&) = delete;

  // Registers a door; the table keeps a reference until Remove.
  DoorId Add(std::shared_ptr<Door> door);
  // Later posts to `id` are dropped. The caller closes the door itself.
  void Remove(DoorId id);
  // False (event destroyed) when `id` is not registered, or its door closed.
  bool Post(DoorId id, std::unique_ptr<DoorEvent> event) const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  DoorId next_id_ = 1;                                           // guarded by mutex_
  std::unordered_map<DoorId, std::shared_ptr<Door>> doors_;      // guarded by mutex_
};

// Routing, called by BatchDispatch (batch_dispatch.h) on whatever thread
// produced the answer. Each returns how many doors it posted to
// successfully; events for gone doors are dropped.

// An executed batch (OK or failed): one kExecuted event per door with
// requests in it, all sharing one SharedBatch that takes the batch and the
// outcome's output buffers.
size_t RouteExecuted(const DoorTable& doors, uint64_t batcher, SealedBatch batch, BatchOutcome outcome);

// Rejections: one kRejected event per door.
size_t RouteRejected(const DoorTable& doors, uint64_t batcher, std::vector<RejectedRequest> rejected);

// A batch with no native target, for JS to run: only the `owner` door (the
// environment that created the batcher) runs batches, so it gets the batch
// (kBatch, with its own requests). Requests of other doors cannot be
// answered there: they are rejected as SHUTDOWN ("no target for other
// threads", model `model`). Returns whether the owner got the batch: when
// it did not (gone, or no request of its own), nobody will run it, and the
// caller gives its instance back.
bool RouteToOwner(const DoorTable& doors, uint64_t batcher, DoorId owner, const std::string& model, SealedBatch batch);

}  // namespace hotpath::batcher
