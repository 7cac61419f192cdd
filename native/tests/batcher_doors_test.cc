// Tests for one native core shared by several doors: batcher/doors.h (door
// table, answer routing, shared batch ownership), batcher/batch_dispatch.h
// and batcher/batcher_registry.h, with no N-API. Doors here are queues; two
// real threads enqueue into one batcher, and a fake target runs batches
// when the test says so, so every ordering is deterministic. Run under
// ASan/UBSan too (ctest:asan): a door that goes away must not leave a
// dangling pointer, and the last share must free the batch.
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "batcher/batch_dispatch.h"
#include "batcher/batcher_registry.h"
#include "batcher/doors.h"
#include "tests/check.h"

namespace hotpath::batcher {
namespace {

// A door that queues what it is sent, for the test thread to read.
class QueueDoor final : public Door {
 public:
  bool Post(std::unique_ptr<DoorEvent> event) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    events_.push_back(std::move(event));
    return true;
  }
  void Close() {
    std::vector<std::unique_ptr<DoorEvent>> dropped;
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    dropped.swap(events_);  // as a torn-down environment drops its queue
  }
  std::vector<std::unique_ptr<DoorEvent>> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(events_);
  }

 private:
  std::mutex mu_;
  bool closed_ = false;
  std::vector<std::unique_ptr<DoorEvent>> events_;
};

// Holds batches until Run(): the output is the input plus 1000, per float.
class HeldTarget final : public ExecutionTarget {
 public:
  explicit HeldTarget(std::shared_ptr<BatchMemory> memory) : memory_(std::move(memory)) {}
  void Execute(SealedBatch batch, std::function<void(SealedBatch, BatchOutcome)> done) override {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.emplace_back(std::move(batch), std::move(done));
  }
  size_t Run() {
    std::vector<std::pair<SealedBatch, std::function<void(SealedBatch, BatchOutcome)>>> jobs;
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs.swap(jobs_);
    }
    for (auto& [batch, done] : jobs) {
      BatchOutcome outcome;
      const SealedInput& input = batch.inputs[0];
      BufferSpec spec{0, batch.batch_id, 1, input.bytes};
      Result<MemoryBlock> block = memory_->Allocate(spec);
      if (block.ok()) {
        BatchBuffer out(memory_, block.value(), spec);
        const auto* in = reinterpret_cast<const float*>(input.buffer.data());
        auto* values = reinterpret_cast<float*>(out.data());
        for (uint64_t i = 0; i < input.bytes / sizeof(float); ++i) values[i] = in[i] + 1000.0f;
        outcome.outputs.push_back(std::move(out));
        outcome.output_bytes.push_back(input.bytes);
        outcome.output_shapes.push_back(input.shape);
      } else {
        outcome.status = block.status();
        outcome.failure = ExecutionFailure::kResourceExhausted;
      }
      done(std::move(batch), std::move(outcome));
    }
    return jobs.size();
  }

 private:
  std::shared_ptr<BatchMemory> memory_;
  std::mutex mu_;
  std::vector<std::pair<SealedBatch, std::function<void(SealedBatch, BatchOutcome)>>> jobs_;
};

BatcherConfig Config(uint32_t max_batch_size) {
  BatcherConfig config;
  config.model_name = "ctr_mlp";
  config.input_count = 1;
  config.instance_count = 1;
  config.max_batch_size = max_batch_size;
  config.max_queue_delay_us = 1'000'000;
  return config;
}

// Enqueues one row of 4 floats, each door * 100 + id, through `door`.
EnqueueResult EnqueueRow(Batcher& batcher, DoorId door, uint64_t id) {
  float values[4];
  for (float& v : values) v = static_cast<float>(door * 100 + id);
  EnqueueRequest request;
  request.id = id;
  request.door = door;
  request.rows = 1;
  request.inputs.push_back(RequestInput{values, sizeof(values), {4}});
  return batcher.Enqueue(request);
}

struct World {
  DoorTable doors;
  BatcherRegistry registry;
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  std::shared_ptr<HostBatchMemory> memory = std::make_shared<HostBatchMemory>();
  std::shared_ptr<QueueDoor> main_door = std::make_shared<QueueDoor>();
  std::shared_ptr<QueueDoor> other_door = std::make_shared<QueueDoor>();
  DoorId main_id = doors.Add(main_door);
  DoorId other_id = doors.Add(other_door);
  std::shared_ptr<RegisteredBatcher> entry;

