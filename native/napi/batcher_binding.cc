// batcher* bindings. See batcher_binding.h. No batching logic here: argument
// guards, per-environment bookkeeping, the ThreadSafeFunction hand-off and
// value translation only.
#include "napi/batcher_binding.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arena/registry.h"
#include "batcher/arena_batch_memory.h"
#include "batcher/batcher.h"
#include "batcher/clock.h"
#include "executor/batch_target.h"
#include "napi/arena_binding_values.h"
#include "napi/batcher_binding_values.h"
#include "napi/batcher_dispatch.h"
#include "napi/export_functions.h"
#include "napi/result_js.h"
#include "batcher/worker_pool_target.h"

namespace hotpath::napi {

namespace {

namespace bt = hotpath::batcher;
using bt::WorkerOutputSpec;
using bt::WorkerPool;
using bt::WorkerPoolTarget;

// Bound on relative times from JS, as in the core (about 11.6 days).
constexpr uint64_t kMaxMicroseconds = 1'000'000'000'000;

using Event = BatcherEvent;

struct BatcherEnv;

// A delivered batch JS has not released: its input buffers and, for an
// executed batch, its output buffers (arena references, freed on release).
struct HeldBatch {
  bt::SealedBatch batch;
  std::vector<bt::BatchBuffer> outputs;
  std::vector<uint64_t> output_bytes;
};

// One JS Batcher. Touched only on its JS thread, except `batcher` and
// `dispatch` (thread-safe) and `tsfn`, which the batcher thread calls until
// Stop() has joined it (target jobs hold their own references).
struct Instance {
  uint32_t id = 0;
  BatcherEnv* env_state = nullptr;  // null once the environment's cleanup ran
  std::shared_ptr<bt::Clock> clock;
  std::shared_ptr<bt::ManualClock> manual;  // null with the steady clock
  std::shared_ptr<bt::ArenaBatchMemory> memory;  // inputs, and outputs of executed batches
  uint64_t owner = 0;                            // arena owner of the model version
  uint32_t input_count = 0;
  // Each input's dims as the version fixes them (-1: given per request), and
  // how many -1s there are in all: read once at create, so an enqueue passes
  // only the variable dims.
  std::vector<DimsTemplate> input_dims;
  uint32_t variable_dims = 0;
  // Reused by every enqueue (JS thread only; Enqueue copies what it keeps),
  // so the steady state allocates no dims vectors per request.
  bt::EnqueueRequest scratch;
  // Shared (weakly) with target completions, which give instances back.
  std::shared_ptr<bt::Batcher> batcher;
  std::shared_ptr<BatchDispatch> dispatch;
  napi_threadsafe_function tsfn = nullptr;
  bool stopped = false;        // JS stop() or env cleanup began
  bool tsfn_released = false;  // our reference is gone: never call tsfn again
  bool finalized = false;      // the TSFN finalizer ran
  // Accepted requests and queued markers not yet delivered; the TSFN holds
  // the event loop open while > 0.
  uint64_t outstanding = 0;
  // Delivered batches JS has not released, by batch id. Their buffers keep
  // the arena blocks alive.
  std::unordered_map<uint64_t, HeldBatch> held;

  void AddOutstanding(napi_env env, uint64_t n) {
    if (n == 0 || tsfn_released) return;
    if (outstanding == 0) napi_ref_threadsafe_function(env, tsfn);
    outstanding += n;
  }
  // Only from the TSFN's call-JS callback or before release.
  void Settle(napi_env env, uint64_t n) {
    const uint64_t before = outstanding;
    outstanding -= std::min(n, outstanding);
    if (before > 0 && outstanding == 0) napi_unref_threadsafe_function(env, tsfn);
  }
};

// One per environment; touched only on its JS thread.
struct BatcherEnv {
  explicit BatcherEnv(ExecutorRegistry& registry) : executors(registry) {}
  ExecutorRegistry& executors;  // borrowed; outlives every JS call (executor_registry.h)
  std::map<uint32_t, std::shared_ptr<Instance>> instances;
  uint32_t next_id = 1;

