// memoryTrimmer* bindings. See memory_trimmer_binding.h.
#include "napi/memory_trimmer_binding.h"

#include <chrono>
#include <memory>
#include <optional>

#include "napi/export_functions.h"
#include "napi/result_js.h"
#include "process/memory_trimmer.h"

namespace hotpath::napi {

namespace {

// Per environment: whether this environment started the process's trimmer.
// Owned by the environment's cleanup hook; JS thread of that environment only.
struct TrimmerEnv {
  bool started = false;
};

void OnEnvCleanup(TrimmerEnv* data) {
  std::unique_ptr<TrimmerEnv> owned(data);
  if (owned->started) process::StopProcessTrimmer();
}

TrimmerEnv& EnvOf(const Napi::CallbackInfo& info) { return *static_cast<TrimmerEnv*>(info.Data()); }

// A non-negative number option of `options`, or nullopt.
std::optional<double> NumberOption(const Napi::Object& options, const char* name) {
  Napi::Value value = options.Get(name);
  if (!value.IsNumber()) return std::nullopt;
  const double raw = value.As<Napi::Number>().DoubleValue();
  if (!(raw >= 0) || raw > 9.0e15) return std::nullopt;
  return raw;
}

Napi::Value SupportedJs(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), process::TrimSupported());
}

Napi::Value StartJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "options must be an object"));
  const Napi::Object options = info[0].As<Napi::Object>();
  const std::optional<double> interval = NumberOption(options, "intervalMs");
  const std::optional<double> min_excess = NumberOption(options, "minExcessBytes");
  const std::optional<double> ratio = NumberOption(options, "excessRatio");
  const std::optional<double> min_growth = NumberOption(options, "minGrowthBytes");
  if (!interval || !min_excess || !ratio || !min_growth) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument,
                                   "intervalMs, minExcessBytes, excessRatio and minGrowthBytes must be numbers >= 0"));
  }
  process::TrimSettings settings;
  settings.min_excess_bytes = static_cast<uint64_t>(*min_excess);
  settings.excess_ratio = *ratio;
  settings.min_growth_bytes = static_cast<uint64_t>(*min_growth);
  Status started = process::StartProcessTrimmer(settings, std::chrono::milliseconds(static_cast<int64_t>(*interval)));
  if (!started.ok()) return ErrorResult(env, started);
  EnvOf(info).started = true;
  return OkResult(env, env.Undefined());
}

Napi::Value StopJs(const Napi::CallbackInfo& info) {
  TrimmerEnv& data = EnvOf(info);
  if (data.started) process::StopProcessTrimmer();
  data.started = false;
  return info.Env().Undefined();
}

Napi::Value ReportJs(const Napi::CallbackInfo& info) {
  if (info[0].IsNumber()) {
    const double bytes = info[0].As<Napi::Number>().DoubleValue();
    if (bytes >= 0 && bytes <= 9.0e15) process::ReportProcessAccounted(static_cast<uint64_t>(bytes));
  }
  return info.Env().Undefined();
}

Napi::Value RequestJs(const Napi::CallbackInfo& info) {
  process::RequestProcessTrim();
  return info.Env().Undefined();
}

Napi::Value StatsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::optional<process::TrimStats> stats = process::ProcessTrimmerStats();
  if (!stats) return env.Null();
  Napi::Object value = Napi::Object::New(env);
  // Exact below 2^53 bytes and counts.
  value.Set("checks", Napi::Number::New(env, static_cast<double>(stats->checks)));
  value.Set("trims", Napi::Number::New(env, static_cast<double>(stats->trims)));
  value.Set("releasedBytes", Napi::Number::New(env, static_cast<double>(stats->released_bytes)));
  value.Set("lastRssBytes", Napi::Number::New(env, static_cast<double>(stats->last_rss_bytes)));
  value.Set("accountedBytes", Napi::Number::New(env, static_cast<double>(stats->accounted_bytes)));
  value.Set("failures", Napi::Number::New(env, static_cast<double>(stats->failures)));
  value.Set("lastError", Napi::String::New(env, stats->last_error));
  return value;
}

}  // namespace

void RegisterMemoryTrimmerBinding(Napi::Env env, Napi::Object exports) {
  auto state = std::make_unique<TrimmerEnv>();
  TrimmerEnv* raw = state.get();
  env.AddCleanupHook(OnEnvCleanup, raw);
  state.release();  // owned by the cleanup hook
  ExportFunctions(env, exports, raw,
                  {
                      {"memoryTrimmerSupported", SupportedJs},
                      {"memoryTrimmerStart", StartJs},
                      {"memoryTrimmerStop", StopJs},
                      {"memoryTrimmerReport", ReportJs},
                      {"memoryTrimmerRequest", RequestJs},
                      {"memoryTrimmerStats", StatsJs},
                  });
}

}  // namespace hotpath::napi
