// version(), buildInfo() and envInfo() bindings. See build_info_binding.h.
#include "napi/build_info_binding.h"

#include "common/build_info.h"
#include "napi/addon_data.h"

namespace hotpath::napi {

namespace {

Napi::Value VersionJs(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), Version());
}

Napi::Value BuildInfoJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object value = Napi::Object::New(env);
  value.Set("version", Napi::String::New(env, Version()));
  value.Set("cudaCompiledIn", Napi::Boolean::New(env, CudaCompiledIn()));
  value.Set("build", Napi::String::New(env, BuildSystem()));
  value.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
  return value;
}

Napi::Value EnvInfoJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  EnvCounters counters = AddonData::Counters();
  Napi::Object value = Napi::Object::New(env);
  value.Set("id", Napi::Number::New(env, static_cast<double>(AddonData::Of(env).id())));
  value.Set("live", Napi::Number::New(env, static_cast<double>(counters.live)));
  value.Set("created", Napi::Number::New(env, static_cast<double>(counters.created)));
  return value;
}

}  // namespace

void RegisterBuildInfoBinding(Napi::Env env, Napi::Object exports) {
  exports.Set("version", Napi::Function::New(env, VersionJs, "version"));
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfoJs, "buildInfo"));
  exports.Set("envInfo", Napi::Function::New(env, EnvInfoJs, "envInfo"));
}

}  // namespace hotpath::napi
