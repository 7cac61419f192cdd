// Tests for batcher/batcher.h: the thread loop, driven by a ManualClock.
// Nothing here sleeps to check a rule: time moves only through Advance(), and
// Flush() returns once the loop has acted on everything before it.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "batcher/batcher.h"
#include "tests/check.h"

namespace hotpath::batcher {
namespace {

using std::chrono::microseconds;

// Collects what the callbacks deliver. The callbacks run on the batcher
// thread, hence the mutex; Flush() orders them before the test reads.
struct Recorder {
  std::mutex mu;
  std::vector<SealedBatch> batches;
  std::vector<RejectedRequest> rejected;

  BatcherCallbacks Callbacks() {
    BatcherCallbacks callbacks;
    callbacks.dispatch = [this](SealedBatch batch) {
      std::lock_guard<std::mutex> guard(mu);
      batches.push_back(std::move(batch));
    };
    callbacks.reject = [this](std::vector<RejectedRequest> requests) {
      std::lock_guard<std::mutex> guard(mu);
      for (RejectedRequest& r : requests) rejected.push_back(std::move(r));
    };
    return callbacks;
  }
  size_t BatchCount() {
    std::lock_guard<std::mutex> guard(mu);
    return batches.size();
  }
  size_t RejectedCount() {
    std::lock_guard<std::mutex> guard(mu);
    return rejected.size();
  }
};

struct Fixture {
  explicit Fixture(BatcherConfig config, uint64_t memory_limit = 0)
      : clock(std::make_shared<ManualClock>()),
        memory(std::make_shared<HostBatchMemory>(memory_limit)) {
    config.model_name = "ctr_mlp";
    auto created = Batcher::Create(config, clock, memory, recorder.Callbacks());
    if (created.ok()) batcher = std::move(created).value();
  }

  // A request of `rows` rows of 4 floats, each float = id * 100 + row.
  EnqueueResult Enqueue(uint64_t id, uint32_t rows = 1, uint32_t priority = 0,
                 std::optional<TimePoint> deadline = std::nullopt, int64_t width = 4) {
    std::vector<float> data(static_cast<size_t>(rows * width));
    for (uint32_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < width; ++c) data[r * width + c] = float(id * 100 + r);
    }
    EnqueueRequest request;
    request.id = id;
    request.rows = rows;
    request.priority = priority;
    request.deadline = deadline;
    request.inputs.push_back(
        RequestInput{data.data(), data.size() * sizeof(float), std::vector<int64_t>{width}});
    return batcher->Enqueue(request);
  }

