// batcher* bindings. See batcher_binding.h. No batching logic here: argument
// guards, per-environment bookkeeping (this environment's door) and value
// translation only; the batchers themselves live in the process-wide
// registry (batcher/batcher_registry.h).
#include "napi/batcher_binding.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "arena/registry.h"
#include "batcher/arena_batch_memory.h"
#include "batcher/batcher.h"
#include "batcher/batcher_registry.h"
#include "batcher/clock.h"
#include "batcher/doors.h"
#include "batcher/worker_pool_target.h"
#include "executor/batch_target.h"
#include "napi/arena_binding_values.h"
#include "napi/batcher_binding_values.h"
#include "napi/batcher_door.h"
#include "napi/export_functions.h"
#include "napi/result_js.h"

namespace hotpath::napi {

namespace {

namespace bt = hotpath::batcher;
using bt::WorkerOutputSpec;
using bt::WorkerPool;
using bt::WorkerPoolTarget;

// Bound on relative times from JS, as in the core (about 11.6 days).
constexpr uint64_t kMaxMicroseconds = 1'000'000'000'000;

// One per environment; touched only on its JS thread. Owned by the
// environment cleanup hook.
struct BatcherEnv {
  explicit BatcherEnv(ExecutorRegistry& registry) : executors(registry) {}
  ExecutorRegistry& executors;  // borrowed; outlives every JS call (executor_registry.h)
  // This environment's door, opened at its first batcherCreate or
  // batcherAttach (an environment that never batches, such as a piscina
  // worker, makes no TSFN); shared with the door's TSFN.
  std::shared_ptr<BatcherDoorState> door;
  // What an accepted batcherEnqueue returns: one frozen {ok: true, value:
  // null} made at the first enqueue, so accepting a request builds no
  // result object.
  Napi::ObjectReference accepted;

  Napi::Value Accepted(Napi::Env env) {
    if (accepted.IsEmpty()) {
      Napi::Object result = OkResult(env, env.Null());
      result.Freeze();
      accepted = Napi::Persistent(result);
    }
    return accepted.Value();
  }

  Result<BatcherDoorState*> OpenDoor(Napi::Env env) {
    if (!door) {
      Result<std::shared_ptr<BatcherDoorState>> opened = BatcherDoorState::Open(env);
      if (!opened.ok()) return opened.status();
      door = std::move(opened).value();
    }
    return door.get();
  }
};

void OnEnvCleanup(BatcherEnv* raw) {
  std::unique_ptr<BatcherEnv> state(raw);
  if (!state->door) return;
  // The batchers this environment created stop first (joining their
  // threads; their pending requests of every door get SHUTDOWN, which other
  // doors still receive). Jobs in flight keep their target; the executor
  // binding's cleanup stops them. Then this door closes: answers for it from
  // other environments' batchers are dropped from now on, and the batches
  // it held lose its share.
  bt::BatcherRegistry::Process().StopOwnedBy(state->door->id());
  state->door->Close();
}

BatcherEnv& EnvOf(const Napi::CallbackInfo& info) { return *static_cast<BatcherEnv*>(info.Data()); }

// A registered batcher this environment has a handle on (created or
// attached), and this environment's door.
struct Attached {
  std::shared_ptr<bt::RegisteredBatcher> entry;
  BatcherDoorState* door = nullptr;
  bool owner() const { return entry->owner == door->id(); }
};

Status Closed() { return Status(StatusCode::kFailedPrecondition, "batcher is closed"); }

// `stopped_ok`: a stopped batcher will do (its counters are read once more
// after stop); otherwise it is closed. Found through this environment's
// handler (which holds the registry entry weakly), not the registry: no
// process-wide lock on the enqueue path.
Result<Attached> AttachedOf(const Napi::CallbackInfo& info, bool stopped_ok = false) {
  Result<uint64_t> id = ToU64(info[0], "batcher");
  if (!id.ok()) return id.status();
  BatcherEnv& state = EnvOf(info);
  if (!state.door) return Closed();
  std::shared_ptr<bt::RegisteredBatcher> entry = state.door->Entry(id.value());
  if (!entry) return Closed();  // no handle here, or forgotten by the registry
  if (!stopped_ok && entry->stopped.load()) return Closed();
  return Attached{std::move(entry), state.door.get()};
}

Status OwnerOnly(const Attached& attached, const char* what) {
  if (attached.owner()) return Status();
  return Status(StatusCode::kFailedPrecondition,
                std::string("only the thread that created a batcher may ") + what + " it");
}

// JS thread: posts a marker to this door behind everything sent so far,
// including the events of batches already handed to a target.
bool QueueMarker(const Attached& attached, uint64_t marker) {
  attached.door->AddOutstanding(1);
  if (attached.entry->dispatch->QueueMarker(attached.door->id(), marker)) return true;
  attached.door->Settle(1);
  return false;
}

Napi::Value CreateJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  BatcherEnv& state = EnvOf(info);
  Result<BatcherCreateArgs> args = ToBatcherCreateArgs(info[0]);
  if (!args.ok()) return ErrorResult(env, args.status());
  if (!info[1].IsFunction()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "onEvent must be a function"));
  BatcherCreateArgs& a = args.value();