  // Drops an instance nobody can use any more: stopped, its TSFN gone and
  // every delivered batch released.
  void MaybeForget(const Instance& instance) {
    if (instance.stopped && instance.finalized && instance.held.empty()) instances.erase(instance.id);
  }
};

void OnEnvCleanup(BatcherEnv* raw) {
  std::unique_ptr<BatcherEnv> state(raw);
  // Node has already marked every TSFN closing (their hooks were added later,
  // so they ran first), so SHUTDOWN rejections from Stop() are dropped. The
  // TSFNs are finalized after all hooks; their contexts keep the instances.
  for (auto& [id, instance] : state->instances) {
    instance->env_state = nullptr;
    instance->stopped = true;
    instance->batcher->Stop();  // joins the batcher thread
    // Jobs in flight keep their target; the executor binding's cleanup stops them.
    instance->dispatch->SetTarget(nullptr);
    instance->held.clear();     // frees the batch memory JS still held
  }
  state->instances.clear();
}

BatcherEnv& EnvOf(const Napi::CallbackInfo& info) { return *static_cast<BatcherEnv*>(info.Data()); }

Result<Instance*> InstanceOf(const Napi::CallbackInfo& info) {
  Result<uint64_t> id = ToU64(info[0], "batcher");
  if (!id.ok()) return id.status();
  BatcherEnv& state = EnvOf(info);
  auto it = state.instances.find(static_cast<uint32_t>(id.value()));
  if (it == state.instances.end()) return Status(StatusCode::kFailedPrecondition, "batcher is closed");
  return it->second.get();
}

// JS thread: queues a marker behind everything sent so far, including the
// 'executed' events of batches already handed to a target.
bool QueueMarker(napi_env env, Instance& instance, uint64_t marker) {
  if (instance.tsfn_released) return false;
  instance.AddOutstanding(env, 1);
  if (instance.dispatch->QueueMarker(marker)) return true;
  instance.Settle(env, 1);
  return false;
}

// The TSFN's call-JS callback, on the JS thread. `env` is null when Node
// empties the queue at teardown: the event is then only freed.
void CallJs(napi_env raw_env, napi_value js_callback, void* context, void* data) {
  std::unique_ptr<Event> event(static_cast<Event*>(data));
  if (raw_env == nullptr || js_callback == nullptr || context == nullptr) return;
  Instance& instance = **static_cast<std::shared_ptr<Instance>*>(context);
  if (instance.env_state == nullptr) return;
  Napi::Env env(raw_env);
  try {
    Napi::HandleScope scope(env);
    Napi::Object payload;
    uint64_t delivered = 1;
    switch (event->kind) {
      case Event::Kind::kBatch: {
        payload = SealedBatchToJs(env, event->batch);
        delivered = event->batch.requests.size();
        const uint64_t batch_id = event->batch.batch_id;
        instance.held.emplace(batch_id, HeldBatch{std::move(event->batch), {}, {}});
        break;
      }
      case Event::Kind::kExecuted: {
        // Held like a 'batch' (inputs and outputs), so JS can read the
        // outputs, or re-run a failed batch elsewhere from its inputs.
        payload = ExecutedBatchToJs(env, event->batch, event->outcome);
        delivered = event->batch.requests.size();
        const uint64_t batch_id = event->batch.batch_id;
        instance.held.emplace(batch_id, HeldBatch{std::move(event->batch), std::move(event->outcome.outputs),
                                                  std::move(event->outcome.output_bytes)});
        break;
      }
      case Event::Kind::kRejected:
        payload = RejectedToJs(env, event->rejected);
        delivered = event->rejected.size();
        break;
      case Event::Kind::kMarker:
        payload = Napi::Object::New(env);
        payload.Set("type", Napi::String::New(env, "marker"));
        payload.Set("marker", Napi::Number::New(env, static_cast<double>(event->marker)));
        break;
    }
    instance.Settle(raw_env, delivered);
    Napi::Function(env, js_callback).Call({payload});
  } catch (const Napi::Error& error) {
    // The TS handler never throws; if it does, it is an uncaught exception.
    napi_fatal_exception(raw_env, error.Value());
  }
}

// The TSFN finalizer, on the JS thread (also during teardown, after the
// environment's cleanup hooks). Last user of the context.
void FinalizeTsfn(napi_env /*env*/, void* finalize_data, void* /*hint*/) {
  std::unique_ptr<std::shared_ptr<Instance>> holder(static_cast<std::shared_ptr<Instance>*>(finalize_data));
  Instance& instance = **holder;
  instance.finalized = true;
  instance.tsfn_released = true;
  instance.stopped = true;
  // Backstop: the thread must not outlive the TSFN it calls. (Target jobs
  // held TSFN references, so none is in flight when this runs.)
  if (instance.batcher) instance.batcher->Stop();
  if (instance.dispatch) instance.dispatch->SetTarget(nullptr);
  if (instance.env_state != nullptr) instance.env_state->MaybeForget(instance);
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

  auto instance = std::make_shared<Instance>();
  instance->id = state.next_id++;
  instance->env_state = &state;
  instance->memory = memory.value();
  instance->owner = a.config.memory_owner;
  instance->input_count = a.config.input_count;
  for (const DimsTemplate& t : a.input_dims) instance->variable_dims += static_cast<uint32_t>(t.variable.size());
  instance->input_dims = std::move(a.input_dims);
  if (a.manual_clock) {
    instance->manual = std::make_shared<bt::ManualClock>();
    instance->clock = instance->manual;
  } else {
    instance->clock = std::make_shared<bt::SteadyClock>();
  }

  // The TSFN first: the batcher's callbacks need it. Its context owns one
  // reference to the instance until the finalizer runs.
  auto holder = std::make_unique<std::shared_ptr<Instance>>(instance);
  napi_value resource_name = Napi::String::New(env, "hotpath.batcher");
  napi_status created = napi_create_threadsafe_function(
      env, info[1], nullptr, resource_name, 0 /* unbounded queue */, 1 /* our reference */, holder.get(),
      FinalizeTsfn, holder.get(), CallJs, &instance->tsfn);
  if (created != napi_ok) {
    return ErrorResult(env, Status(StatusCode::kInternal, "cannot create the batcher's ThreadSafeFunction"));
  }
  holder.release();  // owned by the TSFN finalizer
  napi_unref_threadsafe_function(env, instance->tsfn);  // ref'd only while work is outstanding

  napi_threadsafe_function tsfn = instance->tsfn;
  auto dispatch = std::make_shared<BatchDispatch>(tsfn);
  instance->dispatch = dispatch;
  bt::BatcherCallbacks callbacks;
  callbacks.dispatch = [dispatch](bt::SealedBatch batch) { dispatch->Dispatch(std::move(batch)); };
  callbacks.reject = [tsfn](std::vector<bt::RejectedRequest> rejected) {
    auto event = std::make_unique<Event>();
    event->kind = Event::Kind::kRejected;
    event->rejected = std::move(rejected);
    SendBatcherEvent(tsfn, std::move(event));
  };
  Result<std::unique_ptr<bt::Batcher>> batcher =
      bt::Batcher::Create(std::move(a.config), instance->clock, memory.value(), std::move(callbacks));
  if (!batcher.ok()) {
    instance->stopped = true;
    instance->tsfn_released = true;
    instance->env_state = nullptr;  // never in the table
    napi_release_threadsafe_function(tsfn, napi_tsfn_release);
    return ErrorResult(env, batcher.status());
  }
  instance->batcher = std::shared_ptr<bt::Batcher>(std::move(batcher).value());
  dispatch->set_batcher(instance->batcher);
  state.instances.emplace(instance->id, instance);
  return OkResult(env, Napi::Number::New(env, instance->id));
}

// (batcher, requestId, rows, priority, timeoutUs, deadlineUs | null, inputs, variableDims | null)
Napi::Value EnqueueJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Instance& instance = *found.value();
  bt::EnqueueRequest& request = instance.scratch;
  request.deadline.reset();
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
    request.deadline = instance.clock->Now() +
                       std::chrono::microseconds(std::min(remaining.value(), kMaxMicroseconds));
  }
  if (Status s = ToRequestInputs(info[6], info[7], instance.input_dims, instance.variable_dims, &request.inputs); !s.ok()) {
    return ErrorResult(env, s);
  }

