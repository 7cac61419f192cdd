// GPU utilisation through NVML, loaded with dlopen when present.
//
// NVML (libnvidia-ml.so.1) ships with the NVIDIA driver, not with the CUDA
// toolkit, so it is never linked: the first call tries to dlopen it and
// nvmlInit_v2 once; without it every call answers UNAVAILABLE with the reason,
// and the server simply exports no nv_gpu_utilization series.
//
// Thread-safety: any thread. Initialisation happens once (std::call_once);
// NVML itself is thread-safe after nvmlInit. The library stays loaded for the
// life of the process (NVML is not unloaded: other threads may be inside it).
#pragma once

#include <string>

#include "common/result.h"

namespace hotpath::device {

// The device's GPU utilisation over NVML's last sample period, as a fraction
// in [0, 1] (Triton's nv_gpu_utilization). `uuid` is DeviceInfo::uuid.
// UNAVAILABLE when NVML cannot be loaded or initialised, NOT_FOUND for an
// unknown UUID, INTERNAL for any other NVML failure (named in the message).
Result<double> GpuUtilization(const std::string& uuid);

}  // namespace hotpath::device
