// executor* bindings. See executor_binding.h. No executor logic here:
// argument guards, per-environment bookkeeping, the ThreadSafeFunction
// hand-off and value translation only.
#include "napi/executor_binding.h"

#include <algorithm>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "arena/registry.h"
#include "executor/device_runtime.h"
#include "executor/executor.h"
#include "napi/arena_binding_values.h"
#include "napi/executor_binding_values.h"
#include "napi/export_functions.h"
#include "napi/result_js.h"

namespace hotpath::napi {

namespace {

namespace ex = hotpath::executor;

// Native memory for one input or output of a run. Outputs are handed to JS
// as external ArrayBuffers, whose finalizer frees them.
struct OwnedBytes {
  std::unique_ptr<uint8_t[]> data;
  uint64_t size = 0;
};

// `bytes` uninitialised bytes, or null data when the allocation fails
// (a 0-byte buffer has no data and does not fail).
OwnedBytes Allocate(uint64_t bytes) {
  OwnedBytes out;
  out.size = bytes;
  if (bytes > 0) out.data.reset(new (std::nothrow) uint8_t[bytes]);
  return out;
}

// One executorRun: the job's memory, shared by the ExecJob (which reads and
// writes it until `done`) and the event that carries it back.
struct RunJob {
  uint64_t request_id = 0;
  std::vector<OwnedBytes> inputs;
  std::vector<OwnedBytes> outputs;
  std::vector<std::vector<int64_t>> output_dims;
};

// What travels through the TSFN queue. Destroying an undelivered event (the
// environment is gone) frees its buffers.
struct Event {
  enum class Kind { kRun, kMarker };
  Kind kind = Kind::kMarker;
  std::shared_ptr<RunJob> job;
  ex::ExecOutcome outcome;
  uint64_t marker = 0;
};

struct ExecutorEnv;

// One JS Executor. Touched only on its JS thread, except `tsfn`, which the
// instance threads call from jobs' `done` until the executor is stopped.
struct Instance {
  uint32_t id = 0;
  ExecutorEnv* env_state = nullptr;        // null once the environment's cleanup ran
  std::shared_ptr<ex::Executor> executor;  // null once closed
  napi_threadsafe_function tsfn = nullptr;
  bool closed = false;         // JS close() or env cleanup began
  bool tsfn_released = false;  // our reference is gone: never call tsfn again
  // Submitted runs and queued markers not yet delivered; the TSFN holds the
  // event loop open while > 0.
  uint64_t outstanding = 0;

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
  // Stops the executor (queued runs fail now, on this thread; running ones
  // finish) and drops our reference. Idempotent.
  void StopExecutor() {
    closed = true;
    if (executor) executor->Stop();
    executor.reset();
  }
};

// One per environment; touched only on its JS thread.
struct ExecutorEnv {
  ExecutorRegistry registry;
  std::map<uint32_t, std::shared_ptr<Instance>> instances;
  uint32_t next_id = 1;
};

void OnEnvCleanup(ExecutorEnv* raw) {
  std::unique_ptr<ExecutorEnv> state(raw);
  // Every TSFN is already closing (their hooks ran first), so the failures
  // Stop() reports are dropped; the point is that no instance thread runs
  // once this returns. The TSFN contexts keep the instances until finalized.
  for (auto& [id, instance] : state->instances) {
    instance->env_state = nullptr;
    instance->StopExecutor();
  }
  state->instances.clear();
  // Executors a batcher still targets stop too: they are in the registry.
  state->registry.StopAll();
  state->registry.Clear();
}

ExecutorEnv& EnvOf(const Napi::CallbackInfo& info) { return *static_cast<ExecutorEnv*>(info.Data()); }

Result<Instance*> InstanceOf(const Napi::CallbackInfo& info) {
  Result<uint64_t> id = ToU64(info[0], "executor");
  if (!id.ok()) return id.status();
  ExecutorEnv& state = EnvOf(info);
  auto it = state.instances.find(static_cast<uint32_t>(id.value()));
  if (it == state.instances.end()) return Status(StatusCode::kFailedPrecondition, "executor is closed");
  return it->second.get();
}

// Queues an event; on failure (the TSFN is closing) the event is dropped.
// Any thread, while the TSFN is alive.
bool Send(napi_threadsafe_function tsfn, std::unique_ptr<Event> event) {
  if (napi_call_threadsafe_function(tsfn, event.get(), napi_tsfn_nonblocking) != napi_ok) return false;
  event.release();  // owned by the queue; CallJs frees it
  return true;
}

Napi::Object RunEventToJs(Napi::Env env, Event& event) {
  const ex::ExecOutcome& outcome = event.outcome;
  Napi::Object out = Napi::Object::New(env);
  out.Set("type", Napi::String::New(env, "run"));
  out.Set("requestId", Napi::Number::New(env, static_cast<double>(event.job->request_id)));
  out.Set("ok", Napi::Boolean::New(env, outcome.status.ok()));
  out.Set("code", Napi::String::New(env, outcome.status.ok() ? "OK" : StatusCodeName(outcome.status.code())));
  out.Set("message", Napi::String::New(env, outcome.status.message()));
  out.Set("fault", Napi::String::New(env, ex::FaultClassName(outcome.fault)));
  const size_t count = outcome.status.ok() ? event.job->outputs.size() : 0;
  Napi::Array outputs = Napi::Array::New(env, count);
  for (uint32_t i = 0; i < count; ++i) {
    OwnedBytes& bytes = event.job->outputs[i];
    Napi::ArrayBuffer data;
    if (bytes.size == 0) {
      data = Napi::ArrayBuffer::New(env, 0);
    } else {
      // JS owns the memory from here; the finalizer frees it.
      uint8_t* raw = bytes.data.release();
      data = Napi::ArrayBuffer::New(env, raw, bytes.size, [](Napi::Env, void* p) { delete[] static_cast<uint8_t*>(p); });
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("data", data);
    o.Set("dims", DimsToJs(env, event.job->output_dims[i]));
    outputs.Set(i, o);
  }
  out.Set("outputs", outputs);
  out.Set("timing", TimingToJs(env, outcome.timing.input_ns, outcome.timing.compute_ns, outcome.timing.output_ns));
  return out;
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
    if (event->kind == Event::Kind::kRun) {
      payload = RunEventToJs(env, *event);
    } else {
      payload = Napi::Object::New(env);
      payload.Set("type", Napi::String::New(env, "marker"));
      payload.Set("marker", Napi::Number::New(env, static_cast<double>(event->marker)));
    }
    instance.Settle(raw_env, 1);
    Napi::Function(env, js_callback).Call({payload});
  } catch (const Napi::Error& error) {
    // The TS handler never throws; if it does, it is an uncaught exception.
    napi_fatal_exception(raw_env, error.Value());
  }
}

// The TSFN finalizer, on the JS thread (also at teardown, after the cleanup
// hooks). Last user of the context.
void FinalizeTsfn(napi_env /*env*/, void* finalize_data, void* /*hint*/) {
  std::unique_ptr<std::shared_ptr<Instance>> holder(static_cast<std::shared_ptr<Instance>*>(finalize_data));
  Instance& instance = **holder;
  instance.tsfn_released = true;
  // Backstop: no instance thread may outlive the TSFN it calls.
  instance.StopExecutor();
  if (instance.env_state != nullptr) {
    instance.env_state->registry.Remove(instance.id);
    instance.env_state->instances.erase(instance.id);
  }
}

// (plan, options, onEvent) -> RawExecutorInfo
Napi::Value CreateJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExecutorEnv& state = EnvOf(info);
  Result<ex::GraphPlan> plan = ToGraphPlan(info[0]);
  if (!plan.ok()) return ErrorResult(env, plan.status());
  Result<ExecutorCreateArgs> args = ToExecutorCreateArgs(info[1]);
  if (!args.ok()) return ErrorResult(env, args.status());
  if (!info[2].IsFunction()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "onEvent must be a function"));
  const ExecutorCreateArgs& a = args.value();

