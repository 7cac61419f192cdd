// Lifecycle tests for executor/executor.h and batch_target.h on the host
// device: job validation, fault injection (transient, sticky), Stop with
// queued jobs, destruction from a `done` callback, arena accounting (no
// backend call on the request path), and the batcher handoff
// (ExecutorTarget) with hand-built sealed batches.
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arena/arena.h"
#include "batcher/batch_memory.h"
#include "executor/batch_target.h"
#include "executor/executor.h"
#include "tests/check.h"
#include "tests/executor_fixtures.h"
#include "tests/executor_plans.h"

namespace hotpath::executor {
namespace {

using namespace testing;  // NOLINT: the fixtures are this test's vocabulary

// --- Validation and faults ----------------------------------------------------

void TestValidationAndFaults(Checker& c) {
  Env env;
  Mlp mlp;
  auto created = Executor::Create(mlp.p.plan, env.Config(2));
  if (!c.True(created.ok(), "MLP: " + created.status().ToString())) return;
  Executor& exec = *created.value();
  const std::vector<float> x = PlanMaker::RandomFloats(4 * 16, 9);
  std::vector<float> y(4);
  auto submit_sync = [&](ExecJob job) {
    ExecOutcome seen;
    std::thread::id where;
    job.done = [&](ExecOutcome o) { seen = std::move(o), where = std::this_thread::get_id(); };
    exec.Submit(std::move(job));
    c.True(where == std::this_thread::get_id(), "refused on the calling thread");
    return seen;
  };
  {
    ExecJob job;
    job.rows = 4;
    job.inputs.push_back({x.data(), 3 * 16 * sizeof(float)});  // 3 rows' worth for 4 rows
    job.outputs.push_back({y.data(), y.size() * sizeof(float)});
    ExecOutcome o = submit_sync(std::move(job));
    c.Equal(StatusCodeName(o.status.code()), std::string("INVALID_ARGUMENT"), "input size mismatch");
    c.Contains(o.status.message(), "input 'x': expected 256 bytes for 4 rows, got 192", "names the input");
  }
  {
    ExecJob job;
    job.rows = kMaxBatch + 1;
    ExecOutcome o = submit_sync(std::move(job));
    c.Equal(StatusCodeName(o.status.code()), std::string("INVALID_ARGUMENT"), "rows over max");
  }
  {
    ExecJob job;
    job.rows = 4;
    job.inputs.push_back({x.data(), x.size() * sizeof(float)});
    job.outputs.push_back({y.data(), 8});  // room for 2 of 4 results
    ExecOutcome o = submit_sync(std::move(job));
    c.Contains(o.status.message(), "output", "output too small");
  }
  std::vector<std::vector<float>> out;
  exec.InjectFault(FaultClass::kTransient);
  ExecOutcome transient = Run(exec, 4, {x.data()}, out);
  c.True(transient.fault == FaultClass::kTransient, "injected transient fault");
  c.Contains(transient.status.message(), "injected transient device fault (test hook)", "transient message");
  c.True(!exec.dead(), "transient: still alive");
  c.True(Run(exec, 4, {x.data()}, out).status.ok(), "recovers after a transient fault");
  Near(c, out[0], mlp.Reference(x, 4), "after recovery");
  exec.InjectFault(FaultClass::kTransient);
  exec.InjectFault(FaultClass::kNone);  // cleared again
  c.True(Run(exec, 4, {x.data()}, out).status.ok(), "kNone clears a pending fault");

  exec.InjectFault(FaultClass::kSticky);
  ExecOutcome sticky = Run(exec, 4, {x.data()}, out);
  c.True(sticky.fault == FaultClass::kSticky && exec.dead(), "injected sticky fault kills the executor");
  ExecOutcome later = Run(exec, 4, {x.data()}, out);
  c.True(later.fault == FaultClass::kSticky, "later jobs fail sticky");
  c.Contains(later.status.message(), "lost earlier", "later jobs say why");
  const ExecutorStats stats = exec.Stats();
  c.Equal(stats.device_faults, uint64_t{3}, "device faults counted");
  c.Equal(stats.failures, uint64_t{6}, "failures counted (3 refused, 3 faults)");
}

// One instance busy in a blocked `done`; five more jobs queue behind it;
// Stop fails the five (UNAVAILABLE) and waits for the busy one.
void TestStopWithQueuedJobs(Checker& c) {
  Env env;
  Mlp mlp;
  auto created = Executor::Create(mlp.p.plan, env.Config(1));
  if (!c.True(created.ok(), "MLP: " + created.status().ToString())) return;
  Executor& exec = *created.value();
  const std::vector<float> x = PlanMaker::RandomFloats(16, 9);
  std::vector<float> y(6);
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first_ok{false};
  ExecJob first;
  first.inputs.push_back({x.data(), x.size() * sizeof(float)});
  first.outputs.push_back({&y[0], sizeof(float)});
  first.done = [&](ExecOutcome o) {
    first_ok = o.status.ok();
    entered.set_value();
    released.wait();
  };
  exec.Submit(std::move(first));
  entered.get_future().wait();
  std::atomic<int> stopped{0};
  for (int i = 0; i < 5; ++i) {
    ExecJob job;
    job.inputs.push_back({x.data(), x.size() * sizeof(float)});
    job.outputs.push_back({&y[static_cast<size_t>(i) + 1], sizeof(float)});
    job.done = [&](ExecOutcome o) {
      if (o.status.code() == StatusCode::kUnavailable && o.status.message().find("executor stopped") != std::string::npos) {
        ++stopped;
      }
    };
    exec.Submit(std::move(job));
  }
  c.Equal(exec.Stats().queued, uint64_t{5}, "five queued behind the busy instance");
  std::thread stopper([&] { exec.Stop(); });
  while (stopped.load() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  release.set_value();
  stopper.join();
  c.Equal(stopped.load(), 5, "queued jobs failed UNAVAILABLE");
  c.True(first_ok.load(), "the running job finished");
  exec.Stop();  // idempotent
  ExecOutcome after;
  ExecJob late;
  late.inputs.push_back({x.data(), x.size() * sizeof(float)});
  late.outputs.push_back({&y[0], sizeof(float)});
  late.done = [&](ExecOutcome o) { after = std::move(o); };
  exec.Submit(std::move(late));
  c.Equal(StatusCodeName(after.status.code()), std::string("UNAVAILABLE"), "submit after Stop");
}

// The last reference dropped inside a `done` callback: the executor is
// destroyed on its own instance thread, which then finishes on its own; every
// block goes back to the arena.
void TestDestroyFromDone(Checker& c) {
  Env env;
  Mlp mlp;
  auto created = Executor::Create(mlp.p.plan, env.Config(2));
  if (!c.True(created.ok(), "MLP: " + created.status().ToString())) return;
  auto holder = std::make_shared<std::shared_ptr<Executor>>(std::move(created).value());
  const std::vector<float> x = PlanMaker::RandomFloats(16, 3);
  float y = 0;
  std::promise<void> dropped, finished;
  std::shared_future<void> main_dropped = dropped.get_future().share();
  ExecJob job;
  job.inputs.push_back({x.data(), x.size() * sizeof(float)});
  job.outputs.push_back({&y, sizeof(float)});
  job.done = [holder, main_dropped, &finished](ExecOutcome) {
    main_dropped.wait();
    holder->reset();  // the last reference: ~Executor on this instance thread
    finished.set_value();
  };
  Executor* raw = holder->get();
  raw->Submit(std::move(job));
  holder.reset();  // only the job's copy is left
  dropped.set_value();
  c.True(finished.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready, "done returned");
  for (int i = 0; i < 3000 && env.TenantUsed() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  c.Equal(env.TenantUsed(), uint64_t{0}, "state released by the detached thread");
}

// --- Arena accounting ----------------------------------------------------------

void TestArenaAccounting(Checker& c) {
  Env env;
  Mlp mlp;
  c.Equal(env.TenantUsed(), uint64_t{0}, "tenant empty before");
  {
    auto created = Executor::Create(mlp.p.plan, env.Config(3));
    if (!c.True(created.ok(), "MLP: " + created.status().ToString())) return;
    Executor& exec = *created.value();
    c.True(exec.weights_bytes() >= (16 * 32 + 32 + 8 * 32 + 8 + 8 + 1) * 4, "weights hold every initializer");
    c.True(exec.workspace_bytes() > 0, "workspace allocated");
    c.Equal(env.TenantUsed(), exec.weights_bytes() + 3 * exec.workspace_bytes(),
            "tenant charged weights + instances * workspace");
    const std::vector<float> x = PlanMaker::RandomFloats(kMaxBatch * 16, 5);
    std::vector<std::vector<float>> out;
    Run(exec, kMaxBatch, {x.data()}, out);  // warm
    const arena::ArenaStats before = env.arena->Stats();
    for (int i = 0; i < 1000; ++i) {
      const uint32_t rows = 1 + static_cast<uint32_t>(i % kMaxBatch);
      if (!Run(exec, rows, {x.data()}, out).status.ok()) {
        c.True(false, "request-path job failed");
        break;
      }
    }
    const arena::ArenaStats after = env.arena->Stats();
    c.Equal(after.backend_allocs, before.backend_allocs, "no backend alloc on the request path");
    c.Equal(after.backend_frees, before.backend_frees, "no backend free on the request path");
    c.Equal(after.allocated, before.allocated, "no arena block on the request path");
  }
  c.Equal(env.TenantUsed(), uint64_t{0}, "tenant back to 0 after destruction");
  // Over quota: RESOURCE_EXHAUSTED from Create, nothing left charged.
  c.True(env.arena->SetTenantQuota(env.tenant, 1024).ok(), "small quota");
  auto refused = Executor::Create(mlp.p.plan, env.Config(2));
  c.True(!refused.ok() && refused.status().code() == StatusCode::kResourceExhausted, "over quota refused");
  c.Equal(env.TenantUsed(), uint64_t{0}, "a failed Create leaves nothing charged");
  // The host device needs host-accessible memory.
  arena::ArenaConfig sim_config;
  auto simulated = arena::Arena::Create("sim", sim_config, arena::MakeSimulatedBackend(1 << 20)).value();
  ExecutorConfig bad = env.Config();
  bad.arena = simulated;
  bad.tenant = arena::kDefaultTenant;
  bad.owner = simulated->CreateOwner(arena::OwnerKind::kModel, "m").value();
  auto wrong_memory = Executor::Create(mlp.p.plan, bad);
  c.True(!wrong_memory.ok() && wrong_memory.status().code() == StatusCode::kInvalidArgument, "simulated arena refused");
  c.Equal(std::string(MakeCudaDevice(0).ok() ? "cuda" : "none").empty(), false, "MakeCudaDevice answers");
}

// --- The batcher handoff ---------------------------------------------------------

batcher::SealedBatch MakeBatch(const std::shared_ptr<batcher::BatchMemory>& memory, uint32_t rows,
                               const std::vector<float>& x, std::vector<int64_t> shape) {
  batcher::SealedBatch batch;
  batch.batch_id = 42;
  batch.rows = rows;
  const batcher::BufferSpec spec{7, 42, 0, x.size() * sizeof(float)};
  batcher::MemoryBlock block = memory->Allocate(spec).value();
  std::memcpy(block.data, x.data(), spec.bytes);
  batch.inputs.push_back({batcher::BatchBuffer(memory, block, spec), spec.bytes, std::move(shape)});
  return batch;
}

struct TargetResult {
  batcher::SealedBatch batch;
  batcher::BatchOutcome outcome;
};

TargetResult Execute(ExecutorTarget& target, batcher::SealedBatch batch) {
  std::promise<TargetResult> promise;
  auto future = promise.get_future();
  target.Execute(std::move(batch), [&promise](batcher::SealedBatch b, batcher::BatchOutcome o) {
    promise.set_value(TargetResult{std::move(b), std::move(o)});
  });
  future.wait();
  return future.get();
}

void TestBatchTarget(Checker& c) {
  Env env;
  Mlp mlp;
  auto created = Executor::Create(mlp.p.plan, env.Config(2));
  if (!c.True(created.ok(), "MLP: " + created.status().ToString())) return;
  std::shared_ptr<Executor> exec = std::move(created).value();
  auto inputs = std::make_shared<batcher::HostBatchMemory>();
  auto outputs = std::make_shared<batcher::HostBatchMemory>();
  ExecutorTarget target(exec, outputs, 7);
  const std::vector<float> x = PlanMaker::RandomFloats(3 * 16, 77);
  {
    TargetResult r = Execute(target, MakeBatch(inputs, 3, x, {3, 16}));
    c.True(r.outcome.status.ok(), "target run: " + r.outcome.status.ToString());
    c.Equal(batcher::ExecutionFailureName(r.outcome.failure), std::string("NONE"), "no failure");
    if (c.Equal(r.outcome.outputs.size(), size_t{1}, "one output buffer")) {
      std::vector<float> y(3);
      std::memcpy(y.data(), r.outcome.outputs[0].data(), sizeof(float) * 3);
      Near(c, y, mlp.Reference(x, 3), "target result");
      c.Equal(Dims(r.outcome.output_shapes[0]), std::string("[3,1]"), "output shape");
      c.Equal(r.outcome.output_bytes[0], uint64_t{12}, "output bytes");
    }
    c.Equal(r.batch.rows, 3u, "the batch comes back");
    c.True(std::memcmp(r.batch.inputs[0].buffer.data(), x.data(), 12) == 0, "its inputs intact");
  }
  c.Equal(outputs->live_buffers(), uint64_t{0}, "outputs freed with the outcome");
  {
    TargetResult r = Execute(target, MakeBatch(inputs, 3, x, {3, 15}));
    c.Equal(batcher::ExecutionFailureName(r.outcome.failure), std::string("INVALID"), "shape mismatch");
    c.Contains(r.outcome.status.message(), "expected shape [3,16]", "names the shapes");
  }
  {
    auto tiny = std::make_shared<batcher::HostBatchMemory>(4);
    ExecutorTarget starved(exec, tiny, 7);
    TargetResult r = Execute(starved, MakeBatch(inputs, 3, x, {3, 16}));
    c.Equal(batcher::ExecutionFailureName(r.outcome.failure), std::string("RESOURCE_EXHAUSTED"), "output quota");
  }
  exec->InjectFault(FaultClass::kTransient);
  c.Equal(batcher::ExecutionFailureName(Execute(target, MakeBatch(inputs, 3, x, {3, 16})).outcome.failure),
          std::string("DEVICE_TRANSIENT"), "transient -> DEVICE_TRANSIENT");
  exec->InjectFault(FaultClass::kSticky);
  c.Equal(batcher::ExecutionFailureName(Execute(target, MakeBatch(inputs, 3, x, {3, 16})).outcome.failure),
          std::string("DEVICE_LOST"), "sticky -> DEVICE_LOST");
  {
    Env env2;
    auto fresh = Executor::Create(mlp.p.plan, env2.Config(1));
    std::shared_ptr<Executor> stopped = std::move(fresh).value();
    stopped->Stop();
    ExecutorTarget after_stop(stopped, outputs, 7);
    c.Equal(batcher::ExecutionFailureName(Execute(after_stop, MakeBatch(inputs, 3, x, {3, 16})).outcome.failure),
            std::string("SHUTDOWN"), "stopped -> SHUTDOWN");
  }
  c.Equal(outputs->live_buffers(), uint64_t{0}, "no output buffer leaked");
  c.Equal(inputs->live_buffers(), uint64_t{0}, "no input buffer leaked");
}

}  // namespace
}  // namespace hotpath::executor

int main() {
  hotpath::test::Checker check;
  using namespace hotpath::executor;
  TestValidationAndFaults(check);
  TestStopWithQueuedJobs(check);
  TestDestroyFromDone(check);
  TestArenaAccounting(check);
  TestBatchTarget(check);
  return check.ExitCode();
}
