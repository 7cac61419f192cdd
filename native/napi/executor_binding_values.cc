// JS <-> executor value conversions. See executor_binding_values.h.
#include "napi/executor_binding_values.h"

#include <cmath>
#include <limits>
#include <utility>


namespace hotpath::napi {

namespace {

namespace ex = hotpath::executor;

constexpr double kMaxSafe = 9007199254740991.0;  // 2^53 - 1

Napi::Number Num(Napi::Env env, double value) { return Napi::Number::New(env, value); }

Status Bad(const std::string& what, const char* expectation) {
  return Status(StatusCode::kInvalidArgument, what + " must be " + expectation);
}

Result<Napi::Object> ToObject(const Napi::Value& value, const std::string& what) {
  if (!value.IsObject() || value.IsArray()) return Bad(what, "an object");
  return value.As<Napi::Object>();
}

Result<Napi::Array> ToArray(const Napi::Value& value, const std::string& what) {
  if (!value.IsArray()) return Bad(what, "an array");
  return value.As<Napi::Array>();
}

Result<std::string> ToString(const Napi::Value& value, const std::string& what) {
  if (!value.IsString()) return Bad(what, "a string");
  return value.As<Napi::String>().Utf8Value();
}

// A safe integer in [min, max].
Result<int64_t> ToInt(const Napi::Value& value, const std::string& what, double min, double max) {
  if (!value.IsNumber()) return Bad(what, "an integer");
  const double number = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(number) || std::floor(number) != number || number < min || number > max) {
    return Status(StatusCode::kInvalidArgument, what + " must be an integer in [" + std::to_string(static_cast<int64_t>(min)) +
                                                    ", " + std::to_string(static_cast<int64_t>(max)) + "]");
  }
  return static_cast<int64_t>(number);
}

Result<bool> ToBool(const Napi::Value& value, const std::string& what) {
  if (!value.IsBoolean()) return Bad(what, "a boolean");
  return value.As<Napi::Boolean>().Value();
}

std::string Field(const std::string& base, const char* name) { return base + "." + name; }
std::string Item(const std::string& base, uint32_t i) { return base + "[" + std::to_string(i) + "]"; }

// An array of safe integers in [min, max].
Status ToInts(const Napi::Value& value, const std::string& what, double min, double max, std::vector<int64_t>* out) {
  Result<Napi::Array> array = ToArray(value, what);
  if (!array.ok()) return array.status();
  const uint32_t n = array.value().Length();
  out->resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    Result<int64_t> number = ToInt(array.value().Get(i), Item(what, i), min, max);
    if (!number.ok()) return number.status();
    (*out)[i] = number.value();
  }
  return Status::Ok();
}

Status ToIndices(const Napi::Value& value, const std::string& what, int64_t min, std::vector<int32_t>* out) {
  std::vector<int64_t> numbers;
  if (Status s = ToInts(value, what, static_cast<double>(min), std::numeric_limits<int32_t>::max(), &numbers); !s.ok()) {
    return s;
  }
  out->assign(numbers.begin(), numbers.end());
  return Status::Ok();
}

Result<ex::PlanTensor> ToPlanTensor(const Napi::Value& value, const std::string& what) {
  Result<Napi::Object> object = ToObject(value, what);
  if (!object.ok()) return object.status();
  const Napi::Object& o = object.value();
  ex::PlanTensor tensor;
  Result<std::string> name = ToString(o.Get("name"), Field(what, "name"));
  if (!name.ok()) return name.status();
  tensor.name = std::move(name).value();
  Result<int64_t> dtype = ToInt(o.Get("dtype"), Field(what, "dtype"), 0, std::numeric_limits<int32_t>::max());
  if (!dtype.ok()) return dtype.status();
  tensor.dtype = static_cast<ex::DType>(dtype.value());  // unknown numbers: the compiler names them
  if (Status s = ToInts(o.Get("dims"), Field(what, "dims"), -1, kMaxSafe, &tensor.dims); !s.ok()) return s;
  Result<bool> initializer = ToBool(o.Get("initializer"), Field(what, "initializer"));
  if (!initializer.ok()) return initializer.status();
  tensor.is_initializer = initializer.value();
  if (tensor.is_initializer) {
    Napi::Value data = o.Get("data");
    if (!data.IsTypedArray()) return Bad(Field(what, "data"), "a Uint8Array for an initializer");
    Napi::TypedArray array = data.As<Napi::TypedArray>();
    const auto* bytes = static_cast<const uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset();
    if (array.ByteLength() > 0) tensor.data.assign(bytes, bytes + array.ByteLength());
  }
  return tensor;
}