  std::shared_ptr<ManualClock> clock;
  std::shared_ptr<HostBatchMemory> memory;
  Recorder recorder;
  std::unique_ptr<Batcher> batcher;
};

BatcherConfig Config(uint32_t max_batch_size, uint64_t delay_us, uint32_t instances = 1) {
  BatcherConfig config;
  config.max_batch_size = max_batch_size;
  config.max_queue_delay_us = delay_us;
  config.instance_count = instances;
  return config;
}

float At(const SealedBatch& batch, int64_t row) {
  float value = 0;
  std::memcpy(&value, batch.inputs[0].buffer.data() + row * 4 * sizeof(float), sizeof(float));
  return value;
}

void TestCreateValidates(test::Checker& check) {
  BatcherConfig bad = Config(4, 0);
  bad.preferred_batch_sizes = {5};
  Recorder recorder;
  auto created = Batcher::Create(bad, std::make_shared<SteadyClock>(),
                                 std::make_shared<HostBatchMemory>(), recorder.Callbacks());
  check.True(!created.ok() && created.status().code() == StatusCode::kInvalidArgument,
             "Create returns INVALID_ARGUMENT for a bad config");
  auto no_callbacks = Batcher::Create(Config(4, 0), std::make_shared<SteadyClock>(),
                                      std::make_shared<HostBatchMemory>(), BatcherCallbacks{});
  check.True(!no_callbacks.ok(), "Create needs both callbacks");
}

void TestDelayTimerAndInPlaceBatch(test::Checker& check) {
  Fixture f(Config(8, 100));
  if (!check.True(f.batcher != nullptr, "created")) return;
  check.True(f.Enqueue(1).ok(), "enqueue 1");
  f.clock->Advance(microseconds(40));
  check.True(f.Enqueue(2, 2).ok(), "enqueue 2 (2 rows)");
  f.batcher->Flush();
  check.Equal(f.recorder.BatchCount(), size_t{0}, "held: the oldest waited 40 of 100 us");
  f.clock->Advance(microseconds(59));
  f.batcher->Flush();
  check.Equal(f.recorder.BatchCount(), size_t{0}, "still held at 99 us");
  f.clock->Advance(microseconds(1));
  f.batcher->Flush();
  if (!check.Equal(f.recorder.BatchCount(), size_t{1}, "sent when the delay expires")) return;
  const SealedBatch& batch = f.recorder.batches[0];
  check.Equal(batch.rows, 3u, "3 rows");
  check.True(batch.inputs[0].shape == std::vector<int64_t>{3, 4}, "shape [3, 4]");
  check.Equal(batch.inputs[0].bytes, uint64_t{3 * 4 * sizeof(float)}, "bytes in use");
  check.Equal(At(batch, 0), 100.0f, "row 0 from request 1");
  check.Equal(At(batch, 1), 200.0f, "row 1 = request 2 row 0");
  check.Equal(At(batch, 2), 201.0f, "row 2 = request 2 row 1");
  check.Equal(batch.requests[1].row_offset, 1u, "request 2 starts at row 1");
  check.True(batch.requests[0].queue_time == microseconds(100), "queue time of request 1");
  check.True(batch.requests[1].queue_time == microseconds(60), "queue time of request 2");
  BatcherStats stats = f.batcher->Stats();
  check.Equal(stats.execution_count, uint64_t{1}, "execution_count");
  check.Equal(stats.inference_count, uint64_t{3}, "inference_count counts rows");
  check.Equal(stats.queue_ns, uint64_t{160'000}, "summed queue time");
  check.Equal(stats.idle_instances, 0u, "the batch took the instance");
}

void TestBusyInstancesLetBatchesGrow(test::Checker& check) {
  BatcherConfig config = Config(8, 0);  // work-conserving
  config.preferred_batch_sizes = {4};
  Fixture f(config);
  if (!check.True(f.batcher != nullptr, "created")) return;
  f.Enqueue(1);
  f.batcher->Flush();
  check.Equal(f.recorder.BatchCount(), size_t{1}, "delay 0: a lone request goes at once");
  for (uint64_t id = 2; id <= 7; ++id) f.Enqueue(id);
  f.batcher->Flush();
  check.Equal(f.recorder.BatchCount(), size_t{1}, "instance busy: nothing more is sent");
  check.Equal(f.batcher->Stats().open_batches, uint64_t{2}, "grew to 4 (closed) + 2");
  check.True(f.batcher->InstanceIdle().ok(), "instance idle");
  f.batcher->Flush();
  if (!check.Equal(f.recorder.BatchCount(), size_t{2}, "one more batch")) return;
  check.Equal(f.recorder.batches[1].rows, 4u, "the largest preferred batch went first");
  check.True(f.batcher->InstanceIdle().ok(), "instance idle again");
  f.batcher->Flush();
  check.Equal(f.recorder.BatchCount(), size_t{3}, "the remainder goes (work-conserving)");
  check.Equal(f.recorder.batches[2].rows, 2u, "2 rows");
  check.True(f.batcher->InstanceIdle().ok(), "idle");
  check.True(f.batcher->InstanceIdle().code() == StatusCode::kFailedPrecondition,
             "cannot be more idle than instance_count");
}

void TestExpiryRejectsAndCompacts(test::Checker& check) {
  BatcherConfig config = Config(8, 1000);
  Fixture f(config);
  if (!check.True(f.batcher != nullptr, "created")) return;
  const TimePoint t0 = f.clock->Now();
  f.Enqueue(1);
  f.Enqueue(2, 1, 0, t0 + microseconds(300));  // its deadline passes while queued
  f.Enqueue(3);
  EnqueueResult late = f.Enqueue(4, 1, 0, t0);
  check.True(late.code() == StatusCode::kDeadlineExceeded, "deadline passed at enqueue");
  check.True(late.kind == RejectKind::kDeadlineExceeded, "refused as DEADLINE_EXCEEDED");
  f.clock->Advance(microseconds(300));
  f.batcher->Flush();
  if (!check.Equal(f.recorder.RejectedCount(), size_t{1}, "request 2 dropped")) return;
  check.Equal(f.recorder.rejected[0].id, uint64_t{2}, "the right one");
  check.True(ToStatus(f.recorder.rejected[0].rejection).code() == StatusCode::kDeadlineExceeded,
             "DEADLINE_EXCEEDED");
  f.clock->Advance(microseconds(700));
  f.batcher->Flush();
  if (!check.Equal(f.recorder.BatchCount(), size_t{1}, "the rest goes at the delay")) return;
  const SealedBatch& batch = f.recorder.batches[0];
  check.Equal(batch.rows, 2u, "2 live rows; request 2 never executes");
  check.Equal(At(batch, 0), 100.0f, "request 1");
  check.Equal(At(batch, 1), 300.0f, "request 3 moved over the hole");
  check.Equal(batch.requests[1].row_offset, 1u, "offset after compaction");
  check.Equal(f.batcher->Stats().rejected_deadline, uint64_t{2}, "both deadline rejections");
}

// Compaction with two inputs of different widths: each input's bytes of
// each request are recorded per slot (slot-major, one record per input), so
// a hole in the middle must move both inputs' rows, each by its own size.
void TestTwoInputsCompactIndependently(test::Checker& check) {
  BatcherConfig config = Config(8, 1000);
  config.model_name = "two-inputs";
  config.input_count = 2;
  auto clock = std::make_shared<ManualClock>();
  Recorder recorder;
  auto created = Batcher::Create(config, clock, std::make_shared<HostBatchMemory>(), recorder.Callbacks());
  if (!check.True(created.ok(), "created")) return;
  std::unique_ptr<Batcher> batcher = std::move(created).value();
  const TimePoint t0 = clock->Now();
  // Request id: input 0 is 4 floats of id, input 1 is 2 floats of -id.
  auto enqueue = [&](uint64_t id, std::optional<TimePoint> deadline) {
    std::vector<float> wide(4, float(id));
    std::vector<float> narrow(2, -float(id));
    EnqueueRequest request;
    request.id = id;
    request.deadline = deadline;
    request.inputs.push_back(RequestInput{wide.data(), wide.size() * sizeof(float), {4}});
    request.inputs.push_back(RequestInput{narrow.data(), narrow.size() * sizeof(float), {2}});
    return batcher->Enqueue(request);
  };
  check.True(enqueue(1, std::nullopt).ok(), "request 1");
  check.True(enqueue(2, t0 + microseconds(300)).ok(), "request 2, to expire");
  check.True(enqueue(3, std::nullopt).ok(), "request 3");
  clock->Advance(microseconds(300));
  batcher->Flush();
  clock->Advance(microseconds(700));
  batcher->Flush();
  std::lock_guard<std::mutex> guard(recorder.mu);
  if (!check.Equal(recorder.batches.size(), size_t{1}, "one batch")) return;
  const SealedBatch& batch = recorder.batches[0];
  check.Equal(batch.rows, 2u, "requests 1 and 3");
  if (!check.Equal(batch.inputs.size(), size_t{2}, "two inputs")) return;
  check.Equal(batch.inputs[0].bytes, uint64_t{2 * 4 * sizeof(float)}, "input 0 packed");
  check.Equal(batch.inputs[1].bytes, uint64_t{2 * 2 * sizeof(float)}, "input 1 packed");
  std::vector<float> wide(8), narrow(4);
  std::memcpy(wide.data(), batch.inputs[0].buffer.data(), wide.size() * sizeof(float));
  std::memcpy(narrow.data(), batch.inputs[1].buffer.data(), narrow.size() * sizeof(float));
  check.True(wide == std::vector<float>{1, 1, 1, 1, 3, 3, 3, 3}, "input 0: request 3 moved over the hole");
  check.True(narrow == std::vector<float>{-1, -1, -3, -3}, "input 1: request 3 moved over the hole");
}

// Stop() waits for a batch an Enqueue is dispatching itself (inline), and
// is woken when that delivery ends: if the deliverer's notify were lost,
// Stop would never return and CTest's timeout would fail this test.
void TestStopWaitsForAnInlineDelivery(test::Checker& check) {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool release = false;
  std::atomic<bool> returned{false};
  BatcherCallbacks callbacks;
  callbacks.dispatch = [&](SealedBatch) {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    returned.store(true);
  };
  callbacks.reject = [](std::vector<RejectedRequest>) {};
  BatcherConfig config = Config(4, 1000);
  config.model_name = "stop-inline";
  config.preferred_batch_sizes = {2};
  auto created = Batcher::Create(config, std::make_shared<ManualClock>(), std::make_shared<HostBatchMemory>(),
                                 std::move(callbacks));
  if (!check.True(created.ok(), "created")) return;
  std::unique_ptr<Batcher> batcher = std::move(created).value();
  float value = 1;
  EnqueueRequest request;
  request.inputs.push_back(RequestInput{&value, sizeof(value), {1}});
  check.True(batcher->Enqueue(request).ok(), "first request");
  // The second completes the preferred size: its Enqueue dispatches, and blocks there.
  std::thread enqueuer([&] { check.True(batcher->Enqueue(request).ok(), "second request"); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  std::atomic<bool> stopped_before_return{false};
  std::thread stopper([&] {
    batcher->Stop();
    stopped_before_return.store(!returned.load());
  });
  // Released only once Stop() has set `stop` (an enqueue is refused
  // SHUTDOWN), so the delivery ends after it and must take the notify path:
  // were that notify lost, Stop() would never return. Until then the
  // requests below just queue (the one instance is busy) and Stop() refuses
  // them. The sleep makes it likely that Stop() already waits.
  while (batcher->Enqueue(request).kind != RejectKind::kShutdown) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  stopper.join();
  enqueuer.join();
  check.True(returned.load(), "the delivery finished");
  check.True(!stopped_before_return.load(), "Stop returned only after the delivery");
  check.Equal(batcher->Stats().execution_count, uint64_t{1}, "the batch was dispatched, not rejected");
}

void TestQueueFullAndMemory(test::Checker& check) {
  BatcherConfig config = Config(4, 1000);
  config.default_queue_policy.max_queue_size = 2;
  Fixture f(config);
  if (!check.True(f.batcher != nullptr, "created")) return;
  check.True(f.Enqueue(1).ok() && f.Enqueue(2).ok(), "two fit");
  EnqueueResult full = f.Enqueue(3);
  check.True(full.code() == StatusCode::kUnavailable, "third: UNAVAILABLE");
  check.True(full.kind == RejectKind::kQueueFull, "refused as QUEUE_FULL");
  check.Contains(full.status.message(), "ctr_mlp", "names the model");
  check.Contains(full.status.message(), "max_queue_size 2", "names the size");

  // 4 rows x 16 bytes fit in 64 bytes; a second batch (other shape) does not.
  Fixture small(Config(4, 1000), 64);
  if (!check.True(small.batcher != nullptr, "created")) return;
  check.True(small.Enqueue(1).ok(), "first batch allocated");
  EnqueueResult exhausted = small.Enqueue(2, 1, 0, std::nullopt, 3);
  check.True(exhausted.code() == StatusCode::kResourceExhausted,
             "RESOURCE_EXHAUSTED from the memory is returned by Enqueue");
  check.True(exhausted.kind == RejectKind::kOverQuota, "refused as OVER_QUOTA");
  check.Equal(small.batcher->Stats().memory_failures, uint64_t{1}, "counted");
  check.Equal(small.batcher->Stats().pending_requests, uint64_t{1}, "not queued");
}

// A refusal says why as a RejectKind, and its status is that kind's: the
// binding passes the kind on as the rejection's reason instead of guessing it
// from the status code (UNAVAILABLE is both QUEUE_FULL and SHUTDOWN).
void TestEveryRefusalCarriesItsKind(test::Checker& check) {
  BatcherConfig config = Config(4, 1000);
  config.default_queue_policy.max_queue_size = 1;
  Fixture f(config, 64);
  if (!check.True(f.batcher != nullptr, "created")) return;
  const EnqueueResult accepted = f.Enqueue(1);
  check.True(accepted.ok() && !accepted.kind, "accepted: no kind");
  struct Case {
    const char* what;
    EnqueueResult result;
    RejectKind kind;
    StatusCode code;
  };
  std::vector<Case> cases;
  cases.push_back({"queue full", f.Enqueue(2), RejectKind::kQueueFull, StatusCode::kUnavailable});
  cases.push_back({"deadline passed", f.Enqueue(3, 1, 0, f.clock->Now()),
                   RejectKind::kDeadlineExceeded, StatusCode::kDeadlineExceeded});
  cases.push_back({"invalid rows", f.Enqueue(4, 9), RejectKind::kInvalid,
                   StatusCode::kInvalidArgument});
  Fixture small(Config(4, 1000), 64);
  if (!check.True(small.batcher != nullptr, "created")) return;
  check.True(small.Enqueue(1).ok(), "first batch allocated");
  cases.push_back({"over quota", small.Enqueue(2, 1, 0, std::nullopt, 3), RejectKind::kOverQuota,
                   StatusCode::kResourceExhausted});
  f.batcher->Stop();
  cases.push_back({"stopped", f.Enqueue(5), RejectKind::kShutdown, StatusCode::kUnavailable});
  for (const Case& c : cases) {
    if (!check.True(!c.result.ok() && c.result.kind.has_value(), std::string(c.what) + ": refused with a kind")) {
      continue;
    }
    check.Equal(std::string(RejectKindName(*c.result.kind)), std::string(RejectKindName(c.kind)),
                std::string(c.what) + ": its kind");
    check.True(c.result.code() == c.code, std::string(c.what) + ": its status");
  }
}

void TestShutdownRejectsPending(test::Checker& check) {
  Fixture f(Config(8, 1'000'000));
  if (!check.True(f.batcher != nullptr, "created")) return;
  for (uint64_t id = 1; id <= 3; ++id) f.Enqueue(id);
  f.batcher->Flush();
  check.Equal(f.recorder.BatchCount(), size_t{0}, "held by the long delay");
  check.True(f.memory->live_buffers() > 0, "a batch holds memory");
  f.batcher->Stop();
  check.Equal(f.recorder.RejectedCount(), size_t{3}, "all pending rejected at Stop");
  for (const RejectedRequest& r : f.recorder.rejected) {
    check.True(r.rejection.kind == RejectKind::kShutdown, "with SHUTDOWN");
  }
  check.True(ToStatus(f.recorder.rejected[0].rejection).code() == StatusCode::kUnavailable,
             "SHUTDOWN answers UNAVAILABLE");
  check.Equal(f.memory->live_buffers(), uint64_t{0}, "their memory is freed");
  EnqueueResult stopped = f.Enqueue(9);
  check.True(stopped.code() == StatusCode::kUnavailable, "Enqueue after Stop refused");
  check.True(stopped.kind == RejectKind::kShutdown, "refused as SHUTDOWN, not QUEUE_FULL");
  f.batcher->Stop();  // idempotent
  f.batcher.reset();
  check.Equal(f.recorder.RejectedCount(), size_t{3}, "nothing reported twice");
}

void TestSealedBatchOwnsMemory(test::Checker& check) {
  Fixture f(Config(2, 0));
  if (!check.True(f.batcher != nullptr, "created")) return;
  f.Enqueue(1, 2);
  f.batcher->Flush();
  check.Equal(f.recorder.BatchCount(), size_t{1}, "sent");
  check.Equal(f.memory->live_buffers(), uint64_t{1}, "the sealed batch holds its buffer");
  f.batcher.reset();
  check.Equal(f.memory->live_buffers(), uint64_t{1}, "even past the batcher's lifetime");
  {
    std::lock_guard<std::mutex> guard(f.recorder.mu);
    f.recorder.batches.clear();
  }
  check.Equal(f.memory->live_buffers(), uint64_t{0}, "freed with the batch");
}

void TestPriorityAndOrderingThroughTheLoop(test::Checker& check) {
  BatcherConfig config = Config(4, 0);
  config.priority_levels = 2;
  config.default_priority_level = 2;
  Fixture f(config);
  if (!check.True(f.batcher != nullptr, "created")) return;
  check.True(f.batcher->InstanceBusy().ok(), "the only instance is taken");
  f.Enqueue(1, 1, 2, std::nullopt, 4);  // low priority, first
  f.Enqueue(2, 1, 1, std::nullopt, 5);  // high priority, other shape
  f.batcher->InstanceIdle();
  f.batcher->Flush();
  if (!check.Equal(f.recorder.BatchCount(), size_t{1}, "one instance, one batch")) return;
  check.Equal(f.recorder.batches[0].requests[0].id, uint64_t{2}, "high priority first");
  check.Equal(f.recorder.batches[0].requests[0].sequence, uint64_t{1}, "sequence = arrival");
}

void TestNoBatchingPassesShapesThrough(test::Checker& check) {
  BatcherConfig config = Config(0, 1'000'000);  // the delay is irrelevant without batching
  Fixture f(config);
  if (!check.True(f.batcher != nullptr, "created")) return;
  f.Enqueue(1, 1, 0, std::nullopt, 4);
  f.batcher->Flush();
  if (!check.Equal(f.recorder.BatchCount(), size_t{1}, "max_batch_size 0: sent at once")) return;
  check.True(f.recorder.batches[0].inputs[0].shape == std::vector<int64_t>{4},
             "no batch dimension is added");
  EnqueueResult two_rows = f.Enqueue(2, 2);
  check.True(two_rows.code() == StatusCode::kInvalidArgument, "rows must be 1");
  check.True(two_rows.kind == RejectKind::kInvalid, "refused as INVALID");
}

// A batch that is ready the moment a request lands is dispatched by Enqueue
// itself, on the calling thread, before it returns: no Flush() and no loop
// turn needed. With preserve_ordering the loop stays the one dispatcher.
void TestReadyBatchDispatchedByEnqueue(test::Checker& check) {
  std::thread::id dispatched_on;
  size_t dispatched = 0;
  auto run = [&](bool preserve_ordering) {
    BatcherConfig config = Config(0, 0);
    config.model_name = "inline";
    config.preserve_ordering = preserve_ordering;
    dispatched = 0;
    BatcherCallbacks callbacks;
    callbacks.dispatch = [&](SealedBatch) {
      dispatched_on = std::this_thread::get_id();
      ++dispatched;
    };
    callbacks.reject = [](std::vector<RejectedRequest>) {};
    auto created = Batcher::Create(config, std::make_shared<ManualClock>(),
                                   std::make_shared<HostBatchMemory>(), std::move(callbacks));
    if (!created.ok()) return std::unique_ptr<Batcher>();
    std::unique_ptr<Batcher> batcher = std::move(created).value();
    float value = 1;
    EnqueueRequest request;
    request.id = 1;
    request.rows = 1;
    request.inputs.push_back(RequestInput{&value, sizeof(value), std::vector<int64_t>{1}});
    check.True(batcher->Enqueue(request).ok(), "enqueued");
    return batcher;
  };
  std::unique_ptr<Batcher> unordered = run(false);
  if (!check.True(unordered != nullptr, "created")) return;
  check.Equal(dispatched, size_t{1}, "dispatched before Enqueue returned");
  check.True(dispatched_on == std::this_thread::get_id(), "on the enqueuing thread");
  unordered->Stop();
  std::unique_ptr<Batcher> ordered = run(true);
  if (!check.True(ordered != nullptr, "created (ordered)")) return;
  ordered->Flush();
  check.Equal(dispatched, size_t{1}, "ordered: dispatched by the loop");
  check.True(dispatched_on != std::this_thread::get_id(), "ordered: on the batcher thread");
  ordered->Stop();
}

// The real clock's timed wait, once: the only test that waits for time to
// pass, and it asserts only a lower bound.
void TestSteadyClockTimer(test::Checker& check) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<SealedBatch> batches;
  BatcherCallbacks callbacks;
  callbacks.dispatch = [&](SealedBatch batch) {
    {
      std::lock_guard<std::mutex> guard(mu);
      batches.push_back(std::move(batch));
    }
    cv.notify_all();
  };
  callbacks.reject = [](std::vector<RejectedRequest>) {};
  BatcherConfig config = Config(8, 2000);
  config.model_name = "steady";
  auto created = Batcher::Create(config, std::make_shared<SteadyClock>(),
                                 std::make_shared<HostBatchMemory>(), callbacks);
  if (!check.True(created.ok(), "created")) return;
  std::unique_ptr<Batcher> batcher = std::move(created).value();
  float value = 1;
  EnqueueRequest request;
  request.inputs.push_back(RequestInput{&value, sizeof(value), {1}});
  check.True(batcher->Enqueue(request).ok(), "enqueued");
  std::unique_lock<std::mutex> lock(mu);
  const bool sent = cv.wait_for(lock, std::chrono::seconds(10), [&] { return !batches.empty(); });
  if (!check.True(sent, "the timer thread sends the batch after the delay")) return;
  check.True(batches[0].requests[0].queue_time >= microseconds(2000), "not before the delay");
}

void TestConcurrentEnqueues(test::Checker& check) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 200;
  BatcherConfig config = Config(16, 50, 2);
  config.preferred_batch_sizes = {8, 16};
  Fixture f(config);
  if (!check.True(f.batcher != nullptr, "created")) return;
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  // Frees instances as batches arrive, like the worker pool would.
  std::thread releaser([&] {
    size_t seen = 0;
    while (!done.load() || seen < f.recorder.BatchCount()) {
      const size_t now = f.recorder.BatchCount();
      for (; seen < now; ++seen) f.batcher->InstanceIdle();
      f.clock->Advance(microseconds(10));
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t id = uint64_t(t) * kPerThread + i + 1;
        if (!f.Enqueue(id, 1 + (i % 3)).ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Let the delay expire for whatever is still open, then drain.
  while (f.batcher->Stats().pending_requests > 0) {
    f.clock->Advance(microseconds(50));
    f.batcher->Flush();
    std::this_thread::yield();
  }
  done.store(true);
  releaser.join();
  check.Equal(failures.load(), 0, "every enqueue accepted");
  std::lock_guard<std::mutex> guard(f.recorder.mu);
  std::set<uint64_t> ids;
  std::vector<uint64_t> sequences;
  uint64_t rows = 0;
  bool rows_intact = true;
  for (const SealedBatch& batch : f.recorder.batches) {
    check.True(batch.rows <= 16, "never above the largest preferred size");
    for (const SealedRequest& r : batch.requests) {
      ids.insert(r.id);
      sequences.push_back(r.sequence);
      rows += r.rows;
      for (uint32_t k = 0; k < r.rows; ++k) {
        rows_intact &= At(batch, r.row_offset + k) == float(r.id * 100 + k);
      }
    }
  }
  check.Equal(ids.size(), size_t{kThreads * kPerThread}, "every request dispatched once");
  std::sort(sequences.begin(), sequences.end());
  bool dense = true;
  for (size_t i = 0; i < sequences.size(); ++i) dense &= sequences[i] == i;
  check.True(dense, "sequences are dense 0..n-1");
  check.True(rows_intact, "every request's rows arrived intact at its offsets");
  check.Equal(f.batcher->Stats().inference_count, rows, "inference_count = rows");
  check.True(f.recorder.batches.size() < ids.size(), "execution_count < request count");
}

}  // namespace
}  // namespace hotpath::batcher

int main() {
  hotpath::test::Checker check;
  using namespace hotpath::batcher;
  TestCreateValidates(check);
  TestEveryRefusalCarriesItsKind(check);
  TestTwoInputsCompactIndependently(check);
  TestStopWaitsForAnInlineDelivery(check);
  TestDelayTimerAndInPlaceBatch(check);
  TestBusyInstancesLetBatchesGrow(check);
  TestExpiryRejectsAndCompacts(check);
  TestQueueFullAndMemory(check);
  TestShutdownRejectsPending(check);
  TestSealedBatchOwnsMemory(check);
  TestPriorityAndOrderingThroughTheLoop(check);
  TestNoBatchingPassesShapesThrough(check);
  TestReadyBatchDispatchedByEnqueue(check);
  TestSteadyClockTimer(check);
  TestConcurrentEnqueues(check);
  return check.ExitCode();
}