  Result<std::shared_ptr<arena::Arena>> arena = arena::FindRegisteredArena(a.arena);
  if (!arena.ok()) return ErrorResult(env, arena.status());
  Result<arena::TenantId> tenant = arena.value()->FindTenant(a.tenant);
  if (!tenant.ok()) return ErrorResult(env, tenant.status());
  std::shared_ptr<ex::ExecDevice> device;
  if (a.cuda) {
    Result<std::shared_ptr<ex::ExecDevice>> cuda = ex::MakeCudaDevice(a.device_ordinal);
    if (!cuda.ok()) return ErrorResult(env, cuda.status());
    device = std::move(cuda).value();
  } else {
    device = ex::HostDevice();
  }

  ex::ExecutorConfig config;
  config.instances = a.instances;
  config.device = std::move(device);
  config.arena = arena.value();
  config.tenant = tenant.value();
  config.owner = a.owner;
  // Compiles, plans and uploads on this thread: a load-time cost, once.
  Result<std::unique_ptr<ex::Executor>> created = ex::Executor::Create(plan.value(), std::move(config));
  if (!created.ok()) return ErrorResult(env, created.status());  // the compiler's message, verbatim

  auto instance = std::make_shared<Instance>();
  instance->id = state.next_id++;
  instance->env_state = &state;
  instance->executor = std::shared_ptr<ex::Executor>(std::move(created).value());