Result<ex::PlanAttribute> ToPlanAttribute(const Napi::Object& o, const std::string& what) {
  using Type = ex::PlanAttribute::Type;
  ex::PlanAttribute attribute;
  Result<std::string> type = ToString(o.Get("type"), Field(what, "type"));
  if (!type.ok()) return type.status();
  const std::string value_what = Field(what, "value");
  Napi::Value value = o.Get("value");
  if (type.value() == "int") {
    Result<int64_t> number = ToInt(value, value_what, -kMaxSafe, kMaxSafe);
    if (!number.ok()) return number.status();
    attribute.type = Type::kInt;
    attribute.i = number.value();
  } else if (type.value() == "float") {
    if (!value.IsNumber()) return Bad(value_what, "a number");
    attribute.type = Type::kFloat;
    attribute.f = static_cast<float>(value.As<Napi::Number>().DoubleValue());
  } else if (type.value() == "ints") {
    attribute.type = Type::kInts;
    if (Status s = ToInts(value, value_what, -kMaxSafe, kMaxSafe, &attribute.ints); !s.ok()) return s;
  } else if (type.value() == "floats") {
    attribute.type = Type::kFloats;
    Result<Napi::Array> array = ToArray(value, value_what);
    if (!array.ok()) return array.status();
    for (uint32_t i = 0; i < array.value().Length(); ++i) {
      Napi::Value item = array.value().Get(i);
      if (!item.IsNumber()) return Bad(Item(value_what, i), "a number");
      attribute.floats.push_back(static_cast<float>(item.As<Napi::Number>().DoubleValue()));
    }
  } else if (type.value() == "string") {
    Result<std::string> text = ToString(value, value_what);
    if (!text.ok()) return text.status();
    attribute.type = Type::kString;
    attribute.s = std::move(text).value();
  } else {
    return Bad(Field(what, "type"), "'int', 'float', 'ints', 'floats' or 'string'");
  }
  return attribute;
}

Result<ex::PlanNode> ToPlanNode(const Napi::Value& value, const std::string& what) {
  Result<Napi::Object> object = ToObject(value, what);
  if (!object.ok()) return object.status();
  const Napi::Object& o = object.value();
  ex::PlanNode node;
  Result<std::string> name = ToString(o.Get("name"), Field(what, "name"));
  Result<std::string> op = ToString(o.Get("opType"), Field(what, "opType"));
  if (!name.ok()) return name.status();
  if (!op.ok()) return op.status();
  node.name = std::move(name).value();
  node.op_type = std::move(op).value();
  if (Status s = ToIndices(o.Get("inputs"), Field(what, "inputs"), -1, &node.inputs); !s.ok()) return s;
  if (Status s = ToIndices(o.Get("outputs"), Field(what, "outputs"), -1, &node.outputs); !s.ok()) return s;
  const std::string attributes_what = Field(what, "attributes");
  Result<Napi::Array> attributes = ToArray(o.Get("attributes"), attributes_what);
  if (!attributes.ok()) return attributes.status();
  for (uint32_t i = 0; i < attributes.value().Length(); ++i) {
    const std::string item_what = Item(attributes_what, i);
    Result<Napi::Object> item = ToObject(attributes.value().Get(i), item_what);
    if (!item.ok()) return item.status();
    Result<std::string> attribute_name = ToString(item.value().Get("name"), Field(item_what, "name"));
    if (!attribute_name.ok()) return attribute_name.status();
    Result<ex::PlanAttribute> attribute = ToPlanAttribute(item.value(), item_what);
    if (!attribute.ok()) return attribute.status();
    if (!node.attributes.emplace(attribute_name.value(), std::move(attribute).value()).second) {
      return Status(StatusCode::kInvalidArgument, item_what + ": attribute '" + attribute_name.value() + "' is repeated");
    }
  }
  return node;
}

}  // namespace

