// worker* bindings. See worker_binding.h. Translation and lifetime only; the
// scheduling is batcher/worker_pool_target.cc's.
#include "napi/worker_binding.h"

#include <cstring>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "napi/arena_binding_values.h"
#include "napi/executor_binding_values.h"
#include "napi/export_functions.h"
#include "napi/result_js.h"
#include "batcher/worker_pool_target.h"

namespace hotpath::napi {

namespace {

namespace bt = hotpath::batcher;
using bt::FailedOutcome;
using bt::WorkerChannel;
using bt::WorkerJob;
using bt::WorkerPool;
using bt::WorkerPoolStats;

struct WorkerEnv;

// One open channel. Owned by its TSFN (freed in the finalizer); `env` is
// cleared when the environment's cleanup hook runs first.
struct ChannelState {
  WorkerEnv* env = nullptr;
  uint64_t handle = 0;
  std::shared_ptr<WorkerPool> pool;
  uint64_t pool_channel = 0;
  napi_threadsafe_function tsfn = nullptr;
  bool removed = false;  // no longer in the pool: its jobs are settled
};

// A job handed to JS: the views to detach when it is done.
struct Delivered {
  std::shared_ptr<WorkerPool> pool;
  std::vector<napi_ref> views;
};

// One per environment; touched only on its JS thread.
struct WorkerEnv {
  std::map<uint64_t, ChannelState*> channels;
  uint64_t next_handle = 1;
  std::map<uint64_t, Delivered> delivered;                   // by token
  std::map<uint64_t, std::shared_ptr<WorkerPool>> pools;     // created here
};

class TsfnChannel final : public WorkerChannel {
 public:
  explicit TsfnChannel(napi_threadsafe_function tsfn) : tsfn_(tsfn) {}
  bool Post(uint64_t token) override {
    // The token itself is the payload: nothing to free if it is never delivered.
    return napi_call_threadsafe_function(tsfn_, reinterpret_cast<void*>(static_cast<uintptr_t>(token)),
                                         napi_tsfn_nonblocking) == napi_ok;
  }

 private:
  const napi_threadsafe_function tsfn_;
};

Napi::Number Num(Napi::Env env, uint64_t value) { return Napi::Number::New(env, static_cast<double>(value)); }

void OnEnvCleanup(WorkerEnv* raw) {
  std::unique_ptr<WorkerEnv> state(raw);
  // The worker is going away: whatever it runs fails (WORKER_CRASHED) so the
  // main thread can re-run it; nothing is posted to it any more.
  for (auto& [handle, channel] : state->channels) {
    channel->env = nullptr;
    if (!channel->removed) channel->pool->RemoveChannel(channel->pool_channel);
    channel->removed = true;
  }
  state->channels.clear();
  state->delivered.clear();  // the references die with the environment
  for (auto& [id, pool] : state->pools) pool->Close();
}

WorkerEnv& EnvOf(const Napi::CallbackInfo& info) { return *static_cast<WorkerEnv*>(info.Data()); }

Napi::Value PoolCreateJs(const Napi::CallbackInfo& info) {
  std::shared_ptr<WorkerPool> pool = WorkerPool::Create();
  EnvOf(info).pools.emplace(pool->id(), pool);
  return OkResult(info.Env(), Num(info.Env(), pool->id()));
}

// (pool) -> whether it was open. Queued batches fail with SHUTDOWN. The
// pool stays readable (workerPoolStats) until its running batches are done.
Napi::Value PoolCloseJs(const Napi::CallbackInfo& info) {
  Result<uint64_t> id = ToU64(info[0], "pool");
  if (!id.ok()) return ErrorResult(info.Env(), id.status());
  WorkerEnv& state = EnvOf(info);
  auto it = state.pools.find(id.value());
  if (it == state.pools.end() || it->second->closed()) return OkResult(info.Env(), Napi::Boolean::New(info.Env(), false));
  it->second->Close();
  return OkResult(info.Env(), Napi::Boolean::New(info.Env(), true));
}

Napi::Value PoolStatsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<uint64_t> id = ToU64(info[0], "pool");
  if (!id.ok()) return ErrorResult(env, id.status());
  WorkerEnv& state = EnvOf(info);
  auto it = state.pools.find(id.value());
  if (it == state.pools.end()) return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "worker pool " + std::to_string(id.value()) + " is gone"));
  const WorkerPoolStats stats = it->second->Stats();
  // A closed pool with nothing running has nothing more to say: forget it.
  if (it->second->closed() && stats.running == 0) state.pools.erase(it);
  Napi::Object out = Napi::Object::New(env);
  out.Set("channels", Num(env, stats.channels));
  out.Set("idleChannels", Num(env, stats.idle_channels));
  out.Set("queued", Num(env, stats.queued));
  out.Set("running", Num(env, stats.running));
  out.Set("executed", Num(env, stats.executed));
  out.Set("crashed", Num(env, stats.crashed));
  return OkResult(env, out);
}