  explicit World(uint32_t max_batch_size) {
    auto created = registry.Create(Config(max_batch_size), clock, clock, memory, doors, main_id);
    if (created.ok()) entry = std::move(created).value();
  }
  ~World() {
    if (entry) {
      registry.Stop(entry->id);
      entry->dispatch->SetTarget(nullptr);
      registry.Forget(entry->id);
    }
  }
};

void TestDoorTable(test::Checker& check) {
  DoorTable table;
  auto door = std::make_shared<QueueDoor>();
  const DoorId id = table.Add(door);
  check.True(id != 0, "door ids start at 1");
  check.True(table.Post(id, std::make_unique<DoorEvent>()), "post to a registered door");
  check.True(!table.Post(id + 1, std::make_unique<DoorEvent>()), "post to an unknown door is dropped");
  table.Remove(id);
  check.True(!table.Post(id, std::make_unique<DoorEvent>()), "post to a removed door is dropped");
  check.Equal(door->Take().size(), size_t{1}, "only the first post arrived");
  check.Equal(table.size(), size_t{0}, "table empty");

  // A door closed but still registered (the race between a post and a
  // teardown) refuses too, and the refused event's share is released.
  const DoorId again = table.Add(door);
  door->Close();
  auto memory = std::make_shared<HostBatchMemory>();
  auto event = std::make_unique<DoorEvent>();
  event->batch = std::make_shared<SharedBatch>();
  BufferSpec spec{0, 1, 0, 64};
  event->batch->outputs.emplace_back(memory, memory->Allocate(spec).value(), spec);
  check.Equal(memory->live_buffers(), uint64_t{1}, "one buffer live");
  check.True(!table.Post(again, std::move(event)), "post to a closed door is refused");
  check.Equal(memory->live_buffers(), uint64_t{0}, "the refused event freed its share");
}

void TestRegistry(test::Checker& check) {
  World world(4);
  if (!check.True(world.entry != nullptr, "created")) return;
  check.Equal(world.registry.size(), size_t{1}, "registered");
  auto found = world.registry.Find(world.entry->id);
  check.True(found.ok() && found.value() == world.entry, "found by id");
  auto missing = world.registry.Find(world.entry->id + 7);
  check.True(!missing.ok() && missing.status().code() == StatusCode::kFailedPrecondition, "unknown id: precondition");
  check.Contains(missing.status().message(), "batcher is closed", "closed message");

  BatcherConfig bad = Config(4);
  bad.instance_count = 0;
  auto refused = world.registry.Create(bad, world.clock, world.clock, world.memory, world.doors, world.main_id);
  check.True(!refused.ok() && refused.status().code() == StatusCode::kInvalidArgument, "a bad config is refused");
  check.Equal(world.registry.size(), size_t{1}, "a refused batcher is not registered");
}

// Two threads, two doors, one batch: each door gets one executed event with
// its own requests and the right rows, sharing the batch's buffers.
void TestMultiDoorRouting(test::Checker& check) {
  World world(16);
  if (!check.True(world.entry != nullptr, "created")) return;
  auto target = std::make_shared<HeldTarget>(world.memory);
  world.entry->dispatch->SetTarget(target);
  Batcher& batcher = *world.entry->batcher;
  std::vector<std::thread> threads;
  for (DoorId door : {world.main_id, world.other_id}) {
    threads.emplace_back([&batcher, door] {
      for (uint64_t id = 1; id <= 8; ++id) (void)EnqueueRow(batcher, door, id);
    });
  }
  for (std::thread& t : threads) t.join();
  batcher.Flush();  // the 16th row filled the batch: sealed and handed to the target
  check.Equal(target->Run(), size_t{1}, "one batch ran");

  auto mine = world.main_door->Take();
  auto theirs = world.other_door->Take();
  if (!check.Equal(mine.size(), size_t{1}, "main door: one event") ||
      !check.Equal(theirs.size(), size_t{1}, "other door: one event")) {
    return;
  }
  check.True(mine[0]->kind == DoorEvent::Kind::kExecuted && theirs[0]->kind == DoorEvent::Kind::kExecuted, "executed events");
  check.True(mine[0]->batch == theirs[0]->batch, "one shared batch");
  check.Equal(mine[0]->batch->batch.rows, uint32_t{16}, "the batch holds both doors' rows");
  for (const auto* event : {mine[0].get(), theirs[0].get()}) {
    const DoorId door = event == mine[0].get() ? world.main_id : world.other_id;
    check.Equal(event->requests.size(), size_t{8}, "eight requests per door");
    check.True(event->outcome.status.ok(), "ok");
    check.True(event->outcome.outputs.empty(), "outputs live in the shared batch");
    const auto* out = reinterpret_cast<const float*>(event->batch->outputs[0].data());
    for (const SealedRequest& r : event->requests) {
      check.Equal(r.door, door, "request of this door");
      check.Equal(out[r.row_offset * 4], static_cast<float>(door * 100 + r.id) + 1000.0f, "its row of the output");
    }
  }
  const uint64_t live = world.memory->live_buffers();
  check.Equal(live, uint64_t{2}, "input and output buffers live");
  mine.clear();  // the main door releases its share
  check.Equal(world.memory->live_buffers(), live, "the other door's share keeps the buffers");
  theirs.clear();
  check.Equal(world.memory->live_buffers(), uint64_t{0}, "the last share frees them");
}

