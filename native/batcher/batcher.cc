// The batcher's thread loop and request path. The decisions come from the pure
// policy (policy.cc); this file owns the state, the memory and the callbacks.
#include "batcher/batcher.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include "batcher/detail/batcher_state.h"

#if defined(__linux__)
#include <sys/prctl.h>
#endif

namespace hotpath::batcher {

using detail::BatcherState;
using detail::BatchStorage;
using detail::LoopWork;
using detail::SealedWork;
using detail::Slot;
using detail::SlotBytes;

namespace {

Status Invalid(const BatcherConfig& config, const std::string& message) {
  return Status(StatusCode::kInvalidArgument, "model '" + config.model_name + "': " + message);
}

// Requires s.mu. Records an event for the loop; the caller notifies s.cv
// once it has released the lock.
void MarkWakeLocked(BatcherState& s) {
  s.wake_pending = true;
  ++s.wake_seq;
}

// Records an event and wakes the loop. Must not be called with s.mu held; the
// notify happens after the lock is released.
void Wake(BatcherState& s) {
  {
    std::lock_guard<std::mutex> guard(s.mu);
    MarkWakeLocked(s);
  }
  s.cv.notify_all();
}

// Buffers Enqueue reuses on its thread, so that once they have grown a
// request costs no heap allocation for its arrival key or its copy
// destinations. Leased for one Enqueue; an Enqueue nested on the same
// thread (a callback that enqueues) finds them leased and uses its own,
// which allocate only if used.
struct EnqueueScratch {
  Arrival arrival;
  std::vector<std::byte*> destinations;
  bool leased = false;
};

class ScratchLease {
 public:
  ScratchLease() : scratch_(ThreadScratch().leased ? own_ : ThreadScratch()) { scratch_.leased = true; }
  ~ScratchLease() { scratch_.leased = false; }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  EnqueueScratch& get() { return scratch_; }

 private:
  static EnqueueScratch& ThreadScratch() {
    thread_local EnqueueScratch scratch;
    return scratch;
  }
  EnqueueScratch own_;  // before scratch_: initialised first
  EnqueueScratch& scratch_;
};

// Requests a batch is sized for up front (slots, byte records, queued
// requests), so joining it does not reallocate; bounded so a large
// max_batch_size does not reserve much for batches that stay small.
constexpr uint32_t kReservedRequests = 64;

// Requires s.mu.
OpenBatch* FindBatch(BatcherState& s, uint64_t batch_id) {
  for (OpenBatch& batch : s.batches) {
    if (batch.id == batch_id) return &batch;
  }
  return nullptr;
}

Status CheckRequest(const BatcherConfig& config, const EnqueueRequest& request) {
  if (request.inputs.size() != config.input_count) {
    return Invalid(config, "expected " + std::to_string(config.input_count) +
                               " inputs, got " + std::to_string(request.inputs.size()));
  }
  if (request.rows == 0) return Invalid(config, "rows: expected >= 1, got 0");
  if (config.max_batch_size == 0 && request.rows != 1) {
    return Invalid(config, "rows: expected 1 for a model with max_batch_size 0, got " +
                               std::to_string(request.rows));
  }
  if (config.max_batch_size > 0 && request.rows > config.max_batch_size) {
    return Invalid(config, "rows: expected <= max_batch_size " +
                               std::to_string(config.max_batch_size) + ", got " +
                               std::to_string(request.rows));
  }
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    if (request.inputs[i].bytes > 0 && request.inputs[i].data == nullptr) {
      return Invalid(config, "input " + std::to_string(i) + ": null data for " +
                                 std::to_string(request.inputs[i].bytes) + " bytes");
    }
  }
  return Status::Ok();
}

// Fills `arrival` (reused: its vectors keep their capacity) from `request`.
void MakeArrival(const BatcherConfig& config, const EnqueueRequest& request, Arrival& arrival) {
  arrival.priority_level = EffectiveLevel(config, request.priority);
  arrival.rows = request.rows;
  arrival.deadline = request.deadline;
  arrival.shape.clear();
  arrival.input_bytes.clear();
  for (const RequestInput& input : request.inputs) {
    arrival.shape.push_back(static_cast<int64_t>(input.dims.size()));
    arrival.shape.insert(arrival.shape.end(), input.dims.begin(), input.dims.end());
    arrival.input_bytes.push_back(input.bytes);
  }
}

// Allocates one buffer per input, without s.mu held (BatchMemory may block).
// On failure the buffers already allocated free themselves.
Result<std::vector<BatchBuffer>> AllocateBuffers(BatcherState& s, uint64_t batch_id,
                                                 const std::vector<uint64_t>& capacity) {
  std::vector<BatchBuffer> buffers;
  buffers.reserve(capacity.size());
  for (size_t i = 0; i < capacity.size(); ++i) {
    const BufferSpec spec{s.config.memory_owner, batch_id, static_cast<uint32_t>(i),
                          capacity[i]};
    Result<MemoryBlock> block = s.memory->Allocate(spec);
    if (!block.ok()) return block.status();
    buffers.emplace_back(s.memory, block.value(), spec);
  }
  return Result<std::vector<BatchBuffer>>(std::move(buffers));
}

// Requires s.mu. Accounts for `request` leaving the queue unexecuted.
RejectedRequest TakeRejected(BatcherState& s, const QueuedRequest& request, RejectKind kind,
                             TimePoint now) {
  uint64_t limit = 0;
  if (kind == RejectKind::kTimeout && request.timeout_at) {
    limit = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                      *request.timeout_at - request.enqueued)
                                      .count());
  }
  --s.queued_per_level[request.priority_level - 1];
  switch (kind) {
    case RejectKind::kQueueFull: ++s.stats.rejected_queue_full; break;
    case RejectKind::kTimeout: ++s.stats.rejected_timeout; break;
    case RejectKind::kDeadlineExceeded: ++s.stats.rejected_deadline; break;
    case RejectKind::kShutdown: ++s.stats.rejected_shutdown; break;
    // Refusals at Enqueue only: a queued request never leaves for these, and
    // Enqueue counts its own (memory_failures).
    case RejectKind::kOverQuota:
    case RejectKind::kInvalid: break;
  }
  return RejectedRequest{request.id, request.sequence,
                         Rejection{kind, s.config.model_name, request.priority_level, limit},
                         now - request.enqueued, request.door};
}

