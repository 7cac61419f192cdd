// deviceInfo() binding: translates device::QueryDevice() to JS. No logic here.
#include "napi/device_binding.h"

#include "device/device_info.h"
#include "napi/result_js.h"

namespace hotpath::napi {

namespace {

Napi::Value DeviceInfoJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<device::DeviceInfo> result = device::QueryDevice();
  if (!result.ok()) return ErrorResult(env, result.status());
  const device::DeviceInfo& device = result.value();
  Napi::Object value = Napi::Object::New(env);
  value.Set("backend", Napi::String::New(env, device::BackendName(device.backend)));
  value.Set("name", Napi::String::New(env, device.name));
  // Exact below 2^53 bytes (8 PiB), far above any real device.
  value.Set("totalBytes", Napi::Number::New(env, static_cast<double>(device.total_bytes)));
  value.Set("freeBytes", Napi::Number::New(env, static_cast<double>(device.free_bytes)));
  return OkResult(env, value);
}

}  // namespace

void RegisterDeviceBinding(Napi::Env env, Napi::Object exports) {
  exports.Set("deviceInfo", Napi::Function::New(env, DeviceInfoJs, "deviceInfo"));
}

}  // namespace hotpath::napi