  Result<std::shared_ptr<arena::Arena>> arena = arena::FindRegisteredArena(a.arena);
  if (!arena.ok()) return ErrorResult(env, arena.status());
  Result<arena::TenantId> tenant = arena.value()->FindTenant(a.tenant);
  if (!tenant.ok()) return ErrorResult(env, tenant.status());
  Result<std::shared_ptr<bt::ArenaBatchMemory>> memory = bt::ArenaBatchMemory::Create(arena.value(), tenant.value());
  if (!memory.ok()) return ErrorResult(env, memory.status());
  Result<BatcherDoorState*> door = state.OpenDoor(env);
  if (!door.ok()) return ErrorResult(env, door.status());

  std::shared_ptr<bt::ManualClock> manual;
  std::shared_ptr<bt::Clock> clock;
  if (a.manual_clock) {
    manual = std::make_shared<bt::ManualClock>();
    clock = manual;
  } else {
    clock = std::make_shared<bt::SteadyClock>();
  }
  Result<std::shared_ptr<bt::RegisteredBatcher>> created = bt::BatcherRegistry::Process().Create(
      std::move(a.config), std::move(clock), std::move(manual), memory.value(), bt::DoorTable::Process(),
      door.value()->id(), std::move(a.input_dims));
  if (!created.ok()) return ErrorResult(env, created.status());
  const uint64_t id = created.value()->id;
  door.value()->AddHandler(id, info[1].As<Napi::Function>(), created.value());  // a fresh id: never taken
  return OkResult(env, Napi::Number::New(env, static_cast<double>(id)));
}

// (batcher, onEvent) -> null. This environment (a door thread) gets its own
// handle on a batcher another environment created: it may enqueue, and the
// answers to its requests arrive here, through onEvent.
Napi::Value AttachJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<uint64_t> id = ToU64(info[0], "batcher");
  if (!id.ok()) return ErrorResult(env, id.status());
  if (!info[1].IsFunction()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "onEvent must be a function"));
  Result<std::shared_ptr<bt::RegisteredBatcher>> entry = bt::BatcherRegistry::Process().Find(id.value());
  if (!entry.ok()) return ErrorResult(env, entry.status());
  if (entry.value()->stopped.load()) return ErrorResult(env, Closed());
  Result<BatcherDoorState*> door = EnvOf(info).OpenDoor(env);
  if (!door.ok()) return ErrorResult(env, door.status());
  if (!door.value()->AddHandler(id.value(), info[1].As<Napi::Function>(), entry.value())) {
    return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "this thread has a handle on that batcher already"));
  }
  return OkResult(env, env.Null());
}

// (batcher) -> whether a handle was dropped. Only for attached handles (the
// creator stops instead): answers for this environment's requests still
// pending are dropped when they come, releasing their batch shares.
Napi::Value DetachJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<uint64_t> id = ToU64(info[0], "batcher");
  if (!id.ok()) return ErrorResult(env, id.status());
  BatcherEnv& state = EnvOf(info);
  if (!state.door || !state.door->HasHandler(id.value())) return OkResult(env, Napi::Boolean::New(env, false));
  Result<std::shared_ptr<bt::RegisteredBatcher>> entry = bt::BatcherRegistry::Process().Find(id.value());
  if (entry.ok() && entry.value()->owner == state.door->id()) {
    return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "the thread that created a batcher stops it"));
  }
  state.door->RemoveHandler(id.value());
  return OkResult(env, Napi::Boolean::New(env, true));
}