// A door that goes while its requests are pending: the batch still answers
// the other door, and nothing is left over.
void TestDoorGoneWhilePending(test::Checker& check) {
  World world(4);
  if (!check.True(world.entry != nullptr, "created")) return;
  auto target = std::make_shared<HeldTarget>(world.memory);
  world.entry->dispatch->SetTarget(target);
  Batcher& batcher = *world.entry->batcher;
  check.True(EnqueueRow(batcher, world.main_id, 1).ok(), "main enqueues");
  check.True(EnqueueRow(batcher, world.other_id, 1).ok(), "other enqueues");
  check.True(EnqueueRow(batcher, world.other_id, 2).ok(), "other enqueues again");
  // The other environment tears down: removed, then closed.
  world.doors.Remove(world.other_id);
  world.other_door->Close();
  check.True(EnqueueRow(batcher, world.main_id, 2).ok(), "main fills the batch");
  batcher.Flush();
  check.Equal(target->Run(), size_t{1}, "the batch ran");
  auto mine = world.main_door->Take();
  if (check.Equal(mine.size(), size_t{1}, "main door answered")) {
    check.Equal(mine[0]->requests.size(), size_t{2}, "its two requests");
    check.Equal(mine[0]->batch->batch.rows, uint32_t{4}, "from a batch of four");
  }
  check.True(world.other_door->Take().empty(), "nothing reached the gone door");
  mine.clear();
  check.Equal(world.memory->live_buffers(), uint64_t{0}, "all memory back");
}

// Stop from the owner: every door's pending requests get SHUTDOWN at their
// own door; the batcher is closed to everyone.
void TestStopFailsEveryDoor(test::Checker& check) {
  World world(8);
  if (!check.True(world.entry != nullptr, "created")) return;
  Batcher& batcher = *world.entry->batcher;
  (void)EnqueueRow(batcher, world.main_id, 1);
  (void)EnqueueRow(batcher, world.other_id, 1);
  (void)EnqueueRow(batcher, world.other_id, 2);
  std::shared_ptr<RegisteredBatcher> stopped = world.registry.Stop(world.entry->id);
  check.True(stopped == world.entry, "stop returns the batcher");
  check.True(world.entry->stopped.load(), "marked stopped");
  check.True(stopped->dispatch->QueueMarker(world.main_id, 9), "marker queued");
  check.True(world.registry.Stop(world.entry->id) == nullptr, "stop is idempotent");
  auto still = world.registry.Find(world.entry->id);
  check.True(still.ok() && still.value()->stopped.load(), "found, stopped, until forgotten");
  world.registry.Forget(world.entry->id);
  check.True(!world.registry.Find(world.entry->id).ok(), "then closed to every door");
  auto mine = world.main_door->Take();
  auto theirs = world.other_door->Take();
  if (check.Equal(mine.size(), size_t{2}, "main: rejection and marker")) {
    check.True(mine[0]->kind == DoorEvent::Kind::kRejected && mine[0]->rejected.size() == 1, "main's one request");
    check.True(mine[0]->rejected[0].rejection.kind == RejectKind::kShutdown, "SHUTDOWN");
    check.True(mine[1]->kind == DoorEvent::Kind::kMarker && mine[1]->marker == 9, "then the marker");
  }
  if (check.Equal(theirs.size(), size_t{1}, "other: one rejection event")) {
    check.Equal(theirs[0]->rejected.size(), size_t{2}, "both its requests");
    for (const RejectedRequest& r : theirs[0]->rejected) {
      check.True(r.rejection.kind == RejectKind::kShutdown && r.door == world.other_id, "SHUTDOWN, its door");
      check.True(KindOf(r.rejection.kind) == FailureKind::kShutdown, "the shutdown failure kind");
    }
  }
  world.entry.reset();
  check.Equal(world.memory->live_buffers(), uint64_t{0}, "all memory back");
}

