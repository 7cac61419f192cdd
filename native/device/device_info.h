// Device detection: which memory backend this process should use, and how much
// memory it has.
//
// QueryDevice(n) answers with CUDA device n when the CUDA backend is compiled in
// (HOTPATH_WITH_CUDA) and a device is usable at run time; otherwise it answers
// with host memory and says why in `name`. A missing GPU or driver is never an
// error: CPU-only mode is a full mode. It fails only if host memory itself
// cannot be read.
//
// Thread-safety: QueryDevice() may be called from any thread. On the CUDA path
// it initialises the CUDA runtime (and device 0's primary context) on first use,
// which can take a while; it leaves the calling thread's current device as it
// found it.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace hotpath::device {

enum class Backend { kCuda, kHost };

// "cuda" or "host", as the value crosses to JS. Never null.
const char* BackendName(Backend backend);

struct DeviceInfo {
  Backend backend = Backend::kHost;
  // Device name ("NVIDIA H200"), or "host memory (...)" with the reason the
  // host backend was chosen.
  std::string name;
  // Capacity of the backend's memory. For host memory: physical RAM.
  uint64_t total_bytes = 0;
  // Memory available right now; <= total_bytes. For host memory this is the
  // kernel's MemAvailable estimate, not just unused pages. A snapshot: other
  // processes change it at any moment.
  uint64_t free_bytes = 0;
  // CUDA only: the ordinal asked for and the device's UUID in NVML's form
  // ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"), which is Triton's
  // `gpu_uuid` metric label. Host: -1 and "".
  int ordinal = -1;
  std::string uuid;
};

// `ordinal` (>= 0) picks the CUDA device; an ordinal that does not exist
// answers with host memory and says so, like a missing device.
Result<DeviceInfo> QueryDevice(int ordinal = 0);

}  // namespace hotpath::device