Result<ex::GraphPlan> ToGraphPlan(const Napi::Value& value) {
  Result<Napi::Object> object = ToObject(value, "plan");
  if (!object.ok()) return object.status();
  const Napi::Object& o = object.value();
  ex::GraphPlan plan;
  Result<std::string> model = ToString(o.Get("modelName"), "plan.modelName");
  Result<int64_t> opset = ToInt(o.Get("opset"), "plan.opset", 1, 1000);
  Result<int64_t> batch = ToInt(o.Get("maxBatchSize"), "plan.maxBatchSize", 0, std::numeric_limits<uint32_t>::max());
  for (const Status* s : {&model.status(), &opset.status(), &batch.status()}) {
    if (!s->ok()) return *s;
  }
  plan.model_name = std::move(model).value();
  plan.opset = opset.value();
  plan.max_batch_size = static_cast<uint32_t>(batch.value());

  Result<Napi::Array> tensors = ToArray(o.Get("tensors"), "plan.tensors");
  if (!tensors.ok()) return tensors.status();
  plan.tensors.reserve(tensors.value().Length());
  for (uint32_t i = 0; i < tensors.value().Length(); ++i) {
    Result<ex::PlanTensor> tensor = ToPlanTensor(tensors.value().Get(i), Item("plan.tensors", i));
    if (!tensor.ok()) return tensor.status();
    plan.tensors.push_back(std::move(tensor).value());
  }
  Result<Napi::Array> nodes = ToArray(o.Get("nodes"), "plan.nodes");
  if (!nodes.ok()) return nodes.status();
  plan.nodes.reserve(nodes.value().Length());
  for (uint32_t i = 0; i < nodes.value().Length(); ++i) {
    Result<ex::PlanNode> node = ToPlanNode(nodes.value().Get(i), Item("plan.nodes", i));
    if (!node.ok()) return node.status();
    plan.nodes.push_back(std::move(node).value());
  }
  if (Status s = ToIndices(o.Get("inputs"), "plan.inputs", 0, &plan.inputs); !s.ok()) return s;
  if (Status s = ToIndices(o.Get("outputs"), "plan.outputs", 0, &plan.outputs); !s.ok()) return s;
  return plan;
}

Result<ExecutorCreateArgs> ToExecutorCreateArgs(const Napi::Value& value) {
  Result<Napi::Object> object = ToObject(value, "options");
  if (!object.ok()) return object.status();
  const Napi::Object& o = object.value();
  ExecutorCreateArgs args;
  Result<std::string> arena = ToString(o.Get("arena"), "options.arena");
  Result<std::string> tenant = ToString(o.Get("tenant"), "options.tenant");
  Result<std::string> device = ToString(o.Get("device"), "options.device");
  Result<int64_t> owner = ToInt(o.Get("owner"), "options.owner", 0, kMaxSafe);
  Result<int64_t> instances = ToInt(o.Get("instances"), "options.instances", 1, 1024);
  Result<int64_t> ordinal = ToInt(o.Get("deviceOrdinal"), "options.deviceOrdinal", 0, 1024);
  for (const Status* s : {&arena.status(), &tenant.status(), &device.status(), &owner.status(), &instances.status(),
                          &ordinal.status()}) {
    if (!s->ok()) return *s;
  }
  if (device.value() != "host" && device.value() != "cuda") return Bad("options.device", "'host' or 'cuda'");
  args.arena = std::move(arena).value();
  args.tenant = std::move(tenant).value();
  args.owner = static_cast<uint64_t>(owner.value());
  args.instances = static_cast<uint32_t>(instances.value());
  args.cuda = device.value() == "cuda";
  args.device_ordinal = static_cast<int>(ordinal.value());
  return args;
}

