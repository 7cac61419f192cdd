// The onnxruntime worker pool as a batcher ExecutionTarget: a sealed batch
// goes from the batcher thread straight to an idle piscina worker's event
// loop, with no hop through the main thread, and comes back to the main
// thread once (the batcher's 'executed' event).
//
//   pool = WorkerPool::Create();                  // main thread, per generation
//   pool->AddChannel(channel);                    // each worker, once warm
//   target = make_shared<WorkerPoolTarget>(pool, memory, owner, outputs, batched);
//   target->Execute(batch, done);                 // batcher thread
//   ...worker runs it; Finish(token) -> done(batch, outcome), on the worker
//
// No N-API here (so it lives with the batcher and has its own CTest,
// worker_pool_target_test): a channel is anything that can post a job token
// to its worker's loop without blocking (napi/worker_binding.cc: a
// ThreadSafeFunction created in the worker's environment). One job per channel at a time; jobs
// wait in the pool's FIFO while every channel is busy (or none is open yet).
//
// Ownership: the pool owns queued and running jobs (each job owns its batch,
// its pre-allocated outputs and its `done`). A running job is touched only by
// the worker whose channel runs it: Running() hands that thread a pointer
// that stays valid until the same thread calls Finish() or RemoveChannel()
// for that channel; Close() never touches running jobs.
//
// Failures: a closed pool fails new and queued jobs with kShutdown; a channel
// removed with a job running (its worker exited or crashed) fails that job
// with kWorkerCrashed, its batch intact so the caller can re-run it.
//
// Thread-safety: every member may be called from any thread. `mutex_` guards
// the pool's state; channels' Post is called under it (it must not block or
// call back into the pool); `done` callbacks always run outside it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "batcher/batch_memory.h"
#include "batcher/execution_target.h"
#include "common/result.h"

namespace hotpath::batcher {

class WorkerChannel {
 public:
  virtual ~WorkerChannel() = default;
  // Posts job `token` to the worker's loop. Never blocks, never calls back
  // into the pool. False: the channel is closing (its worker is going away).
  virtual bool Post(uint64_t token) = 0;
};

// One sealed batch on its way through a worker.
struct WorkerJob {
  SealedBatch batch;
  // One per model output. An empty buffer: the worker's run allocates that
  // output and Finish copies it into `output_memory`.
  std::vector<BatchBuffer> outputs;
  std::vector<std::vector<int64_t>> output_shapes;  // of the pre-allocated outputs
  std::shared_ptr<BatchMemory> output_memory;
  uint64_t memory_owner = 0;
  std::function<void(SealedBatch, BatchOutcome)> done;
};

struct WorkerPoolStats {
  uint64_t channels = 0, idle_channels = 0, queued = 0, running = 0;
  uint64_t executed = 0, crashed = 0;
};

class WorkerPool {
 public:
  // A new open pool, registered process-wide under a fresh id (> 0).
  static std::shared_ptr<WorkerPool> Create();
  // The registered pool `id`; FAILED_PRECONDITION once closed or unknown.
  static Result<std::shared_ptr<WorkerPool>> Find(uint64_t id);

  uint64_t id() const { return id_; }

  // Queues `job` (hands it to an idle channel at once when there is one).
  // A closed pool fails it with kShutdown, on this thread.
  void Submit(std::unique_ptr<WorkerJob> job);

  // Registers a worker's channel; it may be handed a queued job at once.
  // Returns its id, or 0 when the pool is closed.
  uint64_t AddChannel(std::shared_ptr<WorkerChannel> channel);
  // The worker went away: its running job (if any) fails with
  // kWorkerCrashed, on this thread. Idempotent.
  void RemoveChannel(uint64_t channel);

  // The running job of `token`, or null. See the ownership note above.
  WorkerJob* Running(uint64_t token);
  // Takes the running job of `token` (null when unknown); its channel is idle
  // again and is handed the next queued job.
  std::unique_ptr<WorkerJob> Finish(uint64_t token);

  // Unregisters the pool and fails queued jobs with kShutdown; running jobs
  // finish (or fail) on their workers. Later Submits fail. Idempotent.
  void Close();

  WorkerPoolStats Stats() const;
  bool closed() const;

 private:
  explicit WorkerPool(uint64_t id) : id_(id) {}

  struct Channel {
    std::shared_ptr<WorkerChannel> channel;
    uint64_t running = 0;  // token, 0 when idle
  };
  struct RunningJob {
    std::unique_ptr<WorkerJob> job;
    uint64_t channel = 0;
  };
  // Hands queued jobs to idle channels; drops channels whose Post fails.
  // mutex_ held.
  void PumpLocked();

  const uint64_t id_;
  mutable std::mutex mutex_;
  bool closed_ = false;                                 // guarded by mutex_
  uint64_t next_channel_ = 1;                           // guarded by mutex_
  std::map<uint64_t, Channel> channels_;                // guarded by mutex_
  std::deque<std::unique_ptr<WorkerJob>> queue_;        // guarded by mutex_
  std::map<uint64_t, RunningJob> running_;                 // guarded by mutex_
  uint64_t executed_ = 0, crashed_ = 0;                 // guarded by mutex_
};

// What the target knows of one model output: its element size and per-row
// dims (batched) or full dims; nullopt: unknown until the run (the worker
// allocates it).
struct WorkerOutputSpec {
  uint64_t element_bytes = 0;
  std::optional<std::vector<int64_t>> dims;
};

class WorkerPoolTarget final : public ExecutionTarget {
 public:
  // `batched`: the batcher batches (max_batch_size > 0), so an output with
  // known per-row dims is pre-allocated as [rows, dims...] in
  // `output_memory` under `memory_owner`. Otherwise every output is the
  // worker's.
  WorkerPoolTarget(std::shared_ptr<WorkerPool> pool, std::shared_ptr<BatchMemory> output_memory,
                   uint64_t memory_owner, std::vector<WorkerOutputSpec> outputs, bool batched);

  void Execute(SealedBatch batch,
               std::function<void(SealedBatch, BatchOutcome)> done) override;

 private:
  const std::shared_ptr<WorkerPool> pool_;
  const std::shared_ptr<BatchMemory> output_memory_;
  const uint64_t memory_owner_;
  const std::vector<WorkerOutputSpec> outputs_;
  const bool batched_;
};

// A failed outcome.
BatchOutcome FailedOutcome(ExecutionFailure failure, Status status);

}  // namespace hotpath::batcher