// (batcher, requestId, rows, priority, timeoutUs, deadlineUs | null, inputs, variableDims | null)
// From any environment with a handle on the batcher: the request carries
// this environment's door, and its answer comes back here.
Napi::Value EnqueueJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attached> found = AttachedOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  const bt::RegisteredBatcher& entry = *found.value().entry;
  // Reused by every enqueue of this thread (Enqueue copies what it keeps),
  // so the steady state allocates no dims vectors per request. One per
  // thread: several JS threads enqueue at once.
  thread_local bt::EnqueueRequest scratch;
  bt::EnqueueRequest& request = scratch;
  request.deadline.reset();
  request.door = found.value().door->id();
  Result<uint64_t> id = ToU64(info[1], "requestId");
  Result<uint64_t> rows = ToU64(info[2], "rows");
  Result<uint64_t> priority = ToU64(info[3], "priority");
  Result<uint64_t> timeout = ToU64(info[4], "timeoutUs");
  for (const Status* s : {&id.status(), &rows.status(), &priority.status(), &timeout.status()}) {
    if (!s->ok()) return ErrorResult(env, *s);
  }
  if (rows.value() > UINT32_MAX || priority.value() > UINT32_MAX) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument, "rows and priority must fit in 32 bits"));
  }
  request.id = id.value();
  request.rows = static_cast<uint32_t>(rows.value());
  request.priority = static_cast<uint32_t>(priority.value());
  request.timeout_us = timeout.value();
  if (!info[5].IsNull() && !info[5].IsUndefined()) {
    Result<uint64_t> remaining = ToU64(info[5], "deadlineUs");
    if (!remaining.ok()) return ErrorResult(env, remaining.status());
    request.deadline = entry.clock->Now() + std::chrono::microseconds(std::min(remaining.value(), kMaxMicroseconds));
  }
  if (Status s = ToRequestInputs(info[6], info[7], entry.input_dims, entry.variable_dims, &request.inputs); !s.ok()) {
    return ErrorResult(env, s);
  }

  // Copies the inputs. A batch it finds ready is dispatched from here, but
  // dispatch only posts to doors or hands off to a target: JS is never
  // called back from inside Enqueue.
  const bt::EnqueueResult enqueued = entry.batcher->Enqueue(request);
  if (enqueued.ok()) {
    found.value().door->AddOutstanding(1);
    return EnvOf(info).Accepted(env);
  }
  Napi::Object result = ErrorResult(env, enqueued.status);
  // The core says why it refused; a failure without a kind is a fault, not a refusal.
  if (enqueued.kind) result.Set("reason", Napi::String::New(env, bt::RejectKindName(*enqueued.kind)));
  return result;
}

template <bool kIdle>
Napi::Value InstanceNoticeJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attached> found = AttachedOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  bt::Batcher& batcher = *found.value().entry->batcher;
  Status status = kIdle ? batcher.InstanceIdle() : batcher.InstanceBusy();
  return status.ok() ? OkResult(env, env.Null()) : ErrorResult(env, status);
}

// The batcher's counters (process-wide: every door's requests), plus the
// batches this environment holds.
Napi::Value StatsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attached> found = AttachedOf(info, /*stopped_ok=*/true);
  if (!found.ok()) return ErrorResult(env, found.status());
  const Attached& a = found.value();
  return OkResult(env, BatcherStatsToJs(env, a.entry->batcher->Stats(), a.door->HeldCount(a.entry->id)));
}

