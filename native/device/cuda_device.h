// CUDA device probing. Compiled only when HOTPATH_WITH_CUDA is defined; callers
// outside native/device/ and tests should use QueryDevice() instead.
//
// Thread-safety: safe from any thread (the CUDA runtime serialises its own
// initialisation). QueryCudaDevice() temporarily makes `ordinal` the calling
// thread's current device and restores the previous one before returning.
#pragma once

#include "common/result.h"
#include "device/device_info.h"

namespace hotpath::device {

// Number of visible CUDA devices. UNAVAILABLE, with the runtime's error name
// and text, when the runtime cannot initialise (no driver, no device) or sees
// zero devices.
Result<int> CudaDeviceCount();

// Name, total and free memory of one device. Creates the device's primary
// context if it does not exist yet. INVALID_ARGUMENT for a bad ordinal,
// UNAVAILABLE for any other runtime failure.
Result<DeviceInfo> QueryCudaDevice(int ordinal);

}  // namespace hotpath::device