  // The TSFN's context owns one reference to the instance until the finalizer runs.
  auto holder = std::make_unique<std::shared_ptr<Instance>>(instance);
  napi_value resource_name = Napi::String::New(env, "hotpath.executor");
  napi_status made = napi_create_threadsafe_function(env, info[2], nullptr, resource_name, 0 /* unbounded */,
                                                     1 /* our reference */, holder.get(), FinalizeTsfn, holder.get(),
                                                     CallJs, &instance->tsfn);
  if (made != napi_ok) {
    instance->StopExecutor();
    return ErrorResult(env, Status(StatusCode::kInternal, "cannot create the executor's ThreadSafeFunction"));
  }
  holder.release();  // owned by the TSFN finalizer
  napi_unref_threadsafe_function(env, instance->tsfn);  // ref'd only while runs are outstanding

  state.instances.emplace(instance->id, instance);
  state.registry.Add(instance->id, instance->executor);
  return OkResult(env, ExecutorInfoToJs(env, instance->id, *instance->executor));
}

// (executor, requestId, inputs: TypedArray[], rows) -> null; the result comes as a 'run' event.
Napi::Value RunJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Instance& instance = *found.value();
  ex::Executor& executor = *instance.executor;
  Result<uint64_t> request_id = ToU64(info[1], "requestId");
  Result<uint64_t> rows = ToU64(info[3], "rows");
  if (!request_id.ok()) return ErrorResult(env, request_id.status());
  if (!rows.ok()) return ErrorResult(env, rows.status());
  const uint64_t row_limit = std::max<uint64_t>(1, executor.max_batch_size());
  if (rows.value() < 1 || rows.value() > row_limit) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument, "rows must be in [1, " + std::to_string(row_limit) + "]"));
  }
  const auto batch_rows = static_cast<uint32_t>(rows.value());
  if (!info[2].IsArray()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "inputs must be an array"));
  Napi::Array inputs = info[2].As<Napi::Array>();
  const std::vector<ex::IoSpec>& specs = executor.inputs();
  if (inputs.Length() != specs.size()) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument, "expected " + std::to_string(specs.size()) +
                                                                     " inputs, got " + std::to_string(inputs.Length())));
  }

  auto job = std::make_shared<RunJob>();
  job->request_id = request_id.value();
  ex::ExecJob exec;
  exec.rows = batch_rows;
  for (uint32_t i = 0; i < specs.size(); ++i) {
    Napi::Value value = inputs.Get(i);
    if (!value.IsTypedArray()) {
      return ErrorResult(env, Status(StatusCode::kInvalidArgument, "inputs[" + std::to_string(i) + "] must be a TypedArray"));
    }
    Napi::TypedArray array = value.As<Napi::TypedArray>();
    const uint64_t expected = executor.InputBytes(i, batch_rows);
    if (array.ByteLength() != expected) {
      return ErrorResult(env, Status(StatusCode::kInvalidArgument,
                                     "input '" + specs[i].name + "': expected " + std::to_string(expected) + " bytes for " +
                                         std::to_string(batch_rows) + " rows, got " + std::to_string(array.ByteLength())));
    }
    // Copied: JS memory may move or be reused once this returns.
    OwnedBytes copy = Allocate(expected);
    if (expected > 0 && !copy.data) {
      return ErrorResult(env, Status(StatusCode::kResourceExhausted, "cannot allocate " + std::to_string(expected) + " bytes for input '" + specs[i].name + "'"));
    }
    if (expected > 0) {
      std::copy_n(static_cast<const uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset(), expected, copy.data.get());
    }
    exec.inputs.push_back({copy.data.get(), copy.size});
    job->inputs.push_back(std::move(copy));
  }
  for (size_t i = 0; i < executor.outputs().size(); ++i) {
    OwnedBytes out = Allocate(executor.OutputBytes(i, batch_rows));
    if (out.size > 0 && !out.data) {
      return ErrorResult(env, Status(StatusCode::kResourceExhausted, "cannot allocate " + std::to_string(out.size) + " bytes for output '" + executor.outputs()[i].name + "'"));
    }
    exec.outputs.push_back({out.data.get(), out.size});
    job->outputs.push_back(std::move(out));
    job->output_dims.push_back(executor.OutputShape(i, batch_rows));
  }
  // Runs on an instance thread (or here, for a job refused at once). The
  // executor is stopped before the TSFN can go away (close, cleanup hook).
  napi_threadsafe_function tsfn = instance.tsfn;
  exec.done = [tsfn, job](ex::ExecOutcome outcome) {
    auto event = std::make_unique<Event>();
    event->kind = Event::Kind::kRun;
    event->job = job;
    event->outcome = std::move(outcome);
    Send(tsfn, std::move(event));
  };
  instance.AddOutstanding(env, 1);
  executor.Submit(std::move(exec));
  return OkResult(env, env.Null());
}