// (batcher, marker) -> whether the marker was queued (false: already
// stopped). The creating environment only. Marks the batcher stopped (every
// door's later calls find it closed, but stats), stops its thread, routes
// the SHUTDOWN rejections of every door's pending requests to their doors,
// then queues the marker to this door behind them. This door's handler and
// the registry entry go once the marker is delivered.
Napi::Value StopJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<uint64_t> marker = ToU64(info[1], "marker");
  if (!marker.ok()) return ErrorResult(env, marker.status());
  Result<Attached> found = AttachedOf(info, /*stopped_ok=*/true);
  if (!found.ok()) return OkResult(env, Napi::Boolean::New(env, false));  // stopped and forgotten already
  const Attached& a = found.value();
  if (Status s = OwnerOnly(a, "stop"); !s.ok()) return ErrorResult(env, s);
  if (!bt::BatcherRegistry::Process().Stop(a.entry->id)) return OkResult(env, Napi::Boolean::New(env, false));
  // Behind the 'executed' events of batches still running on a target.
  const bool queued = QueueMarker(a, marker.value());
  a.entry->dispatch->SetTarget(nullptr);  // nothing is dispatched any more
  if (queued) {
    // Handler and registry entry go once the marker is delivered (JS reads
    // the final counters before that).
    a.door->ForgetAfter(a.entry->id, marker.value());
  } else {
    a.door->RemoveHandler(a.entry->id);
    bt::BatcherRegistry::Process().Forget(a.entry->id);
  }
  return OkResult(env, Napi::Boolean::New(env, queued));
}

// (batcher, marker) -> whether the marker was queued. Waits (blocking this
// thread briefly) until the loop has acted on every earlier event, then
// queues the marker to this door behind whatever that produced.
Napi::Value FlushJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attached> found = AttachedOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> marker = ToU64(info[1], "marker");
  if (!marker.ok()) return ErrorResult(env, marker.status());
  found.value().entry->batcher->Flush();
  return OkResult(env, Napi::Boolean::New(env, QueueMarker(found.value(), marker.value())));
}

// (batcher, us): ManualClock only. Returns once the loop has acted on the new time.
Napi::Value AdvanceClockJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attached> found = AttachedOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> us = ToU64(info[1], "us");
  if (!us.ok()) return ErrorResult(env, us.status());
  const bt::RegisteredBatcher& entry = *found.value().entry;
  if (!entry.manual) {
    return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "advanceClock needs a batcher created with clock 'manual'"));
  }
  entry.manual->Advance(std::chrono::microseconds(std::min(us.value(), kMaxMicroseconds)));
  entry.batcher->Flush();
  return OkResult(env, env.Null());
}

// (batcher, batchId) -> whether this environment's share of a held batch
// was released now (false: already, or never held here). Works after the
// batcher stopped: held batches belong to the door, not to the batcher.
Napi::Value ReleaseBatchJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<uint64_t> batcher = ToU64(info[0], "batcher");
  Result<uint64_t> batch_id = ToU64(info[1], "batchId");
  if (!batcher.ok() || !batch_id.ok()) return ErrorResult(env, !batcher.ok() ? batcher.status() : batch_id.status());
  BatcherEnv& state = EnvOf(info);
  // Drops the share; the last share drops the arena references.
  const bool released = state.door && state.door->Release(batcher.value(), batch_id.value());
  return OkResult(env, Napi::Boolean::New(env, released));
}

// A held batch's block, for ViewJs and CopyOutJs: indices [0, inputs) are
// the inputs; for an executed batch, [inputs, inputs + outputs) are its
// outputs. The bytes stay valid while the door holds the batch (until
// ReleaseBatchJs on this thread). FAILED_PRECONDITION for a batch this door
// does not hold, INVALID_ARGUMENT for an index past its blocks.
struct HeldBlock {
  std::byte* data = nullptr;
  uint64_t bytes = 0;
};

Result<HeldBlock> HeldBlockOf(BatcherEnv& state, uint64_t batcher, uint64_t batch_id, uint64_t index) {
  const bt::SharedBatch* held = state.door ? state.door->Held(batcher, batch_id) : nullptr;
  if (held == nullptr) {
    return Status(StatusCode::kFailedPrecondition, "batch " + std::to_string(batch_id) + " was released");
  }
  const uint64_t inputs = held->batch.inputs.size();
  if (index < inputs) {
    const bt::SealedInput& sealed = held->batch.inputs[index];
    return HeldBlock{sealed.buffer.data(), sealed.bytes};
  }
  if (index - inputs < held->outputs.size()) {
    const uint64_t output = index - inputs;
    const uint64_t written = output < held->output_bytes.size() ? held->output_bytes[output] : 0;
    return HeldBlock{held->outputs[output].data(), std::min(written, held->outputs[output].capacity())};
  }
  return Status(StatusCode::kInvalidArgument, "index " + std::to_string(index) + " out of range: the batch has " +
                                                  std::to_string(inputs) + " inputs and " +
                                                  std::to_string(held->outputs.size()) + " outputs");
}