// No target: the owner runs batches; other doors' requests in them are
// rejected, and a batch of other doors' requests alone gives its instance back.
void TestNoTargetRoutesToOwner(test::Checker& check) {
  World world(2);
  if (!check.True(world.entry != nullptr, "created")) return;
  Batcher& batcher = *world.entry->batcher;
  (void)EnqueueRow(batcher, world.main_id, 1);
  (void)EnqueueRow(batcher, world.other_id, 1);
  batcher.Flush();
  auto mine = world.main_door->Take();
  auto theirs = world.other_door->Take();
  if (check.Equal(mine.size(), size_t{1}, "owner got the batch")) {
    check.True(mine[0]->kind == DoorEvent::Kind::kBatch, "a 'batch' event");
    check.Equal(mine[0]->requests.size(), size_t{1}, "with its own request only");
  }
  if (check.Equal(theirs.size(), size_t{1}, "other door: a rejection")) {
    check.True(theirs[0]->kind == DoorEvent::Kind::kRejected && theirs[0]->rejected[0].rejection.kind == RejectKind::kShutdown,
               "SHUTDOWN");
    check.Contains(ToStatus(theirs[0]->rejected[0].rejection).message(), "no native target", "says why");
  }
  mine.clear();
  check.True(batcher.InstanceIdle().ok(), "the owner's JS gives the instance back");

  (void)EnqueueRow(batcher, world.other_id, 2);
  (void)EnqueueRow(batcher, world.other_id, 3);
  batcher.Flush();
  check.True(world.main_door->Take().empty(), "nothing for the owner to run");
  check.Equal(world.other_door->Take().size(), size_t{1}, "both rejected in one event");
  check.Equal(batcher.Stats().idle_instances, uint32_t{1}, "the instance came back natively");
  check.Equal(world.memory->live_buffers(), uint64_t{0}, "all memory back");
}

// A flush marker from one door waits for the batch in flight and follows
// its answer at that door.
void TestMarkerFollowsInFlight(test::Checker& check) {
  World world(2);
  if (!check.True(world.entry != nullptr, "created")) return;
  auto target = std::make_shared<HeldTarget>(world.memory);
  world.entry->dispatch->SetTarget(target);
  Batcher& batcher = *world.entry->batcher;
  (void)EnqueueRow(batcher, world.main_id, 1);
  (void)EnqueueRow(batcher, world.other_id, 1);
  batcher.Flush();
  check.True(world.entry->dispatch->QueueMarker(world.other_id, 5), "marker deferred");
  check.True(world.other_door->Take().empty(), "not before the batch");
  check.Equal(world.entry->dispatch->in_flight(), size_t{1}, "one job in flight");
  target->Run();
  auto theirs = world.other_door->Take();
  if (check.Equal(theirs.size(), size_t{2}, "answer then marker")) {
    check.True(theirs[0]->kind == DoorEvent::Kind::kExecuted, "answer first");
    check.True(theirs[1]->kind == DoorEvent::Kind::kMarker && theirs[1]->marker == 5, "marker second");
  }
  check.Equal(world.main_door->Take().size(), size_t{1}, "main got its answer, no marker");
}

}  // namespace
}  // namespace hotpath::batcher

int main() {
  hotpath::test::Checker check;
  hotpath::batcher::TestDoorTable(check);
  hotpath::batcher::TestRegistry(check);
  hotpath::batcher::TestMultiDoorRouting(check);
  hotpath::batcher::TestDoorGoneWhilePending(check);
  hotpath::batcher::TestStopFailsEveryDoor(check);
  hotpath::batcher::TestNoTargetRoutesToOwner(check);
  hotpath::batcher::TestMarkerFollowsInFlight(check);
  return check.ExitCode();
}