Napi::Value InjectFaultJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<ex::FaultClass> fault = ToFaultClass(info[1]);
  if (!fault.ok()) return ErrorResult(env, fault.status());
  found.value()->executor->InjectFault(fault.value());
  return OkResult(env, env.Null());
}

Napi::Value StatsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  const ex::Executor& executor = *found.value()->executor;
  return OkResult(env, ExecutorStatsToJs(env, executor.Stats(), executor.dead()));
}

Napi::Value DeadJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Instance*> found = InstanceOf(info);
  if (!found.ok()) return ErrorResult(env, found.status());
  return OkResult(env, Napi::Boolean::New(env, found.value()->executor->dead()));
}

// (executor, marker) -> {queued, stats}: whether the marker was queued
// (false: already closed, stats null) and the counters after the stop.
Napi::Value CloseJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<uint64_t> id = ToU64(info[0], "executor");
  Result<uint64_t> marker = ToU64(info[1], "marker");
  if (!id.ok()) return ErrorResult(env, id.status());
  if (!marker.ok()) return ErrorResult(env, marker.status());
  ExecutorEnv& state = EnvOf(info);
  auto it = state.instances.find(static_cast<uint32_t>(id.value()));
  Napi::Object result = Napi::Object::New(env);
  if (it == state.instances.end()) {
    result.Set("queued", Napi::Boolean::New(env, false));
    result.Set("stats", env.Null());
    return OkResult(env, result);
  }
  std::shared_ptr<Instance> instance = it->second;
  state.instances.erase(it);
  state.registry.Remove(instance->id);
  // Queued runs fail now (their events are queued on this thread); running
  // ones finish first. A batcher still targeting the executor keeps it
  // (stopped) until it lets go; otherwise its arena blocks go back here.
  instance->executor->Stop();
  result.Set("stats", ExecutorStatsToJs(env, instance->executor->Stats(), instance->executor->dead()));
  instance->StopExecutor();
  bool queued = false;
  if (!instance->tsfn_released) {
    auto event = std::make_unique<Event>();
    event->kind = Event::Kind::kMarker;
    event->marker = marker.value();
    instance->AddOutstanding(env, 1);
    queued = Send(instance->tsfn, std::move(event));
    if (!queued) instance->Settle(env, 1);
    instance->tsfn_released = true;
    napi_release_threadsafe_function(instance->tsfn, napi_tsfn_release);
  }
  result.Set("queued", Napi::Boolean::New(env, queued));
  return OkResult(env, result);
}

}  // namespace

ExecutorRegistry& RegisterExecutorBinding(Napi::Env env, Napi::Object exports) {
  auto state = std::make_unique<ExecutorEnv>();
  ExecutorEnv* raw = state.get();
  env.AddCleanupHook(OnEnvCleanup, raw);
  state.release();  // owned by the cleanup hook
  ExportFunctions(env, exports, raw, {
      {"executorCreate", CreateJs},   {"executorRun", RunJs},     {"executorInjectFault", InjectFaultJs},
      {"executorStats", StatsJs},     {"executorDead", DeadJs},   {"executorClose", CloseJs},
  });
  return raw->registry;
}

}  // namespace hotpath::napi