// (batcher, batchId, index): a block's used bytes (indices as HeldBlockOf)
// as an external ArrayBuffer, no copy. It holds no reference: the TS wrapper
// detaches it when the batch is released.
Napi::Value ViewJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<uint64_t> batcher = ToU64(info[0], "batcher");
  Result<uint64_t> batch_id = ToU64(info[1], "batchId");
  Result<uint64_t> index = ToU64(info[2], "input");
  for (const Status* s : {&batcher.status(), &batch_id.status(), &index.status()}) {
    if (!s->ok()) return ErrorResult(env, *s);
  }
  Result<HeldBlock> block = HeldBlockOf(EnvOf(info), batcher.value(), batch_id.value(), index.value());
  if (!block.ok()) return ErrorResult(env, block.status());
  Napi::ArrayBuffer view = Napi::ArrayBuffer::New(env, block.value().data, block.value().bytes, [](Napi::Env, void*) {});
  return OkResult(env, view);
}

// (batcher, batchId, index, byteOffset, byteLength): a copy of those bytes
// of a held batch's block (indices as HeldBlockOf) in a new ArrayBuffer that
// V8 owns. What a request's answer takes of the outputs: unlike a view, the
// copy needs no detach when the batch goes, and detaching an external
// ArrayBuffer costs Node a thread-safe immediate (an eventfd write and one
// more event-loop turn) per buffer, which at one request per batch is a
// whole extra wake-up of this thread per request.
Napi::Value CopyOutJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<uint64_t> batcher = ToU64(info[0], "batcher");
  Result<uint64_t> batch_id = ToU64(info[1], "batchId");
  Result<uint64_t> index = ToU64(info[2], "index");
  Result<uint64_t> offset = ToU64(info[3], "byteOffset");
  Result<uint64_t> length = ToU64(info[4], "byteLength");
  for (const Status* s : {&batcher.status(), &batch_id.status(), &index.status(), &offset.status(), &length.status()}) {
    if (!s->ok()) return ErrorResult(env, *s);
  }
  Result<HeldBlock> block = HeldBlockOf(EnvOf(info), batcher.value(), batch_id.value(), index.value());
  if (!block.ok()) return ErrorResult(env, block.status());
  const uint64_t bytes = block.value().bytes;
  // Written so that neither the sum nor the subtraction can wrap.
  if (offset.value() > bytes || length.value() > bytes - offset.value()) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument, "bytes [" + std::to_string(offset.value()) + ", +" +
                                                                std::to_string(length.value()) + ") past the block's " +
                                                                std::to_string(bytes)));
  }
  Napi::ArrayBuffer copy = Napi::ArrayBuffer::New(env, static_cast<size_t>(length.value()));
  if (length.value() > 0) std::memcpy(copy.Data(), block.value().data + offset.value(), static_cast<size_t>(length.value()));
  return OkResult(env, copy);
}

// The executor as a batcher's target: output buffers come from the
// batcher's own arena memory, charged like its inputs under `owner`.
Result<std::shared_ptr<bt::ExecutionTarget>> MakeExecutorTarget(std::shared_ptr<executor::Executor> executor,
                                                                std::shared_ptr<bt::BatchMemory> memory, uint64_t owner) {
  return std::shared_ptr<bt::ExecutionTarget>(
      std::make_shared<executor::ExecutorTarget>(std::move(executor), std::move(memory), owner));
}

// (batcher, executor id | 0) -> null. From now on sealed batches go to that
// executor (natively, on the batcher thread), or to JS again with 0.
Napi::Value SetTargetJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attached> found = AttachedOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  if (Status s = OwnerOnly(found.value(), "set the target of"); !s.ok()) return ErrorResult(env, s);
  Result<uint64_t> executor_id = ToU64(info[1], "executor");
  if (!executor_id.ok()) return ErrorResult(env, executor_id.status());
  const bt::RegisteredBatcher& instance = *found.value().entry;
  if (executor_id.value() == 0) {
    instance.dispatch->SetTarget(nullptr);
    return OkResult(env, env.Null());
  }
  Result<std::shared_ptr<executor::Executor>> executor = EnvOf(info).executors.Find(executor_id.value());
  if (!executor.ok()) return ErrorResult(env, executor.status());
  if (executor.value()->inputs().size() != instance.input_count) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument,
                                   "the executor has " + std::to_string(executor.value()->inputs().size()) +
                                       " inputs, the batcher " + std::to_string(instance.input_count)));
  }
  Result<std::shared_ptr<bt::ExecutionTarget>> target = MakeExecutorTarget(executor.value(), instance.memory, instance.memory_owner);
  if (!target.ok()) return ErrorResult(env, target.status());
  instance.dispatch->SetTarget(std::move(target).value());
  return OkResult(env, env.Null());
}

