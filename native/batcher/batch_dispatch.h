// Where a batcher's sealed batches go, and how its answers reach the doors
// (doors.h) that took the requests: the hand-off point between the batcher
// thread, an execution target's threads and the JS threads. One per
// process-wide batcher (batcher_registry.h).
//
// Without a target, Dispatch posts each sealed batch to the owner door (the
// environment that created the batcher) as a kBatch event, for JS to run
// (RouteToOwner: other doors' requests in it are rejected). With one (an
// executor, or an onnxruntime worker pool), Dispatch hands the batch to it on
// the batcher thread, and its completion (on the target's thread) gives the
// instance back to the batcher (InstanceIdle, natively) and posts ONE
// kExecuted event to each door with requests in the batch, all sharing its
// buffers (RouteExecuted). The target may be switched at any time; a batch
// sealed after the switch goes to the new one. Rejections go to each
// request's own door (Reject).
//
// Markers (flush, stop) must follow every event caused before them, on the
// door that asked. A batch handed to a target is in flight until its
// events are posted, so QueueMarker defers a marker until every job started
// before it has posted; the completion that finishes the last of them
// posts it.
//
// Lifetime: posts never outlive a door's JS side, because a closed door
// drops them (doors.h), so jobs hold no door reference. In-flight jobs keep
// their target and this dispatch alive. Dropping a target never destroys an
// executor from one of its own threads: the executor binding holds every
// executor until it has stopped (joined its threads).
//
// Thread-safety: every member may be called from any thread; `mutex_` guards
// the target, the in-flight set and the deferred markers. It is held while
// posting a completion's events and its ready markers (so a marker never
// overtakes the events it follows; posting never blocks and never calls
// back), and never while calling into the target or the batcher.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "batcher/batcher.h"
#include "batcher/doors.h"
#include "batcher/execution_target.h"

namespace hotpath::batcher {

class BatchDispatch : public std::enable_shared_from_this<BatchDispatch> {
 public:
  // `doors` outlives this (DoorTable::Process(), or a test's). `batcher_id`
  // tags every event; `owner` runs batches without a target; `model` names
  // the model in rejections made here.
  BatchDispatch(const DoorTable& doors, uint64_t batcher_id, DoorId owner, std::string model)
      : doors_(doors), batcher_id_(batcher_id), owner_(owner), model_(std::move(model)) {}

  // The core batcher the completions give instances back to. Set once,
  // before the first Dispatch.
  void set_batcher(std::weak_ptr<Batcher> batcher) { batcher_ = std::move(batcher); }

  uint64_t batcher_id() const { return batcher_id_; }
  DoorId owner() const { return owner_; }

  // Replaces the target (null: batches go to the owner's JS again). The old
  // one is dropped outside the lock; its in-flight jobs keep it until they
  // finish.
  void SetTarget(std::shared_ptr<ExecutionTarget> target);

  // Batcher thread (or an enqueuing thread): hands `batch` to the target, or
  // posts it to the owner door.
  void Dispatch(SealedBatch batch);

  // The batcher's `reject` callback: each request to its own door.
  void Reject(std::vector<RejectedRequest> rejected);

  // Posts a marker to `door` behind every event of the jobs started so far
  // (at once when none is in flight). False when it cannot be posted (the
  // door is gone).
  bool QueueMarker(DoorId door, uint64_t marker);

  // Jobs handed to a target whose events are not yet posted.
  size_t in_flight() const;

 private:
  // The target's `done`, on whichever thread ran (or refused) the batch.
  void Complete(uint64_t job, SealedBatch batch, BatchOutcome outcome);
  // Posts the deferred markers no in-flight job precedes. mutex_ held.
  void SendReadyMarkersLocked();
  bool PostMarker(DoorId door, uint64_t marker) const;

  const DoorTable& doors_;
  const uint64_t batcher_id_;
  const DoorId owner_;
  const std::string model_;
  std::weak_ptr<Batcher> batcher_;

  mutable std::mutex mutex_;
  std::shared_ptr<ExecutionTarget> target_;  // guarded by mutex_
  uint64_t next_job_ = 1;                    // guarded by mutex_
  // In-flight job -> the target running it (kept alive until it finishes).
  std::map<uint64_t, std::shared_ptr<ExecutionTarget>> in_flight_;  // guarded by mutex_
  // (last job started before the marker, door, marker), oldest first.
  std::deque<std::tuple<uint64_t, DoorId, uint64_t>> deferred_markers_;  // guarded by mutex_
};

}  // namespace hotpath::batcher