  // Copies the inputs. A batch it finds ready is dispatched from here, but
  // dispatch only posts to a ThreadSafeFunction or a worker: JS is never
  // called back from inside Enqueue.
  const bt::EnqueueResult enqueued = instance.batcher->Enqueue(request);
  if (enqueued.ok()) {
    instance.AddOutstanding(env, 1);
    return OkResult(env, env.Null());
  }
  Napi::Object result = ErrorResult(env, enqueued.status);
  // The core says why it refused; a failure without a kind is a fault, not a refusal.
  if (enqueued.kind) result.Set("reason", Napi::String::New(env, bt::RejectKindName(*enqueued.kind)));
  return result;
}

template <bool kIdle>
Napi::Value InstanceNoticeJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Status status = kIdle ? found.value()->batcher->InstanceIdle() : found.value()->batcher->InstanceBusy();
  return status.ok() ? OkResult(env, env.Null()) : ErrorResult(env, status);
}

Napi::Value StatsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Instance& instance = *found.value();
  return OkResult(env, BatcherStatsToJs(env, instance.batcher->Stats(), instance.held.size()));
}

// (batcher, marker) -> whether the marker was queued (false: already stopped).
// Stops the thread, queues its SHUTDOWN rejections and then the marker, and
// lets go of the TSFN, which closes once the queue is delivered.
Napi::Value StopJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> marker = ToU64(info[1], "marker");
  if (!marker.ok()) return ErrorResult(env, marker.status());
  Instance& instance = *found.value();
  if (instance.stopped) return OkResult(env, Napi::Boolean::New(env, false));
  instance.stopped = true;
  instance.batcher->Stop();  // rejects run here and are queued behind earlier events
  // Behind the 'executed' events of batches still running on a target.
  const bool queued = QueueMarker(env, instance, marker.value());
  instance.dispatch->SetTarget(nullptr);  // nothing is dispatched any more
  if (!instance.tsfn_released) {
    instance.tsfn_released = true;
    napi_release_threadsafe_function(instance.tsfn, napi_tsfn_release);
  }
  return OkResult(env, Napi::Boolean::New(env, queued));
}

