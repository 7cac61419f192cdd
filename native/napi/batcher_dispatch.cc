// The batcher's dispatch hand-off. See batcher_dispatch.h.
#include "napi/batcher_dispatch.h"

namespace hotpath::napi {

namespace bt = hotpath::batcher;

bool SendBatcherEvent(napi_threadsafe_function tsfn, std::unique_ptr<BatcherEvent> event) {
  if (napi_call_threadsafe_function(tsfn, event.get(), napi_tsfn_nonblocking) != napi_ok) return false;
  event.release();  // owned by the queue; the call-JS callback frees it
  return true;
}

namespace {

bool SendMarker(napi_threadsafe_function tsfn, uint64_t marker) {
  auto event = std::make_unique<BatcherEvent>();
  event->kind = BatcherEvent::Kind::kMarker;
  event->marker = marker;
  return SendBatcherEvent(tsfn, std::move(event));
}

}  // namespace

void BatchDispatch::SetTarget(std::shared_ptr<bt::ExecutionTarget> target) {
  std::shared_ptr<bt::ExecutionTarget> old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    old = std::move(target_);
    target_ = std::move(target);
  }
  // `old` goes here, outside the lock (it may stop a closed executor).
}

void BatchDispatch::Dispatch(bt::SealedBatch batch) {
  std::shared_ptr<bt::ExecutionTarget> target;
  uint64_t job = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The job's own TSFN reference; none while the TSFN is closing
    // (teardown), and then the batch goes the plain way (and is dropped).
    if (target_ && napi_acquire_threadsafe_function(tsfn_) == napi_ok) {
      target = target_;
      job = next_job_++;
      in_flight_.emplace(job, target);
    }
  }
  if (!target) {
    auto event = std::make_unique<BatcherEvent>();
    event->kind = BatcherEvent::Kind::kBatch;
    event->batch = std::move(batch);
    SendBatcherEvent(tsfn_, std::move(event));
    return;
  }
  std::shared_ptr<BatchDispatch> self = shared_from_this();
  target->Execute(std::move(batch), [self, job](bt::SealedBatch done_batch, bt::BatchOutcome outcome) {
    self->Complete(job, std::move(done_batch), std::move(outcome));
  });
}

void BatchDispatch::Complete(uint64_t job, bt::SealedBatch batch, bt::BatchOutcome outcome) {
  // The instance is free now: the batcher may seal the next batch for it
  // while JS is still reading this one. A stopped batcher just counts it.
  if (std::shared_ptr<bt::Batcher> batcher = batcher_.lock()) (void)batcher->InstanceIdle();
  auto event = std::make_unique<BatcherEvent>();
  event->kind = BatcherEvent::Kind::kExecuted;
  event->batch = std::move(batch);
  event->outcome = std::move(outcome);
  std::shared_ptr<bt::ExecutionTarget> finished;
  {
    // Under the lock, so a marker deferred behind this job follows its event.
    std::lock_guard<std::mutex> lock(mutex_);
    SendBatcherEvent(tsfn_, std::move(event));
    auto it = in_flight_.find(job);
    if (it != in_flight_.end()) {
      finished = std::move(it->second);
      in_flight_.erase(it);
    }
    SendReadyMarkersLocked();
  }
  napi_release_threadsafe_function(tsfn_, napi_tsfn_release);  // the job's reference: never touch tsfn_ after
}

bool BatchDispatch::QueueMarker(uint64_t marker) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t last_started = next_job_ - 1;
  if (in_flight_.empty() || in_flight_.begin()->first > last_started) return SendMarker(tsfn_, marker);
  // An in-flight job holds a TSFN reference, so the one that completes last
  // can still queue it.
  deferred_markers_.emplace_back(last_started, marker);
  return true;
}

size_t BatchDispatch::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_.size();
}

void BatchDispatch::SendReadyMarkersLocked() {
  while (!deferred_markers_.empty() &&
         (in_flight_.empty() || in_flight_.begin()->first > deferred_markers_.front().first)) {
    SendMarker(tsfn_, deferred_markers_.front().second);
    deferred_markers_.pop_front();
  }
}

}  // namespace hotpath::napi
