// NVML through dlopen. See nvml.h. The handful of NVML declarations below are
// written from NVML's public API reference (the header is not on the build
// machines): opaque device handles, an int return code with 0 = success, and
// the two-field utilisation struct.
#include "device/nvml.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace hotpath::device {

namespace {

using NvmlReturn = int;        // nvmlReturn_t
using NvmlDevice = void*;      // nvmlDevice_t (opaque)
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlErrorNotFound = 6;  // NVML_ERROR_NOT_FOUND

struct NvmlUtilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};

struct NvmlApi {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  Status status;  // why NVML is unusable; OK once loaded and initialised
};

template <typename Fn>
bool Bind(void* library, const char* symbol, Fn* out) {
  void* address = dlsym(library, symbol);
  if (address == nullptr) return false;
  *out = reinterpret_cast<Fn>(address);
  return true;
}

std::string ErrorText(const NvmlApi& api, NvmlReturn code) {
  const char* text = api.error_string != nullptr ? api.error_string(code) : nullptr;
  return text != nullptr ? std::string(text) : "NVML error " + std::to_string(code);
}

// Loaded once; never unloaded (see the header).
const NvmlApi& Api() {
  static NvmlApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = dlerror();
      api.status = Status(StatusCode::kUnavailable,
                          std::string("NVML not available: dlopen libnvidia-ml.so.1: ") + (why ? why : "unknown error"));
      return;
    }
    if (!Bind(library, "nvmlInit_v2", &api.init) || !Bind(library, "nvmlDeviceGetHandleByUUID", &api.by_uuid) ||
        !Bind(library, "nvmlDeviceGetUtilizationRates", &api.utilization)) {
      api.status = Status(StatusCode::kUnavailable, "NVML not available: libnvidia-ml.so.1 lacks a required symbol");
      return;
    }
    Bind(library, "nvmlErrorString", &api.error_string);  // optional: messages only
    const NvmlReturn init = api.init();
    if (init != kNvmlSuccess) {
      api.status = Status(StatusCode::kUnavailable, "NVML not available: nvmlInit_v2: " + ErrorText(api, init));
    }
  });
  return api;
}

}  // namespace

Result<double> GpuUtilization(const std::string& uuid) {
  const NvmlApi& api = Api();
  if (!api.status.ok()) return api.status;
  NvmlDevice device = nullptr;
  const NvmlReturn found = api.by_uuid(uuid.c_str(), &device);
  if (found != kNvmlSuccess) {
    return Status(found == kNvmlErrorNotFound ? StatusCode::kNotFound : StatusCode::kInternal,
                  "nvmlDeviceGetHandleByUUID(" + uuid + "): " + ErrorText(api, found));
  }
  NvmlUtilization utilization{};
  const NvmlReturn read = api.utilization(device, &utilization);
  if (read != kNvmlSuccess) {
    return Status(StatusCode::kInternal, "nvmlDeviceGetUtilizationRates(" + uuid + "): " + ErrorText(api, read));
  }
  return static_cast<double>(utilization.gpu) / 100.0;
}

}  // namespace hotpath::device