// Requires s.mu. Removes batch `batch_id` from the open set with its storage.
std::pair<OpenBatch, BatchStorage> TakeBatch(BatcherState& s, uint64_t batch_id) {
  auto it = std::find_if(s.batches.begin(), s.batches.end(),
                         [batch_id](const OpenBatch& b) { return b.id == batch_id; });
  assert(it != s.batches.end());
  OpenBatch meta = std::move(*it);
  s.batches.erase(it);
  auto node = s.storage.extract(batch_id);
  return {std::move(meta), node.empty() ? BatchStorage{} : std::move(node.mapped())};
}

// Requires s.mu. Applies a policy decision to the state and collects what must
// be delivered outside the lock.
LoopWork ApplyLocked(BatcherState& s, const Decision& decision, TimePoint now) {
  LoopWork work;
  for (const Expiry& expiry : decision.expired) {
    OpenBatch* batch = FindBatch(s, expiry.batch_id);
    if (batch == nullptr) continue;
    auto it = std::find_if(batch->requests.begin(), batch->requests.end(),
                           [&](const QueuedRequest& r) { return r.sequence == expiry.sequence; });
    if (it == batch->requests.end()) continue;
    work.rejected.push_back(TakeRejected(s, *it, expiry.kind, now));
    batch->requests.erase(it);
  }
  for (uint64_t sequence : decision.delayed) {
    for (OpenBatch& batch : s.batches) {
      for (QueuedRequest& request : batch.requests) {
        if (request.sequence == sequence) {
          request.state = RequestState::kDelayed;
          ++s.stats.delayed;
        }
      }
    }
  }
  for (uint64_t batch_id : decision.seal) {
    auto [meta, storage] = TakeBatch(s, batch_id);
    for (const QueuedRequest& request : meta.requests) {
      --s.queued_per_level[request.priority_level - 1];
      ++s.stats.dispatched_requests;
      s.stats.inference_count += request.rows;
      s.stats.queue_ns += static_cast<uint64_t>((now - request.enqueued).count());
    }
    ++s.stats.execution_count;
    --s.idle_instances;
    work.sealed.push_back(SealedWork{std::move(meta), std::move(storage), now});
  }
  for (uint64_t batch_id : decision.discard) {
    work.discarded.push_back(TakeBatch(s, batch_id).second);
  }
  return work;
}