// Raw N-API from here to CallJs: these run while a worker may be
// terminating (process.exit in the worker), when JS cannot run and
// node-addon-api would turn the failure into a fatal error. Every step
// checks its status and gives up quietly instead.

napi_value RawNumber(napi_env env, uint64_t value) {
  napi_value out = nullptr;
  napi_create_double(env, static_cast<double>(value), &out);
  return out;
}

napi_value RawDims(napi_env env, const std::vector<int64_t>& dims) {
  napi_value array = nullptr;
  if (napi_create_array_with_length(env, dims.size(), &array) != napi_ok) return nullptr;
  for (uint32_t i = 0; i < dims.size(); ++i) {
    napi_value dim = nullptr;
    if (napi_create_double(env, static_cast<double>(dims[i]), &dim) != napi_ok || napi_set_element(env, array, i, dim) != napi_ok) return nullptr;
  }
  return array;
}

// {buffer: external ArrayBuffer over `data`, shape}, the buffer recorded so
// Done can detach it. Null on failure.
napi_value RawView(napi_env env, void* data, uint64_t bytes, const std::vector<int64_t>& shape, Delivered& delivered) {
  napi_value view = nullptr;
  napi_value object = nullptr;
  napi_value dims = RawDims(env, shape);
  if (dims == nullptr || napi_create_object(env, &object) != napi_ok ||
      napi_create_external_arraybuffer(env, data, bytes, [](napi_env, void*, void*) {}, nullptr, &view) != napi_ok) {
    return nullptr;
  }
  napi_ref ref = nullptr;
  if (napi_create_reference(env, view, 0, &ref) != napi_ok) return nullptr;
  delivered.views.push_back(ref);
  if (napi_set_named_property(env, object, "buffer", view) != napi_ok || napi_set_named_property(env, object, "shape", dims) != napi_ok) {
    return nullptr;
  }
  return object;
}

void DetachViews(napi_env env, Delivered& delivered) {
  for (napi_ref ref : delivered.views) {
    napi_value value = nullptr;
    if (napi_get_reference_value(env, ref, &value) == napi_ok && value != nullptr) napi_detach_arraybuffer(env, value);
    napi_delete_reference(env, ref);
  }
  delivered.views.clear();
}

// Settles job `token` with `outcome` (this environment delivered it). False
// when it was not running any more (its channel was removed).
bool Settle(napi_env env, WorkerEnv& state, uint64_t token, bt::BatchOutcome outcome) {
  auto it = state.delivered.find(token);
  if (it == state.delivered.end()) return false;
  std::shared_ptr<WorkerPool> pool = it->second.pool;
  DetachViews(env, it->second);
  state.delivered.erase(it);
  std::unique_ptr<WorkerJob> job = pool->Finish(token);
  if (!job) return false;
  auto done = std::move(job->done);
  job->outputs.clear();  // whatever the outcome did not take
  done(std::move(job->batch), std::move(outcome));
  return true;
}

