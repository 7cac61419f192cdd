// processExit and armExitWatchdog bindings. See process_exit_binding.h.
#include "napi/process_exit_binding.h"

#include <chrono>
#include <cmath>

#include "napi/result_js.h"
#include "process/process_exit.h"

namespace hotpath::napi {

namespace {

// An exit status 0..255, else -1 (argument checks live in the TS wrapper; this is the guard).
int StatusArg(const Napi::Value& value) {
  if (!value.IsNumber()) return -1;
  const double raw = value.As<Napi::Number>().DoubleValue();
  if (!(raw >= 0 && raw <= 255) || std::floor(raw) != raw) return -1;
  return static_cast<int>(raw);
}

Napi::Value ProcessExitJs(const Napi::CallbackInfo& info) {
  const int status = StatusArg(info[0]);
  process::ExitNow(status < 0 ? 1 : status);
}

Napi::Value ArmExitWatchdogJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int status = StatusArg(info[1]);
  if (!info[0].IsNumber() || status < 0) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument, "armExitWatchdog(delayMs >= 0, status 0..255)"));
  }
  const double delay = info[0].As<Napi::Number>().DoubleValue();
  if (!(delay >= 0 && delay <= 86'400'000)) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument, "delayMs must be in 0..86400000"));
  }
  Status armed = process::ArmExitWatchdog(std::chrono::milliseconds(static_cast<int64_t>(delay)), status);
  if (!armed.ok()) return ErrorResult(env, armed);
  return OkResult(env, env.Undefined());
}

}  // namespace

void RegisterProcessExitBinding(Napi::Env env, Napi::Object exports) {
  exports.Set("processExit", Napi::Function::New(env, ProcessExitJs, "processExit"));
  exports.Set("armExitWatchdog", Napi::Function::New(env, ArmExitWatchdogJs, "armExitWatchdog"));
}

}  // namespace hotpath::napi
