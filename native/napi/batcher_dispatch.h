// Where a JS Batcher's sealed batches go, and the events that come back: the
// hand-off point between the batcher thread, an execution target's threads
// and the JS thread (batcher_binding.cc owns one per JS Batcher).
//
// Without a target, Dispatch posts each sealed batch to JS as a 'batch'
// event. With one (batcherSetTarget: an executor), Dispatch hands the batch
// to it on the batcher thread, and its completion (on an executor instance
// thread) gives the instance back to the batcher (InstanceIdle, natively)
// and posts ONE 'executed' event carrying the batch and its outcome. The
// target may be switched at any time; a batch sealed after the switch goes
// to the new one.
//
// Markers (flush, stop) must follow every event caused before them. A batch
// handed to a target is in flight until its 'executed' event is queued, so
// QueueMarker defers a marker until every job started before it has queued
// its event; the completion that finishes the last of them queues it.
//
// TSFN lifetime: each in-flight job holds its own TSFN thread reference
// (acquired when handed over, released after its event is queued), so the
// JS side may release its reference (stop) while jobs run.
//
// Ownership: in-flight jobs keep their target alive. Dropping a target never
// destroys an executor from one of its own threads: the executor binding
// holds every executor until it has stopped (joined its threads).
//
// Thread-safety: every member may be called from any thread; `mutex_` guards
// the target, the in-flight set and the deferred markers, and is never held
// while calling into the target or the batcher.
#pragma once

#include <node_api.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "batcher/batcher.h"
#include "batcher/execution_target.h"

namespace hotpath::napi {

// What travels through a batcher's TSFN queue. Destroying an undelivered
// event (the environment is gone) frees its batch memory.
struct BatcherEvent {
  enum class Kind { kBatch, kExecuted, kRejected, kMarker };
  Kind kind = Kind::kMarker;
  batcher::SealedBatch batch;      // kBatch, kExecuted
  batcher::BatchOutcome outcome;   // kExecuted
  std::vector<batcher::RejectedRequest> rejected;
  uint64_t marker = 0;
};

// Queues an event; on failure (the TSFN is closing) the event is dropped.
// Any thread, while the TSFN is alive.
bool SendBatcherEvent(napi_threadsafe_function tsfn, std::unique_ptr<BatcherEvent> event);

class BatchDispatch : public std::enable_shared_from_this<BatchDispatch> {
 public:
  explicit BatchDispatch(napi_threadsafe_function tsfn) : tsfn_(tsfn) {}

  // The core batcher the completions give instances back to. Set once,
  // before the first Dispatch.
  void set_batcher(std::weak_ptr<batcher::Batcher> batcher) { batcher_ = std::move(batcher); }

  // Replaces the target (null: batches go to JS again). The old one is
  // dropped outside the lock; its in-flight jobs keep it until they finish.
  void SetTarget(std::shared_ptr<batcher::ExecutionTarget> target);

  // Batcher thread: hands `batch` to the target, or posts it to JS.
  void Dispatch(batcher::SealedBatch batch);

  // Queues a marker behind every event of the jobs started so far (at once
  // when none is in flight). False when it cannot be queued (closing).
  bool QueueMarker(uint64_t marker);

  // Jobs handed to a target whose 'executed' event is not yet queued.
  size_t in_flight() const;

 private:
  // The target's `done`, on whichever thread ran (or refused) the batch.
  void Complete(uint64_t job, batcher::SealedBatch batch, batcher::BatchOutcome outcome);
  // Queues the deferred markers no in-flight job precedes. mutex_ held.
  void SendReadyMarkersLocked();

  const napi_threadsafe_function tsfn_;
  std::weak_ptr<batcher::Batcher> batcher_;

  mutable std::mutex mutex_;
  std::shared_ptr<batcher::ExecutionTarget> target_;  // guarded by mutex_
  uint64_t next_job_ = 1;                             // guarded by mutex_
  // In-flight job -> the target running it (kept alive until it finishes).
  std::map<uint64_t, std::shared_ptr<batcher::ExecutionTarget>> in_flight_;  // guarded by mutex_
  // (last job started before the marker, marker), oldest first.
  std::deque<std::pair<uint64_t, uint64_t>> deferred_markers_;  // guarded by mutex_
};

}  // namespace hotpath::napi
