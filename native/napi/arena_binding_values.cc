// JS <-> arena value conversions. See arena_binding_values.h.
#include "napi/arena_binding_values.h"

#include <cmath>

#include "napi/result_js.h"

namespace hotpath::napi {

namespace {

constexpr double kMaxSafe = 9007199254740991.0;  // 2^53 - 1

Napi::Number Num(Napi::Env env, uint64_t value) { return Napi::Number::New(env, static_cast<double>(value)); }

}  // namespace

Result<uint64_t> ToU64(const Napi::Value& value, const char* what) {
  if (!value.IsNumber()) return Status(StatusCode::kInvalidArgument, std::string(what) + " must be a number");
  double number = value.As<Napi::Number>().DoubleValue();
  if (!(number >= 0) || number > kMaxSafe || std::floor(number) != number) {
    return Status(StatusCode::kInvalidArgument, std::string(what) + " must be a non-negative safe integer");
  }
  return static_cast<uint64_t>(number);
}

Result<std::string> ToText(const Napi::Value& value, const char* what) {
  if (!value.IsString()) return Status(StatusCode::kInvalidArgument, std::string(what) + " must be a string");
  return value.As<Napi::String>().Utf8Value();
}

Result<arena::ArenaConfig> ToArenaConfig(const Napi::Value& value) {
  if (!value.IsObject()) return Status(StatusCode::kInvalidArgument, "config must be an object");
  Napi::Object object = value.As<Napi::Object>();
  arena::ArenaConfig config;
  if (object.Has("backend")) {
    Result<std::string> name = ToText(object.Get("backend"), "backend");
    if (!name.ok()) return name.status();
    Result<arena::BackendKind> kind = arena::ParseBackendKind(name.value());
    if (!kind.ok()) return kind.status();
    config.backend.kind = kind.value();
  }
  struct Field {
    const char* name;
    uint64_t* target;
  };
  uint64_t ordinal = 0;
  for (Field field : {Field{"capacityBytes", &config.backend.capacity_bytes},
                      Field{"segmentBytes", &config.segment_bytes}, Field{"maxSplitBytes", &config.max_split_bytes},
                      Field{"smallMaxBytes", &config.small_max_bytes}, Field{"deviceOrdinal", &ordinal}}) {
    if (!object.Has(field.name)) continue;
    Result<uint64_t> number = ToU64(object.Get(field.name), field.name);
    if (!number.ok()) return number.status();
    *field.target = number.value();
  }
  if (ordinal > 1024) return Status(StatusCode::kInvalidArgument, "deviceOrdinal out of range");
  config.backend.device_ordinal = static_cast<int>(ordinal);
  return config;
}

Napi::Object StatsToJs(Napi::Env env, const arena::ArenaStats& s) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("capacity", Num(env, s.capacity));
  out.Set("requested", Num(env, s.requested));
  out.Set("allocated", Num(env, s.allocated));
  out.Set("backendReserved", Num(env, s.backend_reserved));
  out.Set("reservations", Num(env, s.reservations));
  out.Set("cached", Num(env, s.cached));
  out.Set("peakAllocated", Num(env, s.peak_allocated));
  out.Set("peakBackendReserved", Num(env, s.peak_backend_reserved));
  out.Set("totalFree", Num(env, s.total_free));
  out.Set("largestFree", Num(env, s.largest_free));
  out.Set("externalFragmentation", Napi::Number::New(env, s.external_fragmentation));
  out.Set("cacheOverhead", Napi::Number::New(env, s.cache_overhead));
  out.Set("internalFragmentation", Napi::Number::New(env, s.internal_fragmentation));
  out.Set("segments", Num(env, s.segments));
  out.Set("blocks", Num(env, s.blocks));
  out.Set("reservationCount", Num(env, s.reservation_count));
  out.Set("owners", Num(env, s.owners));
  out.Set("backendAllocs", Num(env, s.backend_allocs));
  out.Set("backendFrees", Num(env, s.backend_frees));
  out.Set("backendFailures", Num(env, s.backend_failures));
  out.Set("evictions", Num(env, s.evictions));
  out.Set("evictionRefusals", Num(env, s.eviction_refusals));
  out.Set("evictionAgeTotalNs", Num(env, s.eviction_age_total_ns));
  out.Set("evictionAgeMaxNs", Num(env, s.eviction_age_max_ns));
  out.Set("quotaFailures", Num(env, s.quota_failures));
  out.Set("oomFailures", Num(env, s.oom_failures));
  Napi::Array tenants = Napi::Array::New(env, s.tenants.size());
  for (uint32_t i = 0; i < s.tenants.size(); ++i) {
    const arena::TenantStats& t = s.tenants[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("id", Num(env, t.id));
    o.Set("name", Napi::String::New(env, t.name));
    o.Set("quota", Num(env, t.quota));
    o.Set("requested", Num(env, t.requested));
    o.Set("allocated", Num(env, t.allocated));
    o.Set("reserved", Num(env, t.reserved));
    o.Set("used", Num(env, t.used));
    o.Set("peak", Num(env, t.peak));
    o.Set("blocks", Num(env, t.blocks));
    o.Set("reservations", Num(env, t.reservations));
    o.Set("evictions", Num(env, t.evictions));
    o.Set("quotaFailures", Num(env, t.quota_failures));
    tenants.Set(i, o);
  }
  out.Set("tenants", tenants);
  return out;
}

Napi::Object SummaryToJs(Napi::Env env, const arena::ReleaseSummary& summary) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("owners", Num(env, summary.owners));
  out.Set("blocks", Num(env, summary.blocks));
  out.Set("reservations", Num(env, summary.reservations));
  out.Set("bytes", Num(env, summary.bytes));
  return out;
}

Napi::Object EvictionToJs(Napi::Env env, const arena::EvictionInfo& info) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("handle", Num(env, info.handle));
  out.Set("kind", Napi::String::New(env, info.is_block ? "block" : "reservation"));
  out.Set("tenant", Num(env, info.tenant));
  out.Set("owner", Num(env, info.owner));
  out.Set("bytes", Num(env, info.bytes));
  out.Set("idleMs", Napi::Number::New(env, static_cast<double>(info.idle_ns) / 1e6));
  return out;
}

Napi::Object FailureResult(Napi::Env env, const Status& status, const arena::Failure& failure) {
  Napi::Object result = ErrorResult(env, status);
  if (failure.kind == arena::Failure::Kind::kNone) return result;
  Napi::Object detail = Napi::Object::New(env);
  bool quota = failure.kind == arena::Failure::Kind::kQuota;
  detail.Set("kind", Napi::String::New(env, quota ? "quota" : "oom"));
  detail.Set("tenant", Napi::String::New(env, failure.tenant));
  detail.Set("requested", Num(env, failure.requested));
  if (quota) {
    detail.Set("used", Num(env, failure.used));
    detail.Set("quota", Num(env, failure.quota));
  } else {
    Napi::Array holders = Napi::Array::New(env, failure.holders.size());
    for (uint32_t i = 0; i < failure.holders.size(); ++i) {
      const arena::Holder& h = failure.holders[i];
      Napi::Object o = Napi::Object::New(env);
      o.Set("kind", Napi::String::New(env, h.kind));
      o.Set("name", Napi::String::New(env, h.name));
      o.Set("allocated", Num(env, h.allocated));
      o.Set("reserved", Num(env, h.reserved));
      holders.Set(i, o);
    }
    detail.Set("holders", holders);
  }
  result.Set("detail", detail);
  return result;
}

}  // namespace hotpath::napi