// No lock needed: the batch left the shared state in ApplyLocked. Packs the
// live requests' bytes over the holes expired requests left, then builds the
// batch handed to dispatch.
SealedBatch Seal(const BatcherConfig& config, SealedWork work) {
  SealedBatch out;
  out.batch_id = work.meta.id;
  const size_t inputs = work.storage.buffers.size();
  std::vector<uint64_t> packed(inputs, 0);
  uint32_t row = 0;
  size_t next_live = 0;
  for (size_t k = 0; k < work.storage.slots.size(); ++k) {
    const Slot& slot = work.storage.slots[k];
    // Both lists are in row order; a slot without a live request is a hole.
    if (next_live >= work.meta.requests.size() ||
        work.meta.requests[next_live].sequence != slot.sequence) {
      continue;
    }
    const QueuedRequest& request = work.meta.requests[next_live++];
    const SlotBytes* bytes = work.storage.slot_bytes.data() + k * inputs;
    for (size_t i = 0; i < inputs; ++i) {
      std::byte* base = work.storage.buffers[i].data();
      if (bytes[i].offset != packed[i] && bytes[i].size > 0) {
        std::memmove(base + packed[i], base + bytes[i].offset, bytes[i].size);
      }
      packed[i] += bytes[i].size;
    }
    out.requests.push_back(SealedRequest{request.id, request.sequence, request.rows, row,
                                         request.priority_level,
                                         work.sealed_at - request.enqueued, request.door});
    row += request.rows;
  }
  out.rows = row;
  for (size_t i = 0; i < inputs; ++i) {
    SealedInput input;
    input.buffer = std::move(work.storage.buffers[i]);
    input.bytes = packed[i];
    if (config.max_batch_size > 0) input.shape.push_back(row);
    const std::vector<int64_t>& dims = work.storage.dims[i];
    input.shape.insert(input.shape.end(), dims.begin(), dims.end());
    out.inputs.push_back(std::move(input));
  }
  return out;
}

// Runs the callbacks; called without s.mu.
void Deliver(BatcherState& s, LoopWork& work) {
  if (!work.rejected.empty()) s.callbacks.reject(std::move(work.rejected));
  for (SealedWork& sealed : work.sealed) s.callbacks.dispatch(Seal(s.config, std::move(sealed)));
  work.discarded.clear();  // frees the memory of batches nobody is left in
}

// A batch sealed by max_queue_delay is sealed when this thread's timed wait
// returns, and Linux lets a timed wait overshoot by the thread's timer slack
// (50 us by default): on a 200 us delay that is a quarter more. The loop
// thread asks for the smallest slack. Checked; a refusal (some sandboxes)
// leaves the default, which costs latency only, so the loop runs anyway.
void LowerTimerSlack() {
#if defined(__linux__)
  if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) != 0) return;
#endif
}

void RunLoop(BatcherState& s) {
  LowerTimerSlack();
  std::unique_lock<std::mutex> lock(s.mu);
  // Whether this activation of the loop began with an event rather than its
  // own timer (Create counts as one): it decides the linger (LoopTimer).
  bool after_event = true;
  while (!s.stop.load(std::memory_order_acquire)) {
    s.wake_pending = false;
    const uint64_t seen = s.wake_seq;
    const TimePoint now = s.clock->Now();
    const Decision decision = Decide(s.config, s.batches, s.idle_instances, now);
    LoopWork work = ApplyLocked(s, decision, now);
    s.next_wakeup = LoopTimer(s.config, decision, s.idle_instances, now, after_event);
    if (!work.empty()) {
      lock.unlock();
      Deliver(s, work);
      lock.lock();
      // Events may have arrived meanwhile: decide again, as after an event if one did.
      after_event = after_event || s.wake_pending;
      continue;
    }
    s.quiet_seq = seen;
    // Under the lock on purpose: Flush is a test hook, and notifying before
    // the wait below keeps its "loop is quiet" reading exact.
    s.quiet_cv.notify_all();
    s.clock->WaitUntil(s.cv, lock, s.next_wakeup,
                       [&s] { return s.wake_pending || s.stop.load(std::memory_order_acquire); });
    after_event = s.wake_pending;  // false: the timer ran out
  }
  s.loop_exited = true;
  s.quiet_cv.notify_all();
}

}  // namespace

