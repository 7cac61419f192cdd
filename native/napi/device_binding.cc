// deviceInfo(ordinal?) and gpuUtilization(uuid) bindings: translate
// device::QueryDevice() and device::GpuUtilization() to JS. No logic here.
#include "napi/device_binding.h"

#include "device/device_info.h"
#include "device/nvml.h"
#include "napi/result_js.h"

namespace hotpath::napi {

namespace {

Napi::Value DeviceInfoJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int ordinal = 0;
  if (info.Length() > 0 && !info[0].IsUndefined()) {
    if (!info[0].IsNumber()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "ordinal must be a number"));
    const double raw = info[0].As<Napi::Number>().DoubleValue();
    if (!(raw >= 0 && raw <= 1024) || raw != static_cast<double>(static_cast<int>(raw))) {
      return ErrorResult(env, Status(StatusCode::kInvalidArgument, "ordinal must be an integer in 0..1024"));
    }
    ordinal = static_cast<int>(raw);
  }
  Result<device::DeviceInfo> result = device::QueryDevice(ordinal);
  if (!result.ok()) return ErrorResult(env, result.status());
  const device::DeviceInfo& device = result.value();
  Napi::Object value = Napi::Object::New(env);
  value.Set("backend", Napi::String::New(env, device::BackendName(device.backend)));
  value.Set("name", Napi::String::New(env, device.name));
  // Exact below 2^53 bytes (8 PiB), far above any real device.
  value.Set("totalBytes", Napi::Number::New(env, static_cast<double>(device.total_bytes)));
  value.Set("freeBytes", Napi::Number::New(env, static_cast<double>(device.free_bytes)));
  value.Set("ordinal", Napi::Number::New(env, device.ordinal));
  value.Set("uuid", Napi::String::New(env, device.uuid));
  return OkResult(env, value);
}

Napi::Value GpuUtilizationJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsString()) return ErrorResult(env, Status(StatusCode::kInvalidArgument, "uuid must be a string"));
  Result<double> result = device::GpuUtilization(info[0].As<Napi::String>().Utf8Value());
  if (!result.ok()) return ErrorResult(env, result.status());
  return OkResult(env, Napi::Number::New(env, result.value()));
}

}  // namespace

void RegisterDeviceBinding(Napi::Env env, Napi::Object exports) {
  exports.Set("deviceInfo", Napi::Function::New(env, DeviceInfoJs, "deviceInfo"));
  exports.Set("gpuUtilization", Napi::Function::New(env, GpuUtilizationJs, "gpuUtilization"));
}

}  // namespace hotpath::napi