// {token, rows, inputs: [{buffer, shape}], outputs: [{buffer, shape} | null]}, or null.
napi_value BatchPayload(napi_env env, WorkerJob& job, uint64_t token, Delivered& delivered) {
  napi_value payload = nullptr;
  napi_value inputs = nullptr;
  napi_value outputs = nullptr;
  napi_value null_value = nullptr;
  if (napi_create_object(env, &payload) != napi_ok || napi_get_null(env, &null_value) != napi_ok ||
      napi_create_array_with_length(env, job.batch.inputs.size(), &inputs) != napi_ok ||
      napi_create_array_with_length(env, job.outputs.size(), &outputs) != napi_ok) {
    return nullptr;
  }
  for (uint32_t i = 0; i < job.batch.inputs.size(); ++i) {
    bt::SealedInput& input = job.batch.inputs[i];
    napi_value entry = RawView(env, input.buffer.data(), input.bytes, input.shape, delivered);
    if (entry == nullptr || napi_set_element(env, inputs, i, entry) != napi_ok) return nullptr;
  }
  for (uint32_t i = 0; i < job.outputs.size(); ++i) {
    bt::BatchBuffer& output = job.outputs[i];
    napi_value entry = output.data() == nullptr ? null_value
                                                : RawView(env, output.data(), output.capacity(), job.output_shapes[i], delivered);
    if (entry == nullptr || napi_set_element(env, outputs, i, entry) != napi_ok) return nullptr;
  }
  if (napi_set_named_property(env, payload, "token", RawNumber(env, token)) != napi_ok ||
      napi_set_named_property(env, payload, "rows", RawNumber(env, job.batch.rows)) != napi_ok ||
      napi_set_named_property(env, payload, "inputs", inputs) != napi_ok ||
      napi_set_named_property(env, payload, "outputs", outputs) != napi_ok) {
    return nullptr;
  }
  return payload;
}

// The channel's call-JS callback, on the worker's JS thread. `env` is null
// when Node empties the queue at teardown (the cleanup hook fails the jobs).
// The TS wrapper catches what its handler throws (and fails that batch), so
// a call that fails here means the worker is terminating: the cleanup hook
// then fails the job with WORKER_CRASHED.
void CallJs(napi_env env, napi_value js_callback, void* context, void* data) {
  if (env == nullptr || js_callback == nullptr) return;
  auto* channel = static_cast<ChannelState*>(context);
  const uint64_t token = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(data));
  if (channel->env == nullptr || channel->removed) return;
  WorkerJob* job = channel->pool->Running(token);
  if (job == nullptr) return;
  WorkerEnv& state = *channel->env;
  napi_handle_scope scope = nullptr;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  Delivered& delivered = state.delivered[token];
  delivered.pool = channel->pool;
  napi_value payload = BatchPayload(env, *job, token, delivered);
  napi_value receiver = nullptr;
  napi_value result = nullptr;
  if (payload != nullptr && napi_get_undefined(env, &receiver) == napi_ok &&
      napi_call_function(env, receiver, js_callback, 1, &payload, &result) != napi_ok) {
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
      napi_value ignored = nullptr;
      napi_get_and_clear_last_exception(env, &ignored);
    }
  }
  napi_close_handle_scope(env, scope);
}

void FinalizeChannel(napi_env /*env*/, void* finalize_data, void* /*hint*/) {
  std::unique_ptr<ChannelState> channel(static_cast<ChannelState*>(finalize_data));
  if (channel->env != nullptr) channel->env->channels.erase(channel->handle);
  if (!channel->removed) channel->pool->RemoveChannel(channel->pool_channel);
}

// (pool, onBatch) -> channel handle. From now on the pool may hand this
// worker a batch at any time, on this thread's event loop.
Napi::Value ChannelOpenJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  WorkerEnv& state = EnvOf(info);
  Result<uint64_t> id = ToU64(info[0], "pool");
  if (!id.ok()) return ErrorResult(env, id.status());
  if (!info[1].IsFunction()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "onBatch must be a function"));
  Result<std::shared_ptr<WorkerPool>> pool = WorkerPool::Find(id.value());
  if (!pool.ok()) return ErrorResult(env, pool.status());

  auto channel = std::make_unique<ChannelState>();
  channel->env = &state;
  channel->handle = state.next_handle++;
  channel->pool = pool.value();
  napi_value name = Napi::String::New(env, "hotpath.worker-channel");
  if (napi_create_threadsafe_function(env, info[1], nullptr, name, 0, 1, channel.get(), FinalizeChannel, channel.get(),
                                      CallJs, &channel->tsfn) != napi_ok) {
    return ErrorResult(env, Status(StatusCode::kInternal, "cannot create the worker channel's ThreadSafeFunction"));
  }
  ChannelState* raw = channel.release();  // owned by the TSFN finalizer
  napi_unref_threadsafe_function(env, raw->tsfn);
  state.channels.emplace(raw->handle, raw);
  raw->pool_channel = raw->pool->AddChannel(std::make_shared<TsfnChannel>(raw->tsfn));
  if (raw->pool_channel == 0) {
    raw->removed = true;
    napi_release_threadsafe_function(raw->tsfn, napi_tsfn_release);
    return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "worker pool " + std::to_string(id.value()) + " is closed"));
  }
  return OkResult(env, Num(env, raw->handle));
}

