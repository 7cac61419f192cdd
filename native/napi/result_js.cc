// Result objects for JS. See result_js.h.
#include "napi/result_js.h"

namespace hotpath::napi {

Napi::Object OkResult(Napi::Env env, Napi::Value value) {
  Napi::Object result = Napi::Object::New(env);
  result.Set("ok", Napi::Boolean::New(env, true));
  result.Set("value", value);
  return result;
}

Napi::Object ErrorResult(Napi::Env env, const Status& status) {
  Napi::Object result = Napi::Object::New(env);
  result.Set("ok", Napi::Boolean::New(env, false));
  result.Set("code", Napi::String::New(env, StatusCodeName(status.code())));
  result.Set("message", Napi::String::New(env, status.message()));
  return result;
}

}  // namespace hotpath::napi
