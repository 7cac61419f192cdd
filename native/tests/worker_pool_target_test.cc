// Tests for the worker scheduler (batcher/worker_pool_target.h) without
// N-API or workers: channels are test doubles that record the tokens posted
// to them, as a worker's loop would receive them.
//   - a job waits while no channel is idle and goes to the first that is;
//   - Finish hands the channel the next queued job;
//   - a channel that refuses a post (its worker is going away) is dropped and
//     the job waits for another;
//   - a removed channel fails its running job with kWorkerCrashed, batch intact;
//   - Close fails queued jobs and later submits with kShutdown and
//     unregisters the pool; a running job still finishes;
//   - WorkerPoolTarget pre-allocates known batched outputs as [rows, dims...].
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "batcher/batch_memory.h"
#include "batcher/worker_pool_target.h"
#include "tests/check.h"

namespace hotpath::batcher {
namespace {

class RecordingChannel final : public WorkerChannel {
 public:
  explicit RecordingChannel(bool accepts = true) : accepts_(accepts) {}
  bool Post(uint64_t token) override {
    if (!accepts_) return false;
    posted.push_back(token);
    return true;
  }
  std::vector<uint64_t> posted;

 private:
  const bool accepts_;
};

struct Outcomes {
  std::vector<uint64_t> batch_ids;
  std::vector<ExecutionFailure> failures;
  std::vector<uint32_t> rows;
};

std::unique_ptr<WorkerJob> JobFor(uint64_t batch_id, uint32_t rows, Outcomes& outcomes) {
  auto job = std::make_unique<WorkerJob>();
  job->batch.batch_id = batch_id;
  job->batch.rows = rows;
  job->done = [&outcomes](SealedBatch batch, BatchOutcome outcome) {
    outcomes.batch_ids.push_back(batch.batch_id);
    outcomes.failures.push_back(outcome.failure);
    outcomes.rows.push_back(batch.rows);
  };
  return job;
}

void TestQueueAndHandOff(test::Checker& check) {
  std::shared_ptr<WorkerPool> pool = WorkerPool::Create();
  Outcomes outcomes;
  pool->Submit(JobFor(1, 2, outcomes));
  pool->Submit(JobFor(2, 3, outcomes));
  check.Equal(pool->Stats().queued, uint64_t{2}, "no channel: both jobs wait");

  auto refusing = std::make_shared<RecordingChannel>(false);
  pool->AddChannel(refusing);
  check.Equal(pool->Stats().channels, uint64_t{0}, "a channel that refuses its post is dropped");
  check.Equal(pool->Stats().queued, uint64_t{2}, "and the job waits for another");

  auto channel = std::make_shared<RecordingChannel>();
  const uint64_t id = pool->AddChannel(channel);
  check.True(id > 0, "an open pool takes a channel");
  if (!check.Equal(channel->posted.size(), size_t{1}, "the idle channel is handed the first job")) return;
  const uint64_t first = channel->posted[0];
  WorkerJob* running = pool->Running(first);
  check.True(running != nullptr && running->batch.batch_id == 1, "Running(token) is the first job");
  check.Equal(pool->Stats().queued, uint64_t{1}, "one job still waits");

  std::unique_ptr<WorkerJob> finished = pool->Finish(first);
  check.True(finished != nullptr && finished->batch.batch_id == 1, "Finish takes the job back");
  check.True(pool->Running(first) == nullptr, "its token is gone");
  check.True(pool->Finish(first) == nullptr, "a second Finish finds nothing");
  check.Equal(channel->posted.size(), size_t{2}, "the channel is handed the next job at once");
  check.Equal(pool->Stats().executed, uint64_t{1}, "one executed");
  pool->Finish(channel->posted[1]);
  check.True(outcomes.batch_ids.empty(), "finished jobs are the caller's: no done() from the pool");
  pool->Close();
}

void TestWorkerExit(test::Checker& check) {
  std::shared_ptr<WorkerPool> pool = WorkerPool::Create();
  Outcomes outcomes;
  auto channel = std::make_shared<RecordingChannel>();
  const uint64_t id = pool->AddChannel(channel);
  pool->Submit(JobFor(7, 4, outcomes));
  pool->RemoveChannel(id);
  if (!check.Equal(outcomes.failures.size(), size_t{1}, "the running job fails when its worker exits")) return;
  check.True(outcomes.failures[0] == ExecutionFailure::kWorkerCrashed, "as kWorkerCrashed");
  check.Equal(outcomes.batch_ids[0], uint64_t{7}, "with its own batch");
  check.Equal(outcomes.rows[0], uint32_t{4}, "intact, so it can run again elsewhere");
  check.Equal(pool->Stats().crashed, uint64_t{1}, "counted");
  pool->RemoveChannel(id);
  check.Equal(outcomes.failures.size(), size_t{1}, "RemoveChannel is idempotent");
  pool->Close();
}

void TestClose(test::Checker& check) {
  std::shared_ptr<WorkerPool> pool = WorkerPool::Create();
  Outcomes outcomes;
  auto channel = std::make_shared<RecordingChannel>();
  pool->AddChannel(channel);
  pool->Submit(JobFor(1, 1, outcomes));  // runs
  pool->Submit(JobFor(2, 1, outcomes));  // waits
  check.True(WorkerPool::Find(pool->id()).ok(), "registered while open");
  pool->Close();
  check.True(!WorkerPool::Find(pool->id()).ok(), "Find fails once closed");
  if (!check.Equal(outcomes.failures.size(), size_t{1}, "the queued job fails at Close")) return;
  check.True(outcomes.failures[0] == ExecutionFailure::kShutdown && outcomes.batch_ids[0] == 2, "the queued one, kShutdown");
  pool->Submit(JobFor(3, 1, outcomes));
  check.True(outcomes.failures.size() == 2 && outcomes.failures[1] == ExecutionFailure::kShutdown, "a later submit fails kShutdown");
  check.True(pool->Finish(channel->posted.at(0)) != nullptr, "the running job still finishes");
  check.Equal(pool->AddChannel(std::make_shared<RecordingChannel>()), uint64_t{0}, "a closed pool takes no channel");
}

void TestTargetPreallocates(test::Checker& check) {
  std::shared_ptr<WorkerPool> pool = WorkerPool::Create();
  auto memory = std::make_shared<HostBatchMemory>(1 << 20);
  std::vector<WorkerOutputSpec> outputs{{4, std::vector<int64_t>{3}}, {8, std::nullopt}};
  WorkerPoolTarget target(pool, memory, 5, outputs, /*batched=*/true);
  auto channel = std::make_shared<RecordingChannel>();
  pool->AddChannel(channel);
  SealedBatch batch;
  batch.batch_id = 11;
  batch.rows = 2;
  bool failed = false;
  target.Execute(std::move(batch), [&failed](SealedBatch, BatchOutcome) { failed = true; });
  check.True(!failed, "accepted");
  if (!check.Equal(channel->posted.size(), size_t{1}, "posted to the channel")) return;
  WorkerJob* job = pool->Running(channel->posted[0]);
  if (!check.True(job != nullptr, "running")) return;
  check.Equal(job->outputs.size(), size_t{2}, "one buffer slot per output");
  check.Equal(job->outputs[0].capacity(), uint64_t{2 * 3 * 4}, "known output: rows x dims x element bytes");
  check.True(job->output_shapes[0] == std::vector<int64_t>{2, 3}, "its shape [rows, dims...]");
  check.True(job->outputs[1].data() == nullptr, "unknown dims: left to the worker's run");
  std::unique_ptr<WorkerJob> done = pool->Finish(channel->posted[0]);
  done.reset();
  check.Equal(memory->live_bytes(), uint64_t{0}, "the outputs free themselves with the job");
  pool->Close();
}

}  // namespace
}  // namespace hotpath::batcher

int main() {
  hotpath::test::Checker check;
  using namespace hotpath::batcher;
  TestQueueAndHandOff(check);
  TestWorkerExit(check);
  TestClose(check);
  TestTargetPreallocates(check);
  return check.ExitCode();
}
