// JS binding for device detection (native/device). Paired with
// src/native/device.ts.
#pragma once

#include <napi.h>

namespace hotpath::napi {

// Adds `deviceInfo()` to `exports`: returns a result object (see result_js.h)
// whose value is {backend: 'cuda'|'host', name, totalBytes, freeBytes}.
// Synchronous: the first call on a CUDA machine initialises the runtime.
void RegisterDeviceBinding(Napi::Env env, Napi::Object exports);

}  // namespace hotpath::napi