// (batcher, marker) -> whether the marker was queued. Waits (blocking this
// thread briefly) until the loop has acted on every earlier event, then
// queues the marker behind whatever that produced.
Napi::Value FlushJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> marker = ToU64(info[1], "marker");
  if (!marker.ok()) return ErrorResult(env, marker.status());
  Instance& instance = *found.value();
  instance.batcher->Flush();
  return OkResult(env, Napi::Boolean::New(env, QueueMarker(env, instance, marker.value())));
}

// (batcher, us): ManualClock only. Returns once the loop has acted on the new time.
Napi::Value AdvanceClockJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> us = ToU64(info[1], "us");
  if (!us.ok()) return ErrorResult(env, us.status());
  Instance& instance = *found.value();
  if (!instance.manual) {
    return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "advanceClock needs a batcher created with clock 'manual'"));
  }
  instance.manual->Advance(std::chrono::microseconds(std::min(us.value(), kMaxMicroseconds)));
  instance.batcher->Flush();
  return OkResult(env, env.Null());
}

// (batcher, batchId) -> whether a held batch was released (false: already).
Napi::Value ReleaseBatchJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return OkResult(env, Napi::Boolean::New(env, false));  // instance gone: nothing held
  Result<uint64_t> batch_id = ToU64(info[1], "batchId");
  if (!batch_id.ok()) return ErrorResult(env, batch_id.status());
  Instance& instance = *found.value();
  const bool released = instance.held.erase(batch_id.value()) > 0;  // drops the arena references
  EnvOf(info).MaybeForget(instance);                                // may free `instance`
  return OkResult(env, Napi::Boolean::New(env, released));
}

