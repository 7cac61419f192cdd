// CUDA device probing with the CUDA runtime API. See cuda_device.h.
// Every runtime call is checked; failures become UNAVAILABLE statuses, never
// exceptions or aborts. cudaDeviceReset is never called.
#include "device/cuda_device.h"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

namespace hotpath::device {

namespace {

// "<what>: cudaErrorNoDevice (no CUDA-capable device is detected)".
// Also clears the calling thread's last-error slot so a later, unrelated
// cudaGetLastError() does not report this failure again.
Status CudaFailure(const char* what, cudaError_t err, StatusCode code = StatusCode::kUnavailable) {
  (void)cudaGetLastError();
  std::string message(what);
  message += ": ";
  message += cudaGetErrorName(err);
  message += " (";
  message += cudaGetErrorString(err);
  message += ")";
  return Status(code, std::move(message));
}

// NVML's spelling of a device UUID: "GPU-" then the 16 bytes in hex, grouped
// 8-4-4-4-12, which is also what Triton's gpu_uuid label carries.
std::string FormatUuid(const cudaUUID_t& uuid) {
  static const char* kHex = "0123456789abcdef";
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    const auto byte = static_cast<unsigned char>(uuid.bytes[i]);
    text += kHex[byte >> 4];
    text += kHex[byte & 0xF];
  }
  return text;
}

}  // namespace

Result<int> CudaDeviceCount() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return CudaFailure("cudaGetDeviceCount", err);
  if (count <= 0) return Status(StatusCode::kUnavailable, "cudaGetDeviceCount: 0 devices");
  return count;
}

Result<DeviceInfo> QueryCudaDevice(int ordinal) {
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, ordinal);
  if (err == cudaErrorInvalidDevice) {
    return CudaFailure("cudaGetDeviceProperties", err, StatusCode::kInvalidArgument);
  }
  if (err != cudaSuccess) return CudaFailure("cudaGetDeviceProperties", err);

  int previous = 0;
  err = cudaGetDevice(&previous);
  if (err != cudaSuccess) return CudaFailure("cudaGetDevice", err);
  err = cudaSetDevice(ordinal);
  if (err != cudaSuccess) return CudaFailure("cudaSetDevice", err);

  size_t free_bytes = 0;
  size_t total_bytes = 0;
  cudaError_t mem_err = cudaMemGetInfo(&free_bytes, &total_bytes);
  // Restore the caller's device even when cudaMemGetInfo failed.
  err = cudaSetDevice(previous);
  if (mem_err != cudaSuccess) return CudaFailure("cudaMemGetInfo", mem_err);
  if (err != cudaSuccess) return CudaFailure("cudaSetDevice (restore)", err);

  DeviceInfo info;
  info.backend = Backend::kCuda;
  info.name = prop.name;
  info.ordinal = ordinal;
  info.uuid = FormatUuid(prop.uuid);
  info.total_bytes = total_bytes;
  info.free_bytes = free_bytes < total_bytes ? free_bytes : total_bytes;
  return info;
}

}  // namespace hotpath::device
