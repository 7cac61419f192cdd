// CUDA error handling shared by the CUDA kernel set, the CUDA device and
// their tests: which errors lose the context (FaultClass), and the one
// message format, "<call>: cudaErrorIllegalAddress (an illegal memory access
// was encountered)". CUDA builds only.
//
// Thread-safety: free functions; DeviceScope is per thread (like the CUDA
// current device it saves and restores).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "common/status.h"
#include "executor/device_runtime.h"

namespace hotpath::executor::detail {

// kSticky for errors after which the CUDA context (or the executor's use of
// this device) cannot recover for the rest of the process: faults of a
// kernel (illegal address or instruction, misaligned address, hardware stack
// error, assert, launch failure or timeout), uncorrectable ECC/NVLink errors,
// contained errors, a destroyed, missing or uninitialised device or driver,
// and a device that has no image of our kernels. kTransient for everything
// else (allocation failure, out of resources, a bad argument...): the device
// still works. kNone for cudaSuccess.
FaultClass ClassifyCudaError(cudaError_t err);

// "<what>: <cudaGetErrorName> (<cudaGetErrorString>)" with INTERNAL for a
// sticky error and UNAVAILABLE otherwise (the kernels.h convention). Also
// clears the thread's last-error slot, so a transient failure is not
// reported again by an unrelated later check.
Status CudaStatus(const std::string& what, cudaError_t err);
// The same as an ExecStatus carrying ClassifyCudaError(err).
ExecStatus CudaExecStatus(const std::string& what, cudaError_t err);

// Checks a kernel launch with cudaGetLastError: OK, or CudaStatus naming
// "<kernel> launch".
Status CheckLaunch(const char* kernel);

// Makes `ordinal` current on this thread for the scope and restores the
// previous device afterwards (set-up calls come from threads that may use
// other devices).
class DeviceScope {
 public:
  explicit DeviceScope(int ordinal);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  // cudaSuccess, or why the device could not be made current.
  cudaError_t error() const { return error_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  cudaError_t error_ = cudaSuccess;
};

}  // namespace hotpath::executor::detail
