// duplicateSocket binding. See socket_handoff_binding.h.
#include "napi/socket_handoff_binding.h"

#include <climits>
#include <cmath>

#include "napi/result_js.h"
#include "process/socket_handoff.h"

namespace hotpath::napi {

namespace {

Napi::Value DuplicateSocketJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // Argument checks live in the TS wrapper; this is the guard against anything else.
  if (info.Length() < 1 || !info[0].IsNumber()) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument, "duplicateSocket(fd: integer >= 0)"));
  }
  const double raw = info[0].As<Napi::Number>().DoubleValue();
  if (!(raw >= 0 && raw <= INT_MAX) || std::floor(raw) != raw) {
    return ErrorResult(env, Status(StatusCode::kInvalidArgument, "duplicateSocket(fd: integer >= 0)"));
  }
  Result<int> copy = process::DuplicateSocket(static_cast<int>(raw));
  if (!copy.ok()) return ErrorResult(env, copy.status());
  return OkResult(env, Napi::Number::New(env, copy.value()));
}

}  // namespace

void RegisterSocketHandoffBinding(Napi::Env env, Napi::Object exports) {
  exports.Set("duplicateSocket", Napi::Function::New(env, DuplicateSocketJs, "duplicateSocket"));
}

}  // namespace hotpath::napi