Result<std::unique_ptr<Batcher>> Batcher::Create(BatcherConfig config,
                                                 std::shared_ptr<Clock> clock,
                                                 std::shared_ptr<BatchMemory> memory,
                                                 BatcherCallbacks callbacks) {
  if (Status status = ValidateConfig(config); !status.ok()) return status;
  if (!clock || !memory || !callbacks.dispatch || !callbacks.reject) {
    return Invalid(config, "Batcher::Create needs a clock, a memory and both callbacks");
  }
  auto state = std::make_unique<BatcherState>(std::move(config), std::move(clock),
                                              std::move(memory), std::move(callbacks));
  BatcherState& s = *state;
  s.queued_per_level.assign(std::max<uint32_t>(s.config.priority_levels, 1), 0);
  s.idle_instances = s.config.instance_count;
  s.stats.idle_instances = s.idle_instances;
  s.clock_subscription = s.clock->Subscribe([&s] { Wake(s); });
  try {
    s.thread = std::thread(RunLoop, std::ref(s));
  } catch (const std::system_error& error) {
    s.clock->Unsubscribe(s.clock_subscription);
    return Status(StatusCode::kInternal,
                  "model '" + s.config.model_name + "': batcher thread: " + error.what());
  }
  return std::unique_ptr<Batcher>(new Batcher(std::move(state)));
}

Batcher::Batcher(std::unique_ptr<BatcherState> state) : state_(std::move(state)) {}

Batcher::~Batcher() { Stop(); }

