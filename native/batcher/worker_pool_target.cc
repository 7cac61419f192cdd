// WorkerPool and WorkerPoolTarget. See worker_pool_target.h.
#include "batcher/worker_pool_target.h"

#include <atomic>
#include <string>
#include <utility>

namespace hotpath::batcher {

namespace {

// Process-wide: pools are created on the main thread and joined by workers
// (other environments) by id.
std::mutex registry_mutex;
std::map<uint64_t, std::shared_ptr<WorkerPool>> registry;  // guarded by registry_mutex
uint64_t next_pool_id = 1;                                  // guarded by registry_mutex

void Fail(std::unique_ptr<WorkerJob> job, ExecutionFailure failure, const std::string& message) {
  const StatusCode code = failure == ExecutionFailure::kShutdown ? StatusCode::kUnavailable : StatusCode::kInternal;
  auto done = std::move(job->done);
  job->outputs.clear();  // frees the pre-allocated outputs before the batch goes back
  done(std::move(job->batch), FailedOutcome(failure, Status(code, message)));
}

}  // namespace

BatchOutcome FailedOutcome(ExecutionFailure failure, Status status) {
  BatchOutcome outcome;
  outcome.status = std::move(status);
  outcome.failure = failure;
  return outcome;
}

std::shared_ptr<WorkerPool> WorkerPool::Create() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  const uint64_t id = next_pool_id++;
  std::shared_ptr<WorkerPool> pool(new WorkerPool(id));
  registry.emplace(id, pool);
  return pool;
}

Result<std::shared_ptr<WorkerPool>> WorkerPool::Find(uint64_t id) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry.find(id);
  if (it == registry.end()) return Status(StatusCode::kFailedPrecondition, "worker pool " + std::to_string(id) + " is closed");
  return it->second;
}

void WorkerPool::Submit(std::unique_ptr<WorkerJob> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_) {
      queue_.push_back(std::move(job));
      PumpLocked();
      return;
    }
  }
  Fail(std::move(job), ExecutionFailure::kShutdown, "the worker pool is closed");
}

uint64_t WorkerPool::AddChannel(std::shared_ptr<WorkerChannel> channel) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return 0;
  const uint64_t id = next_channel_++;
  channels_.emplace(id, Channel{std::move(channel), 0});
  PumpLocked();
  return id;
}

void WorkerPool::RemoveChannel(uint64_t channel) {
  std::unique_ptr<WorkerJob> orphan;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = channels_.find(channel);
    if (it == channels_.end()) return;
    if (it->second.running != 0) {
      auto running = running_.find(it->second.running);
      if (running != running_.end()) {
        orphan = std::move(running->second.job);
        running_.erase(running);
        crashed_ += 1;
      }
    }
    channels_.erase(it);
  }
  if (orphan) Fail(std::move(orphan), ExecutionFailure::kWorkerCrashed, "the inference worker running the batch exited");
}

WorkerJob* WorkerPool::Running(uint64_t token) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = running_.find(token);
  return it == running_.end() ? nullptr : it->second.job.get();
}

std::unique_ptr<WorkerJob> WorkerPool::Finish(uint64_t token) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = running_.find(token);
  if (it == running_.end()) return nullptr;
  std::unique_ptr<WorkerJob> job = std::move(it->second.job);
  auto channel = channels_.find(it->second.channel);
  if (channel != channels_.end()) channel->second.running = 0;
  running_.erase(it);
  executed_ += 1;
  PumpLocked();
  return job;
}

void WorkerPool::Close() {
  std::deque<std::unique_ptr<WorkerJob>> queued;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    registry.erase(id_);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    queued.swap(queue_);
  }
  for (auto& job : queued) Fail(std::move(job), ExecutionFailure::kShutdown, "the worker pool closed before the batch ran");
}

WorkerPoolStats WorkerPool::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  WorkerPoolStats stats;
  stats.channels = channels_.size();
  for (const auto& [id, channel] : channels_) stats.idle_channels += channel.running == 0 ? 1 : 0;
  stats.queued = queue_.size();
  stats.running = running_.size();
  stats.executed = executed_;
  stats.crashed = crashed_;
  return stats;
}

bool WorkerPool::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

void WorkerPool::PumpLocked() {
  // Process-wide, so a token names one job in every environment.
  static std::atomic<uint64_t> next_token{1};
  auto channel = channels_.begin();
  while (!queue_.empty() && channel != channels_.end()) {
    if (channel->second.running != 0) {
      ++channel;
      continue;
    }
    const uint64_t token = next_token.fetch_add(1);
    // Registered before Post: the worker may look it up the moment it is posted.
    running_.emplace(token, RunningJob{std::move(queue_.front()), channel->first});
    queue_.pop_front();
    if (channel->second.channel->Post(token)) {
      channel->second.running = token;
      ++channel;
      continue;
    }
    // Closing: its worker is going away. The job waits for another.
    auto running = running_.find(token);
    queue_.push_front(std::move(running->second.job));
    running_.erase(running);
    channel = channels_.erase(channel);
  }
}

WorkerPoolTarget::WorkerPoolTarget(std::shared_ptr<WorkerPool> pool, std::shared_ptr<BatchMemory> output_memory,
                                   uint64_t memory_owner, std::vector<WorkerOutputSpec> outputs, bool batched)
    : pool_(std::move(pool)),
      output_memory_(std::move(output_memory)),
      memory_owner_(memory_owner),
      outputs_(std::move(outputs)),
      batched_(batched) {}

void WorkerPoolTarget::Execute(SealedBatch batch, std::function<void(SealedBatch, BatchOutcome)> done) {
  auto job = std::make_unique<WorkerJob>();
  job->output_memory = output_memory_;
  job->memory_owner = memory_owner_;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const WorkerOutputSpec& spec = outputs_[i];
    job->outputs.emplace_back();
    job->output_shapes.emplace_back();
    if (!batched_ || !spec.dims.has_value()) continue;
    std::vector<int64_t> shape{static_cast<int64_t>(batch.rows)};
    uint64_t bytes = batch.rows * spec.element_bytes;
    for (int64_t dim : *spec.dims) {
      shape.push_back(dim);
      bytes *= static_cast<uint64_t>(dim);
    }
    if (bytes == 0) continue;  // nothing to pre-allocate: the worker's run says what it is
    const BufferSpec buffer{memory_owner_, batch.batch_id, static_cast<uint32_t>(i), bytes};
    Result<MemoryBlock> block = output_memory_->Allocate(buffer);
    if (!block.ok()) {
      const ExecutionFailure failure = block.status().code() == StatusCode::kResourceExhausted
                                               ? ExecutionFailure::kResourceExhausted
                                               : ExecutionFailure::kInternal;
      job->outputs.clear();
      done(std::move(batch), FailedOutcome(failure, block.status()));
      return;
    }
    job->outputs.back() = BatchBuffer(output_memory_, block.value(), buffer);
    job->output_shapes.back() = std::move(shape);
  }
  job->batch = std::move(batch);
  job->done = std::move(done);
  pool_->Submit(std::move(job));
}

}  // namespace hotpath::batcher