// (batcher, pool, outputs: [{elementBytes, dims | null}], batched) -> null.
// From now on sealed batches go to that onnxruntime worker pool's channels
// (natively, on the batcher thread). `dims` are per row when `batched`
// (the output is pre-allocated as [rows, ...dims]); null: the worker's run
// allocates it. batcherSetTarget(batcher, 0) sends batches to JS again.
Napi::Value SetWorkerTargetJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attached> found = AttachedOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  if (Status s = OwnerOnly(found.value(), "set the target of"); !s.ok()) return ErrorResult(env, s);
  Result<uint64_t> pool_id = ToU64(info[1], "pool");
  if (!pool_id.ok()) return ErrorResult(env, pool_id.status());
  if (!info[2].IsArray()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "outputs must be an array"));
  const bt::RegisteredBatcher& instance = *found.value().entry;
  Result<std::shared_ptr<WorkerPool>> pool = WorkerPool::Find(pool_id.value());
  if (!pool.ok()) return ErrorResult(env, pool.status());
  std::vector<WorkerOutputSpec> outputs;
  Napi::Array specs = info[2].As<Napi::Array>();
  for (uint32_t i = 0; i < specs.Length(); ++i) {
    Napi::Value entry = specs.Get(i);
    if (!entry.IsObject()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "outputs entries must be objects"));
    Napi::Object spec = entry.As<Napi::Object>();
    Result<uint64_t> element_bytes = ToU64(spec.Get("elementBytes"), "elementBytes");
    if (!element_bytes.ok()) return ErrorResult(env, element_bytes.status());
    WorkerOutputSpec out;
    out.element_bytes = element_bytes.value();
    Napi::Value dims = spec.Get("dims");
    if (dims.IsArray()) {
      std::vector<int64_t> known;
      Napi::Array array = dims.As<Napi::Array>();
      for (uint32_t d = 0; d < array.Length(); ++d) {
        Result<uint64_t> dim = ToU64(array.Get(d), "dims");
        if (!dim.ok()) return ErrorResult(env, dim.status());
        known.push_back(static_cast<int64_t>(dim.value()));
      }
      out.dims = std::move(known);
    }
    outputs.push_back(std::move(out));
  }
  const bool batched = info[3].ToBoolean();
  instance.dispatch->SetTarget(std::make_shared<WorkerPoolTarget>(std::move(pool).value(), instance.memory, instance.memory_owner,
                                                                  std::move(outputs), batched));
  return OkResult(env, env.Null());
}

}  // namespace

void RegisterBatcherBinding(Napi::Env env, Napi::Object exports, ExecutorRegistry& executors) {
  auto state = std::make_unique<BatcherEnv>(executors);
  BatcherEnv* raw = state.get();
  env.AddCleanupHook(OnEnvCleanup, raw);
  state.release();  // owned by the cleanup hook
  ExportFunctions(env, exports, raw, {
      {"batcherCreate", CreateJs},
      {"batcherAttach", AttachJs},
      {"batcherDetach", DetachJs},
      {"batcherEnqueue", EnqueueJs},
      {"batcherInstanceIdle", InstanceNoticeJs<true>},
      {"batcherInstanceBusy", InstanceNoticeJs<false>},
      {"batcherStats", StatsJs},
      {"batcherStop", StopJs},
      {"batcherFlush", FlushJs},
      {"batcherAdvanceClock", AdvanceClockJs},
      {"batcherReleaseBatch", ReleaseBatchJs},
      {"batcherView", ViewJs},
      {"batcherCopyOut", CopyOutJs},
      {"batcherSetTarget", SetTargetJs},
      {"batcherSetWorkerTarget", SetWorkerTargetJs},
  });
}

}  // namespace hotpath::napi