EnqueueResult Batcher::Enqueue(const EnqueueRequest& request) {
  BatcherState& s = *state_;
  if (Status status = CheckRequest(s.config, request); !status.ok()) {
    return EnqueueResult{std::move(status), RejectKind::kInvalid};
  }
  ScratchLease lease;
  EnqueueScratch& scratch = lease.get();
  MakeArrival(s.config, request, scratch.arrival);
  const Arrival& arrival = scratch.arrival;
  const QueuePolicy& policy = PolicyForLevel(s.config, arrival.priority_level);
  const std::optional<Duration> timeout = EffectiveTimeout(policy, request.timeout_us);

  // Buffers for a new batch, allocated with the lock released; when the retry
  // finds a batch to join after all, they are freed on return (unlocked).
  std::vector<BatchBuffer> fresh;
  uint64_t fresh_batch_id = 0;
  uint64_t batch_id = 0;
  uint64_t sequence = 0;
  std::optional<TimePoint> expiry;
  std::vector<std::byte*>& destinations = scratch.destinations;
  destinations.assign(request.inputs.size(), nullptr);
  for (;;) {
    std::unique_lock<std::mutex> lock(s.mu);
    if (s.stop.load(std::memory_order_acquire)) {
      return EnqueueResult{ToStatus(Rejection{RejectKind::kShutdown, s.config.model_name,
                                              arrival.priority_level, 0}),
                           RejectKind::kShutdown};
    }
    const TimePoint now = s.clock->Now();
    Placement placement = Place(s.config, s.batches, arrival, s.queued_per_level, now);
    if (placement.kind == Placement::Kind::kReject) {
      if (placement.rejection.kind == RejectKind::kQueueFull) ++s.stats.rejected_queue_full;
      if (placement.rejection.kind == RejectKind::kDeadlineExceeded) ++s.stats.rejected_deadline;
      return EnqueueResult{ToStatus(placement.rejection), placement.rejection.kind};
    }
    if (placement.kind == Placement::Kind::kOpen && fresh.empty()) {
      fresh_batch_id = s.next_batch_id++;
      lock.unlock();
      Result<std::vector<BatchBuffer>> buffers =
          AllocateBuffers(s, fresh_batch_id, placement.capacity_bytes);
      if (!buffers.ok()) {
        std::lock_guard<std::mutex> guard(s.mu);
        ++s.stats.memory_failures;
        // Only "no room" is a refusal; any other memory failure is a fault.
        std::optional<RejectKind> kind;
        if (buffers.status().code() == StatusCode::kResourceExhausted) kind = RejectKind::kOverQuota;
        return EnqueueResult{buffers.status(), kind};
      }
      fresh = std::move(buffers).value();
      continue;  // the queue may have changed while unlocked
    }

    OpenBatch* batch = nullptr;
    if (placement.kind == Placement::Kind::kOpen) {
      if (placement.close_index) s.batches[*placement.close_index].closed = true;
      const size_t expected = std::min(MaxPreferredBatchSize(s.config), kReservedRequests);
      OpenBatch opened;
      opened.id = fresh_batch_id;
      opened.shape = arrival.shape;
      opened.bytes_reserved.assign(fresh.size(), 0);
      for (const BatchBuffer& buffer : fresh) opened.bytes_capacity.push_back(buffer.capacity());
      opened.requests.reserve(expected);
      BatchStorage storage;
      storage.buffers = std::move(fresh);
      fresh.clear();
      for (const RequestInput& input : request.inputs) storage.dims.push_back(input.dims);
      storage.slots.reserve(expected);
      storage.slot_bytes.reserve(expected * request.inputs.size());
      s.storage.emplace(opened.id, std::move(storage));
      s.batches.push_back(std::move(opened));
      batch = &s.batches.back();
    } else {
      batch = &s.batches[placement.batch_index];
    }

    // Reserve this request's rows and bytes; the copy happens unlocked.
    BatchStorage& storage = s.storage.at(batch->id);
    sequence = s.next_sequence++;
    storage.slots.push_back(Slot{sequence, arrival.rows, batch->reserved_rows});
    for (size_t i = 0; i < request.inputs.size(); ++i) {
      storage.slot_bytes.push_back(SlotBytes{batch->bytes_reserved[i], request.inputs[i].bytes});
      destinations[i] = storage.buffers[i].data() + batch->bytes_reserved[i];
      batch->bytes_reserved[i] += request.inputs[i].bytes;
    }
    batch->reserved_rows += arrival.rows;
    ++batch->copies_in_flight;
    ++s.copies_in_flight;
    QueuedRequest queued;
    queued.id = request.id;
    queued.door = request.door;
    queued.sequence = sequence;
    queued.priority_level = arrival.priority_level;
    queued.rows = arrival.rows;
    queued.enqueued = now;
    if (timeout) queued.timeout_at = now + *timeout;
    queued.timeout_action = policy.timeout_action;
    queued.deadline = request.deadline;
    queued.state = RequestState::kCopying;
    batch->requests.push_back(queued);
    ++s.queued_per_level[arrival.priority_level - 1];
    batch_id = batch->id;
    expiry = queued.deadline;
    if (queued.timeout_at && (!expiry || *queued.timeout_at < *expiry)) expiry = queued.timeout_at;
    break;
  }

  // The one copy, straight into the batch. The batch cannot be sealed, freed
  // or compacted while copies_in_flight > 0, and other writers own other bytes.
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    if (request.inputs[i].bytes > 0) {
      std::memcpy(destinations[i], request.inputs[i].data, request.inputs[i].bytes);
    }
  }

  bool wake = false;
  bool stopping = false;
  bool delivering = false;
  LoopWork inline_work;
  {
    std::lock_guard<std::mutex> guard(s.mu);
    OpenBatch* batch = FindBatch(s, batch_id);
    assert(batch != nullptr);
    for (QueuedRequest& queued : batch->requests) {
      if (queued.sequence == sequence && queued.state == RequestState::kCopying) {
        queued.state = RequestState::kQueued;
      }
    }
    --batch->copies_in_flight;
    --s.copies_in_flight;
    // Stop() waits for copies (on drained_cv); the loop has been told to
    // stop already.
    stopping = s.stop.load(std::memory_order_acquire);
    // The loop only needs this event if it changes what the loop would do:
    // the request expires before the loop's timer, or, with an instance
    // idle, the policy would now seal, reject or discard something or wants
    // an earlier wake-up (a new batch's delay) than the loop's timer, which
    // lingers one delay past each event (LoopTimer), so a batch opened then
    // needs no wake either. A request joining a batch that still waits for
    // its delay changes nothing, and skipping the futex wake (and the loop
    // thread's turn on a core) for it is most of what an enqueue costs under
    // load. With every instance busy, batches just grow.
    wake = !stopping && expiry && (!s.next_wakeup || *expiry < *s.next_wakeup);
    if (!stopping && !wake && s.idle_instances > 0) {
      const TimePoint now = s.clock->Now();
      const Decision next = Decide(s.config, s.batches, s.idle_instances, now);
      const bool earlier_timer = next.next_wakeup && (!s.next_wakeup || *next.next_wakeup < *s.next_wakeup);
      if (!next.seal.empty() && !s.config.preserve_ordering) {
        // A batch is ready now (no batching, a preferred size reached, or no
        // delay): this thread acts on the decision as the loop would, rather
        // than waking the loop to do it. That saves a thread hand-off (a
        // futex wake and a turn on a core) per batch, which on a busy 2-core
        // machine is tens of microseconds of each request's latency. Ordered
        // models keep the loop as the one dispatcher, so batches cannot race.
        inline_work = ApplyLocked(s, next, now);
        ++s.deliveries_in_flight;
        delivering = true;
        wake = earlier_timer;
      } else {
        wake = !next.seal.empty() || !next.expired.empty() || !next.delayed.empty() || !next.discard.empty() ||
               earlier_timer;
      }
    }
    // Marked under this lock rather than Wake()'s own: one lock round trip
    // less per waking enqueue, at a moment the loop may be taking the lock.
    if (wake) MarkWakeLocked(s);
  }
  if (wake) s.cv.notify_all();
  if (stopping) s.drained_cv.notify_all();
  if (delivering) {
    Deliver(s, inline_work);
    {
      std::lock_guard<std::mutex> guard(s.mu);
      --s.deliveries_in_flight;
      // Read under the lock: a Stop() that set `stop` before this point
      // either sees the count (if it checks after) or is notified below.
      stopping = s.stop.load(std::memory_order_acquire);
    }
    if (stopping) s.drained_cv.notify_all();  // Stop() may be waiting for this delivery
  }
  return EnqueueResult{};
}