// (channel) -> whether it was open. A batch it was running fails with WORKER_CRASHED.
Napi::Value ChannelCloseJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<uint64_t> handle = ToU64(info[0], "channel");
  if (!handle.ok()) return ErrorResult(env, handle.status());
  WorkerEnv& state = EnvOf(info);
  auto it = state.channels.find(handle.value());
  if (it == state.channels.end() || it->second->removed) return OkResult(env, Napi::Boolean::New(env, false));
  ChannelState* channel = it->second;
  channel->pool->RemoveChannel(channel->pool_channel);  // nothing is posted after this
  channel->removed = true;
  napi_release_threadsafe_function(channel->tsfn, napi_tsfn_release);
  return OkResult(env, Napi::Boolean::New(env, true));
}

Result<std::vector<int64_t>> ToDims(const Napi::Value& value, const char* what) {
  if (!value.IsArray()) return Status(StatusCode::kInvalidArgument, std::string(what) + " must be an array");
  Napi::Array array = value.As<Napi::Array>();
  std::vector<int64_t> dims;
  for (uint32_t i = 0; i < array.Length(); ++i) {
    Result<uint64_t> dim = ToU64(array.Get(i), what);
    if (!dim.ok()) return dim.status();
    dims.push_back(static_cast<int64_t>(dim.value()));
  }
  return dims;
}

// A successful run's outcome: pre-allocated outputs as they are, the others
// copied from the worker's arrays into the batch's output memory.
Result<bt::BatchOutcome> SuccessOutcome(WorkerJob& job, const Napi::Object& result) {
  bt::BatchOutcome outcome;
  Napi::Value outputs_value = result.Get("outputs");
  if (!outputs_value.IsArray()) return Status(StatusCode::kInvalidArgument, "outcome.outputs must be an array");
  Napi::Array outputs = outputs_value.As<Napi::Array>();
  if (outputs.Length() != job.outputs.size()) {
    return Status(StatusCode::kInternal, "the worker returned " + std::to_string(outputs.Length()) + " outputs, the model has " +
                                             std::to_string(job.outputs.size()));
  }
  for (uint32_t i = 0; i < outputs.Length(); ++i) {
    Napi::Value entry = outputs.Get(i);
    if (!entry.IsObject()) return Status(StatusCode::kInvalidArgument, "outcome.outputs entries must be objects");
    Napi::Object output = entry.As<Napi::Object>();
    if (job.outputs[i].data() != nullptr) {
      outcome.output_bytes.push_back(job.outputs[i].capacity());
      outcome.output_shapes.push_back(job.output_shapes[i]);
      outcome.outputs.push_back(std::move(job.outputs[i]));
      continue;
    }
    Result<std::vector<int64_t>> shape = ToDims(output.Get("shape"), "outcome.outputs[].shape");
    if (!shape.ok()) return shape.status();
    Napi::Value data = output.Get("data");
    if (!data.IsTypedArray()) return Status(StatusCode::kInvalidArgument, "outcome.outputs[].data must be a typed array");
    Napi::TypedArray array = data.As<Napi::TypedArray>();
    const uint64_t bytes = array.ByteLength();
    const bt::BufferSpec spec{job.memory_owner, job.batch.batch_id, i, bytes};
    Result<bt::MemoryBlock> block = job.output_memory->Allocate(spec);
    if (!block.ok()) return block.status();
    bt::BatchBuffer buffer(job.output_memory, block.value(), spec);
    if (bytes > 0) {
      const auto* source = static_cast<const std::byte*>(array.ArrayBuffer().Data()) + array.ByteOffset();
      std::memcpy(buffer.data(), source, bytes);
    }
    outcome.output_bytes.push_back(bytes);
    outcome.output_shapes.push_back(std::move(shape).value());
    outcome.outputs.push_back(std::move(buffer));
  }
  Napi::Value timing = result.Get("timing");
  if (timing.IsObject()) {
    Napi::Object t = timing.As<Napi::Object>();
    auto ns = [&t](const char* key) -> uint64_t {
      Napi::Value v = t.Get(key);
      return v.IsNumber() && v.As<Napi::Number>().DoubleValue() > 0 ? static_cast<uint64_t>(v.As<Napi::Number>().DoubleValue()) : 0;
    };
    outcome.input_ns = ns("inputNs");
    outcome.compute_ns = ns("computeNs");
    outcome.output_ns = ns("outputNs");
  }
  return outcome;
}