Result<ex::FaultClass> ToFaultClass(const Napi::Value& value) {
  Result<std::string> name = ToString(value, "fault");
  if (!name.ok()) return name.status();
  if (name.value() == "none") return ex::FaultClass::kNone;
  if (name.value() == "transient") return ex::FaultClass::kTransient;
  if (name.value() == "sticky") return ex::FaultClass::kSticky;
  return Bad("fault", "'none', 'transient' or 'sticky'");
}

Napi::Array DimsToJs(Napi::Env env, const std::vector<int64_t>& dims) {
  Napi::Array out = Napi::Array::New(env, dims.size());
  for (uint32_t d = 0; d < dims.size(); ++d) out.Set(d, Num(env, static_cast<double>(dims[d])));
  return out;
}

Napi::Object TimingToJs(Napi::Env env, uint64_t input_ns, uint64_t compute_ns, uint64_t output_ns) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("inputNs", Num(env, static_cast<double>(input_ns)));
  out.Set("computeNs", Num(env, static_cast<double>(compute_ns)));
  out.Set("outputNs", Num(env, static_cast<double>(output_ns)));
  return out;
}

namespace {

Napi::Array IoToJs(Napi::Env env, const std::vector<ex::IoSpec>& specs) {
  Napi::Array out = Napi::Array::New(env, specs.size());
  for (uint32_t i = 0; i < specs.size(); ++i) {
    const ex::IoSpec& spec = specs[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", Napi::String::New(env, spec.name));
    o.Set("dtype", Num(env, static_cast<double>(static_cast<int32_t>(spec.dtype))));
    o.Set("dtypeName", Napi::String::New(env, ex::DTypeName(spec.dtype)));
    o.Set("dims", DimsToJs(env, spec.dims));
    out.Set(i, o);
  }
  return out;
}

}  // namespace

Napi::Object ExecutorInfoToJs(Napi::Env env, uint32_t id, const ex::Executor& executor) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("id", Num(env, id));
  out.Set("inputs", IoToJs(env, executor.inputs()));
  out.Set("outputs", IoToJs(env, executor.outputs()));
  out.Set("kernels", Napi::String::New(env, executor.kernels_name()));
  out.Set("deviceKind", Napi::String::New(env, executor.device_kind()));
  out.Set("weightsBytes", Num(env, static_cast<double>(executor.weights_bytes())));
  out.Set("workspaceBytes", Num(env, static_cast<double>(executor.workspace_bytes())));
  out.Set("instances", Num(env, executor.instances()));
  out.Set("stepCount", Num(env, executor.step_count()));
  out.Set("maxBatchSize", Num(env, executor.max_batch_size()));
  return out;
}

Napi::Object ExecutorStatsToJs(Napi::Env env, const ex::ExecutorStats& stats, bool dead) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("executions", Num(env, static_cast<double>(stats.executions)));
  out.Set("rows", Num(env, static_cast<double>(stats.rows)));
  out.Set("failures", Num(env, static_cast<double>(stats.failures)));
  out.Set("deviceFaults", Num(env, static_cast<double>(stats.device_faults)));
  out.Set("queued", Num(env, static_cast<double>(stats.queued)));
  out.Set("computeNs", Num(env, static_cast<double>(stats.compute_ns)));
  out.Set("dead", Napi::Boolean::New(env, dead));
  return out;
}

}  // namespace hotpath::napi
