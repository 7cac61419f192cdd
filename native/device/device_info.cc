// Backend choice for QueryDevice(n): CUDA device n if compiled in and usable,
// host memory otherwise. See device_info.h.
#include "device/device_info.h"

#include <string>
#include <utility>

#include "device/host_memory.h"
#ifdef HOTPATH_WITH_CUDA
#include "device/cuda_device.h"
#endif

namespace hotpath::device {

namespace {

Result<DeviceInfo> HostDevice(std::string name) {
  Result<HostMemory> memory = QueryHostMemory();
  if (!memory.ok()) return memory.status();
  DeviceInfo info;
  info.backend = Backend::kHost;
  info.name = std::move(name);
  info.total_bytes = memory.value().total_bytes;
  info.free_bytes = memory.value().available_bytes;
  return info;
}

}  // namespace

const char* BackendName(Backend backend) {
  switch (backend) {
    case Backend::kCuda: return "cuda";
    case Backend::kHost: return "host";
  }
  return "host";
}

Result<DeviceInfo> QueryDevice(int ordinal) {
  if (ordinal < 0) return Status(StatusCode::kInvalidArgument, "device ordinal must be >= 0, got " + std::to_string(ordinal));
#ifdef HOTPATH_WITH_CUDA
  Result<int> count = CudaDeviceCount();
  if (!count.ok()) {
    return HostDevice("host memory (no CUDA device: " + count.status().message() + ")");
  }
  if (ordinal >= count.value()) {
    return HostDevice("host memory (CUDA device " + std::to_string(ordinal) + " does not exist: " +
                      std::to_string(count.value()) + " visible)");
  }
  Result<DeviceInfo> cuda = QueryCudaDevice(ordinal);
  if (cuda.ok()) return cuda;
  // A device exists but cannot be queried (e.g. no memory left for a
  // context): still serve from host memory, and say why.
  return HostDevice("host memory (CUDA device " + std::to_string(ordinal) + " unusable: " + cuda.status().message() + ")");
#else
  return HostDevice("host memory (built without CUDA)");
#endif
}

}  // namespace hotpath::device