// (token, {ok: true, outputs: [{shape, data?}], timing} | {ok: false, failure, message}) -> null.
// The batch's buffers handed to onBatch are detached now.
Napi::Value BatchDoneJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  WorkerEnv& state = EnvOf(info);
  Result<uint64_t> token = ToU64(info[0], "token");
  if (!token.ok()) return ErrorResult(env, token.status());
  auto delivered = state.delivered.find(token.value());
  if (delivered == state.delivered.end()) {
    return ErrorResult(env, Status(StatusCode::kFailedPrecondition, "batch " + std::to_string(token.value()) + " is not running here"));
  }
  WorkerJob* job = delivered->second.pool->Running(token.value());
  bt::BatchOutcome outcome;
  Status refused = Status::Ok();
  if (job == nullptr) {
    refused = Status(StatusCode::kFailedPrecondition, "batch " + std::to_string(token.value()) + " was already failed");
  } else if (!info[1].IsObject()) {
    refused = Status(StatusCode::kInvalidArgument, "outcome must be an object");
    outcome = FailedOutcome(bt::ExecutionFailure::kInternal, Status(StatusCode::kInternal, "the worker sent no outcome"));
  } else {
    Napi::Object result = info[1].As<Napi::Object>();
    if (result.Get("ok").ToBoolean()) {
      Result<bt::BatchOutcome> success = SuccessOutcome(*job, result);
      if (success.ok()) {
        outcome = std::move(success).value();
      } else {
        // The only refusal with a type of its own is the output copy's allocation.
        outcome = FailedOutcome(bt::FailureOfAllocation(success.status()), success.status());
      }
    } else {
      // A name a worker may not report (or none) is a bug in the worker: INTERNAL.
      Result<std::string> failure = ToText(result.Get("failure"), "outcome.failure");
      Result<std::string> message = ToText(result.Get("message"), "outcome.message");
      const bt::ExecutionFailure kind =
          (failure.ok() ? bt::WorkerFailureNamed(failure.value()) : std::nullopt).value_or(bt::ExecutionFailure::kInternal);
      outcome = FailedOutcome(kind, Status(bt::StatusCodeOf(kind), message.ok() ? message.value() : "the worker's run failed"));
    }
  }
  Settle(env, state, token.value(), std::move(outcome));
  return refused.ok() ? OkResult(env, env.Null()) : ErrorResult(env, refused);
}

}  // namespace

void RegisterWorkerBinding(Napi::Env env, Napi::Object exports) {
  auto state = std::make_unique<WorkerEnv>();
  WorkerEnv* raw = state.get();
  env.AddCleanupHook(OnEnvCleanup, raw);
  state.release();  // owned by the cleanup hook
  ExportFunctions(env, exports, raw, {
      {"workerPoolCreate", PoolCreateJs},   {"workerPoolClose", PoolCloseJs},     {"workerPoolStats", PoolStatsJs},
      {"workerChannelOpen", ChannelOpenJs}, {"workerChannelClose", ChannelCloseJs}, {"workerBatchDone", BatchDoneJs},
  });
}

}  // namespace hotpath::napi