// (batcher, batchId, index): a block's used bytes as an external
// ArrayBuffer, no copy. Indices [0, inputs) are the inputs; for an executed
// batch, [inputs, inputs + outputs) are its outputs. It holds no reference:
// the TS wrapper detaches it when the batch is released.
Napi::Value ViewJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> batch_id = ToU64(info[1], "batchId");
  Result<uint64_t> index = ToU64(info[2], "input");
  if (!batch_id.ok() || !index.ok()) return ErrorResult(env, !batch_id.ok() ? batch_id.status() : index.status());
  auto it = found.value()->held.find(batch_id.value());
  if (it == found.value()->held.end()) {
    return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "batch " + std::to_string(batch_id.value()) + " was released"));
  }
  HeldBatch& held = it->second;
  const uint64_t inputs = held.batch.inputs.size();
  void* data = nullptr;
  uint64_t bytes = 0;
  if (index.value() < inputs) {
    bt::SealedInput& sealed = held.batch.inputs[index.value()];
    data = sealed.buffer.data();
    bytes = sealed.bytes;
  } else if (index.value() - inputs < held.outputs.size()) {
    const uint64_t output = index.value() - inputs;
    data = held.outputs[output].data();
    bytes = output < held.output_bytes.size() ? std::min(held.output_bytes[output], held.outputs[output].capacity()) : 0;
  } else {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument, "input index out of range"));
  }
  Napi::ArrayBuffer view = Napi::ArrayBuffer::New(env, data, bytes, [](Napi::Env, void*) {});
  return OkResult(env, view);
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
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> executor_id = ToU64(info[1], "executor");
  if (!executor_id.ok()) return ErrorResult(env, executor_id.status());
  Instance& instance = *found.value();
  if (executor_id.value() == 0) {
    instance.dispatch->SetTarget(nullptr);
    return OkResult(env, env.Null());
  }
  if (instance.stopped) return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "batcher is stopped"));
  Result<std::shared_ptr<executor::Executor>> executor = EnvOf(info).executors.Find(executor_id.value());
  if (!executor.ok()) return ErrorResult(env, executor.status());
  if (executor.value()->inputs().size() != instance.input_count) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument,
                                   "the executor has " + std::to_string(executor.value()->inputs().size()) +
                                       " inputs, the batcher " + std::to_string(instance.input_count)));
  }
  Result<std::shared_ptr<bt::ExecutionTarget>> target = MakeExecutorTarget(executor.value(), instance.memory, instance.owner);
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
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> pool_id = ToU64(info[1], "pool");
  if (!pool_id.ok()) return ErrorResult(env, pool_id.status());
  if (!info[2].IsArray()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "outputs must be an array"));
  Instance& instance = *found.value();
  if (instance.stopped) return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "batcher is stopped"));
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
  instance.dispatch->SetTarget(std::make_shared<WorkerPoolTarget>(std::move(pool).value(), instance.memory, instance.owner,
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
      {"batcherEnqueue", EnqueueJs},
      {"batcherInstanceIdle", InstanceNoticeJs<true>},
      {"batcherInstanceBusy", InstanceNoticeJs<false>},
      {"batcherStats", StatsJs},
      {"batcherStop", StopJs},
      {"batcherFlush", FlushJs},
      {"batcherAdvanceClock", AdvanceClockJs},
      {"batcherReleaseBatch", ReleaseBatchJs},
      {"batcherView", ViewJs},
      {"batcherSetTarget", SetTargetJs},
      {"batcherSetWorkerTarget", SetWorkerTargetJs},
  });
}

}  // namespace hotpath::napi
