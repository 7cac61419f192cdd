// JS <-> batcher value conversions. See batcher_binding_values.h.
#include "napi/batcher_binding_values.h"

#include <cmath>
#include <limits>
#include <utility>

#include "napi/arena_binding_values.h"
#include "napi/executor_binding_values.h"

namespace hotpath::napi {

namespace {

using batcher::QueuePolicy;
using batcher::TimeoutAction;

Napi::Number Num(Napi::Env env, uint64_t value) { return Napi::Number::New(env, static_cast<double>(value)); }

Status Bad(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

Result<uint32_t> ToU32(const Napi::Value& value, const char* what) {
  Result<uint64_t> number = ToU64(value, what);
  if (!number.ok()) return number.status();
  if (number.value() > std::numeric_limits<uint32_t>::max()) {
    return Bad(std::string(what) + " must fit in 32 bits");
  }
  return static_cast<uint32_t>(number.value());
}

Result<bool> ToBool(const Napi::Value& value, const char* what) {
  if (!value.IsBoolean()) return Bad(std::string(what) + " must be a boolean");
  return value.As<Napi::Boolean>().Value();
}

Result<Napi::Object> ToObject(const Napi::Value& value, const char* what) {
  if (!value.IsObject()) return Bad(std::string(what) + " must be an object");
  return value.As<Napi::Object>();
}

// {maxQueueSize, defaultTimeoutUs, timeoutAction: 'REJECT'|'DELAY', allowTimeoutOverride}
Result<QueuePolicy> ToQueuePolicy(const Napi::Value& value) {
  Result<Napi::Object> object = ToObject(value, "queue policy");
  if (!object.ok()) return object.status();
  const Napi::Object& o = object.value();
  QueuePolicy policy;
  Result<uint32_t> size = ToU32(o.Get("maxQueueSize"), "maxQueueSize");
  Result<uint64_t> timeout = ToU64(o.Get("defaultTimeoutUs"), "defaultTimeoutUs");
  Result<std::string> action = ToText(o.Get("timeoutAction"), "timeoutAction");
  Result<bool> allow = ToBool(o.Get("allowTimeoutOverride"), "allowTimeoutOverride");
  if (!size.ok()) return size.status();
  if (!timeout.ok()) return timeout.status();
  if (!action.ok()) return action.status();
  if (!allow.ok()) return allow.status();
  if (action.value() != "REJECT" && action.value() != "DELAY") {
    return Bad("timeoutAction must be REJECT or DELAY");
  }
  policy.max_queue_size = size.value();
  policy.default_timeout_us = timeout.value();
  policy.timeout_action = action.value() == "DELAY" ? TimeoutAction::kDelay : TimeoutAction::kReject;
  policy.allow_timeout_override = allow.value();
  return policy;
}

// [[dim | -1, ...], ...]: one template per input.
Result<std::vector<DimsTemplate>> ToDimsTemplates(const Napi::Value& value, uint32_t input_count) {
  if (!value.IsArray()) return Bad("inputDims must be an array");
  Napi::Array inputs = value.As<Napi::Array>();
  if (inputs.Length() != input_count) {
    return Bad("inputDims: expected " + std::to_string(input_count) + " entries (inputCount), got " +
               std::to_string(inputs.Length()));
  }
  std::vector<DimsTemplate> templates(inputs.Length());
  for (uint32_t i = 0; i < inputs.Length(); ++i) {
    Napi::Value entry = inputs.Get(i);
    if (!entry.IsArray()) return Bad("inputDims[" + std::to_string(i) + "] must be an array");
    Napi::Array dims = entry.As<Napi::Array>();
    DimsTemplate& t = templates[i];
    for (uint32_t d = 0; d < dims.Length(); ++d) {
      Napi::Value dim = dims.Get(d);
      if (dim.IsNumber() && dim.As<Napi::Number>().DoubleValue() == -1) {
        t.variable.push_back(d);
        t.dims.push_back(-1);
        continue;
      }
      Result<uint64_t> fixed = ToU64(dim, "inputDims[][]");
      if (!fixed.ok()) return fixed.status();
      if (fixed.value() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Bad("inputDims: dim too large");
      t.dims.push_back(static_cast<int64_t>(fixed.value()));
    }
  }
  return templates;
}

// Bytes per element of a TypedArray type; 0 for one the enqueue does not
// take (a Float16Array, or a type newer than this code): refused.
uint64_t TypedArrayElementBytes(napi_typedarray_type type) {
  switch (type) {
    case napi_int8_array:
    case napi_uint8_array:
    case napi_uint8_clamped_array:
      return 1;
    case napi_int16_array:
    case napi_uint16_array:
      return 2;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array:
      return 4;
    case napi_float64_array:
    case napi_bigint64_array:
    case napi_biguint64_array:
      return 8;
    default:
      return 0;
  }
}

Status ReadU32Field(const Napi::Object& o, const char* name, uint32_t* target) {
  Result<uint32_t> number = ToU32(o.Get(name), name);
  if (!number.ok()) return number.status();
  *target = number.value();
  return Status::Ok();
}

}  // namespace

Result<BatcherCreateArgs> ToBatcherCreateArgs(const Napi::Value& value) {
  Result<Napi::Object> object = ToObject(value, "config");
  if (!object.ok()) return object.status();
  const Napi::Object& o = object.value();
  BatcherCreateArgs args;
  batcher::BatcherConfig& c = args.config;

  Result<std::string> arena = ToText(o.Get("arena"), "arena");
  Result<std::string> tenant = ToText(o.Get("tenant"), "tenant");
  Result<std::string> model = ToText(o.Get("modelName"), "modelName");
  Result<std::string> clock = ToText(o.Get("clock"), "clock");
  Result<uint64_t> owner = ToU64(o.Get("owner"), "owner");
  Result<uint64_t> delay = ToU64(o.Get("maxQueueDelayUs"), "maxQueueDelayUs");
  Result<bool> ordering = ToBool(o.Get("preserveOrdering"), "preserveOrdering");
  for (const Status* s : {&arena.status(), &tenant.status(), &model.status(), &clock.status(), &owner.status(),
                          &delay.status(), &ordering.status()}) {
    if (!s->ok()) return *s;
  }
  if (clock.value() != "steady" && clock.value() != "manual") return Bad("clock must be steady or manual");
  args.arena = arena.value();
  args.tenant = tenant.value();
  args.manual_clock = clock.value() == "manual";
  c.model_name = model.value();
  c.memory_owner = owner.value();
  c.max_queue_delay_us = delay.value();
  c.preserve_ordering = ordering.value();

  for (auto [name, target] : {std::pair{"inputCount", &c.input_count}, std::pair{"instanceCount", &c.instance_count},
                              std::pair{"maxBatchSize", &c.max_batch_size},
                              std::pair{"priorityLevels", &c.priority_levels},
                              std::pair{"defaultPriorityLevel", &c.default_priority_level}}) {
    if (Status s = ReadU32Field(o, name, target); !s.ok()) return s;
  }

  Result<std::vector<DimsTemplate>> templates = ToDimsTemplates(o.Get("inputDims"), c.input_count);
  if (!templates.ok()) return templates.status();
  args.input_dims = std::move(templates).value();

  Napi::Value preferred = o.Get("preferredBatchSizes");
  if (!preferred.IsArray()) return Bad("preferredBatchSizes must be an array");
  Napi::Array sizes = preferred.As<Napi::Array>();
  for (uint32_t i = 0; i < sizes.Length(); ++i) {
    Result<uint32_t> size = ToU32(sizes.Get(i), "preferredBatchSizes[]");
    if (!size.ok()) return size.status();
    c.preferred_batch_sizes.push_back(size.value());
  }

  Result<QueuePolicy> policy = ToQueuePolicy(o.Get("defaultQueuePolicy"));
  if (!policy.ok()) return policy.status();
  c.default_queue_policy = policy.value();

  // [{level, ...QueuePolicy}]
  Napi::Value levels = o.Get("priorityQueuePolicy");
  if (!levels.IsArray()) return Bad("priorityQueuePolicy must be an array");
  Napi::Array entries = levels.As<Napi::Array>();
  for (uint32_t i = 0; i < entries.Length(); ++i) {
    Napi::Value entry = entries.Get(i);
    Result<QueuePolicy> level_policy = ToQueuePolicy(entry);
    if (!level_policy.ok()) return level_policy.status();
    Result<uint32_t> level = ToU32(entry.As<Napi::Object>().Get("level"), "priorityQueuePolicy[].level");
    if (!level.ok()) return level.status();
    c.priority_queue_policy[level.value()] = level_policy.value();
  }
  return args;
}

Status ToRequestInputs(const Napi::Value& inputs, const Napi::Value& variable_dims,
                       const std::vector<DimsTemplate>& templates, uint32_t variable_count,
                       std::vector<batcher::RequestInput>* out) {
  if (!inputs.IsArray()) return Bad("inputs must be an array");
  Napi::Array data = inputs.As<Napi::Array>();
  Napi::Array values;
  if (variable_count > 0) {
    if (!variable_dims.IsArray()) return Bad("variableDims must be an array of " + std::to_string(variable_count) + " dims");
    values = variable_dims.As<Napi::Array>();
    if (values.Length() != variable_count) {
      return Bad("variableDims: expected " + std::to_string(variable_count) + " dims, got " + std::to_string(values.Length()));
    }
  } else if (!variable_dims.IsNull() && !variable_dims.IsUndefined()) {
    return Bad("variableDims must be null: every dim of this model is fixed");
  }
  const uint32_t count = data.Length();
  out->resize(count);
  uint32_t next = 0;
  for (uint32_t i = 0; i < count; ++i) {
    Napi::Value bytes = data.Get(i);
    batcher::RequestInput& input = (*out)[i];
    // One call for the type, the length and the data (already offset to the
    // view's first byte); it fails for anything but a TypedArray.
    napi_typedarray_type type = napi_uint8_array;
    size_t length = 0;
    void* first = nullptr;
    if (napi_get_typedarray_info(bytes.Env(), bytes, &type, &length, &first, nullptr, nullptr) != napi_ok) {
      return Bad("inputs[" + std::to_string(i) + "] must be a TypedArray");
    }
    const uint64_t element_bytes = TypedArrayElementBytes(type);
    if (element_bytes == 0) return Bad("inputs[" + std::to_string(i) + "]: unsupported TypedArray type");
    input.bytes = static_cast<uint64_t>(length) * element_bytes;
    // Borrowed: the batcher copies it during Enqueue, before this call returns.
    input.data = input.bytes == 0 ? nullptr : first;
    if (i >= templates.size()) {
      input.dims.clear();
      continue;
    }
    const DimsTemplate& t = templates[i];
    input.dims.assign(t.dims.begin(), t.dims.end());
    for (uint32_t position : t.variable) {
      Result<uint64_t> dim = ToU64(values.Get(next++), "variableDims[]");
      if (!dim.ok()) return dim.status();
      if (dim.value() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Bad("variableDims: dim too large");
      input.dims[position] = static_cast<int64_t>(dim.value());
    }
  }
  return Status::Ok();
}

Napi::Object SealedBatchToJs(Napi::Env env, const batcher::SealedBatch& batch,
                             const std::vector<batcher::SealedRequest>& own) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("type", Napi::String::New(env, "batch"));
  out.Set("batchId", Num(env, batch.batch_id));
  out.Set("rows", Num(env, batch.rows));
  Napi::Array requests = Napi::Array::New(env, own.size());
  for (uint32_t i = 0; i < own.size(); ++i) {
    const batcher::SealedRequest& r = own[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("id", Num(env, r.id));
    o.Set("sequence", Num(env, r.sequence));
    o.Set("rowOffset", Num(env, r.row_offset));
    o.Set("rows", Num(env, r.rows));
    o.Set("priorityLevel", Num(env, r.priority_level));
    o.Set("queueNs", Napi::Number::New(env, static_cast<double>(r.queue_time.count())));
    requests.Set(i, o);
  }
  out.Set("requests", requests);
  Napi::Array inputs = Napi::Array::New(env, batch.inputs.size());
  for (uint32_t i = 0; i < batch.inputs.size(); ++i) {
    const batcher::SealedInput& input = batch.inputs[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("blockId", Num(env, input.buffer.handle()));
    o.Set("bytes", Num(env, input.bytes));
    o.Set("capacity", Num(env, input.buffer.capacity()));
    Napi::Array shape = Napi::Array::New(env, input.shape.size());
    for (uint32_t d = 0; d < input.shape.size(); ++d) {
      shape.Set(d, Napi::Number::New(env, static_cast<double>(input.shape[d])));
    }
    o.Set("shape", shape);
    inputs.Set(i, o);
  }
  out.Set("inputs", inputs);
  return out;
}

Napi::Object ExecutedBatchToJs(Napi::Env env, const batcher::SharedBatch& shared,
                               const std::vector<batcher::SealedRequest>& requests,
                               const batcher::BatchOutcome& outcome) {
  Napi::Object out = SealedBatchToJs(env, shared.batch, requests);
  const bool ok = outcome.status.ok();
  out.Set("type", Napi::String::New(env, "executed"));
  out.Set("ok", Napi::Boolean::New(env, ok));
  out.Set("code", Napi::String::New(env, ok ? "OK" : StatusCodeName(outcome.status.code())));
  out.Set("message", Napi::String::New(env, outcome.status.message()));
  out.Set("failure", Napi::String::New(env, batcher::ExecutionFailureName(outcome.failure)));
  const size_t count = ok ? shared.outputs.size() : 0;
  Napi::Array outputs = Napi::Array::New(env, count);
  for (uint32_t i = 0; i < count; ++i) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("blockId", Num(env, shared.outputs[i].handle()));
    o.Set("bytes", Num(env, i < shared.output_bytes.size() ? shared.output_bytes[i] : 0));
    o.Set("shape", DimsToJs(env, i < outcome.output_shapes.size() ? outcome.output_shapes[i] : std::vector<int64_t>{}));
    outputs.Set(i, o);
  }
  out.Set("outputs", outputs);
  out.Set("timing", TimingToJs(env, outcome.input_ns, outcome.compute_ns, outcome.output_ns));
  return out;
}

Napi::Object RejectedToJs(Napi::Env env, const std::vector<batcher::RejectedRequest>& rejected) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("type", Napi::String::New(env, "rejected"));
  Napi::Array requests = Napi::Array::New(env, rejected.size());
  for (uint32_t i = 0; i < rejected.size(); ++i) {
    const batcher::RejectedRequest& r = rejected[i];
    const Status status = batcher::ToStatus(r.rejection);
    Napi::Object o = Napi::Object::New(env);
    o.Set("id", Num(env, r.id));
    o.Set("sequence", Num(env, r.sequence));
    o.Set("reason", Napi::String::New(env, batcher::RejectKindName(r.rejection.kind)));
    o.Set("code", Napi::String::New(env, StatusCodeName(status.code())));
    o.Set("message", Napi::String::New(env, status.message()));
    o.Set("queueNs", Napi::Number::New(env, static_cast<double>(r.queue_time.count())));
    requests.Set(i, o);
  }
  out.Set("requests", requests);
  return out;
}

Napi::Object BatcherStatsToJs(Napi::Env env, const batcher::BatcherStats& s, uint64_t held_batches) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("pendingRequests", Num(env, s.pending_requests));
  out.Set("openBatches", Num(env, s.open_batches));
  out.Set("idleInstances", Num(env, s.idle_instances));
  out.Set("executionCount", Num(env, s.execution_count));
  out.Set("inferenceCount", Num(env, s.inference_count));
  out.Set("dispatchedRequests", Num(env, s.dispatched_requests));
  out.Set("queueNs", Num(env, s.queue_ns));
  out.Set("rejectedQueueFull", Num(env, s.rejected_queue_full));
  out.Set("rejectedTimeout", Num(env, s.rejected_timeout));
  out.Set("rejectedDeadline", Num(env, s.rejected_deadline));
  out.Set("rejectedShutdown", Num(env, s.rejected_shutdown));
  out.Set("delayed", Num(env, s.delayed));
  out.Set("memoryFailures", Num(env, s.memory_failures));
  out.Set("heldBatches", Num(env, held_batches));
  return out;
}

}  // namespace hotpath::napi