Status Batcher::InstanceIdle() {
  BatcherState& s = *state_;
  {
    std::lock_guard<std::mutex> guard(s.mu);
    if (s.idle_instances >= s.config.instance_count) {
      return Status(StatusCode::kFailedPrecondition,
                    "model '" + s.config.model_name + "': InstanceIdle with all " +
                        std::to_string(s.config.instance_count) + " instances already idle");
    }
    ++s.idle_instances;
    // An idle instance changes what the loop would do only for requests that
    // wait in an open batch; with none, the next Enqueue decides itself (it
    // seals inline, or wakes the loop for an ordered model). Skipping the wake spares the loop thread a turn on a
    // core per batch when requests come one at a time.
    if (s.batches.empty() && !s.stop.load(std::memory_order_acquire)) return Status::Ok();
  }
  Wake(s);
  return Status::Ok();
}

Status Batcher::InstanceBusy() {
  BatcherState& s = *state_;
  std::lock_guard<std::mutex> guard(s.mu);
  if (s.idle_instances == 0) {
    return Status(StatusCode::kFailedPrecondition,
                  "model '" + s.config.model_name + "': InstanceBusy with no idle instance");
  }
  --s.idle_instances;  // fewer idle instances never makes the loop act sooner
  return Status::Ok();
}

void Batcher::Stop() {
  BatcherState& s = *state_;
  std::call_once(s.stop_once, [&s] {
    assert(std::this_thread::get_id() != s.thread.get_id() &&
           "a Batcher must not be stopped from its own callbacks");
    s.stop.store(true, std::memory_order_release);
    Wake(s);
    if (s.thread.joinable()) s.thread.join();
    s.clock->Unsubscribe(s.clock_subscription);
    LoopWork work;
    {
      std::unique_lock<std::mutex> lock(s.mu);
      // Enqueues that reserved a slot before the stop finish their copy, and
      // their inline dispatch, first.
      s.drained_cv.wait(lock, [&s] { return s.copies_in_flight == 0 && s.deliveries_in_flight == 0; });
      const TimePoint now = s.clock->Now();
      for (OpenBatch& batch : s.batches) {
        for (const QueuedRequest& request : batch.requests) {
          work.rejected.push_back(TakeRejected(s, request, RejectKind::kShutdown, now));
        }
      }
      s.batches.clear();
      for (auto& [id, storage] : s.storage) work.discarded.push_back(std::move(storage));
      s.storage.clear();
      s.stopped = true;
    }
    s.quiet_cv.notify_all();
    Deliver(s, work);
  });
}

BatcherStats Batcher::Stats() const {
  const BatcherState& s = *state_;
  std::lock_guard<std::mutex> guard(s.mu);
  BatcherStats stats = s.stats;
  stats.pending_requests = 0;
  for (uint32_t queued : s.queued_per_level) stats.pending_requests += queued;
  stats.open_batches = s.batches.size();
  stats.idle_instances = s.idle_instances;
  return stats;
}

void Batcher::Flush() {
  BatcherState& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  const uint64_t target = s.wake_seq;
  s.quiet_cv.wait(lock, [&] { return s.quiet_seq >= target || s.loop_exited || s.stopped; });
}

}  // namespace hotpath::batcher
