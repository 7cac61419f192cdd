// The batcher's dispatch hand-off. See batch_dispatch.h.
#include "batcher/batch_dispatch.h"

namespace hotpath::batcher {

bool BatchDispatch::PostMarker(DoorId door, uint64_t marker) const {
  auto event = std::make_unique<DoorEvent>();
  event->kind = DoorEvent::Kind::kMarker;
  event->batcher = batcher_id_;
  event->marker = marker;
  return doors_.Post(door, std::move(event));
}

void BatchDispatch::SetTarget(std::shared_ptr<ExecutionTarget> target) {
  std::shared_ptr<ExecutionTarget> old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    old = std::move(target_);
    target_ = std::move(target);
  }
  // `old` goes here, outside the lock (it may stop a closed executor).
}

void BatchDispatch::Dispatch(SealedBatch batch) {
  std::shared_ptr<ExecutionTarget> target;
  uint64_t job = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (target_) {
      target = target_;
      job = next_job_++;
      in_flight_.emplace(job, target);
    }
  }
  if (!target) {
    if (!RouteToOwner(doors_, batcher_id_, owner_, model_, std::move(batch))) {
      // Nobody runs it: its instance is free again at once.
      if (std::shared_ptr<Batcher> batcher = batcher_.lock()) (void)batcher->InstanceIdle();
    }
    return;
  }
  std::shared_ptr<BatchDispatch> self = shared_from_this();
  target->Execute(std::move(batch), [self, job](SealedBatch done_batch, BatchOutcome outcome) {
    self->Complete(job, std::move(done_batch), std::move(outcome));
  });
}

void BatchDispatch::Reject(std::vector<RejectedRequest> rejected) {
  RouteRejected(doors_, batcher_id_, std::move(rejected));
}

void BatchDispatch::Complete(uint64_t job, SealedBatch batch, BatchOutcome outcome) {
  // The instance is free now: the batcher may seal the next batch for it
  // while JS is still reading this one. A stopped batcher just counts it.
  if (std::shared_ptr<Batcher> batcher = batcher_.lock()) (void)batcher->InstanceIdle();
  std::shared_ptr<ExecutionTarget> finished;
  {
    // Under the lock, so a marker deferred behind this job follows its events.
    std::lock_guard<std::mutex> lock(mutex_);
    RouteExecuted(doors_, batcher_id_, std::move(batch), std::move(outcome));
    auto it = in_flight_.find(job);
    if (it != in_flight_.end()) {
      finished = std::move(it->second);
      in_flight_.erase(it);
    }
    SendReadyMarkersLocked();
  }
  // `finished` goes here, outside the lock.
}

bool BatchDispatch::QueueMarker(DoorId door, uint64_t marker) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t last_started = next_job_ - 1;
  // Every job in flight started at or before last_started (ids come from next_job_ under this lock).
  if (in_flight_.empty()) return PostMarker(door, marker);
  deferred_markers_.emplace_back(last_started, door, marker);
  return true;
}

size_t BatchDispatch::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_.size();
}

void BatchDispatch::SendReadyMarkersLocked() {
  while (!deferred_markers_.empty() &&
         (in_flight_.empty() || in_flight_.begin()->first > std::get<0>(deferred_markers_.front()))) {
    const auto [last, door, marker] = deferred_markers_.front();
    (void)last;
    PostMarker(door, marker);
    deferred_markers_.pop_front();
  }
}

}  // namespace hotpath::batcher
