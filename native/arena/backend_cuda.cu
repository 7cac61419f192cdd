// CUDA device and pinned-host backends. See backend.h and detail/cuda_backend.h.
//
// Every runtime call is checked and becomes a Status; the thread's last-error
// slot is cleared after a failure so it cannot leak into unrelated code.
// Each call runs with `device_ordinal` current and restores the caller's
// device afterwards (the batcher thread and JS threads may use other devices).
// No streams or events are created: allocation is synchronous. cudaDeviceReset
// is never called.
#include <cuda_runtime_api.h>

#include <atomic>
#include <string>
#include <utility>

#include "arena/detail/cuda_backend.h"
#include "device/cuda_device.h"

namespace hotpath::arena::detail {

namespace {

Status CudaStatus(const std::string& what, cudaError_t err) {
  (void)cudaGetLastError();
  StatusCode code = err == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted
                                                     : StatusCode::kInternal;
  return Status(code, what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

// Makes `ordinal` current for the scope and restores the previous device.
class DeviceScope {
 public:
  explicit DeviceScope(int ordinal) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != ordinal) {
      err_ = cudaSetDevice(ordinal);
      if (err_ != cudaSuccess) (void)cudaGetLastError();
      switched_ = err_ == cudaSuccess;
    }
  }
  ~DeviceScope() {
    if (switched_ && previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) {
      (void)cudaGetLastError();
    }
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  cudaError_t error() const { return err_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  cudaError_t err_ = cudaSuccess;
};

class CudaBackend final : public MemoryBackend {
 public:
  CudaBackend(int ordinal, std::string name) : ordinal_(ordinal), name_(std::move(name)) {}

  Result<void*> Alloc(size_t bytes) override {
    DeviceScope scope(ordinal_);
    if (scope.error() != cudaSuccess) return CudaStatus("cudaSetDevice", scope.error());
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, bytes);
    if (err != cudaSuccess) return CudaStatus("cudaMalloc(" + std::to_string(bytes) + ")", err);
    return ptr;
  }

  Status Free(void* ptr, size_t) override {
    DeviceScope scope(ordinal_);
    if (scope.error() != cudaSuccess) return CudaStatus("cudaSetDevice", scope.error());
    cudaError_t err = cudaFree(ptr);
    if (err != cudaSuccess) return CudaStatus("cudaFree", err);
    return Status::Ok();
  }

  BackendMemInfo MemInfo() const override {
    DeviceScope scope(ordinal_);
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    if (scope.error() != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return BackendMemInfo{};
    }
    return BackendMemInfo{total_bytes, free_bytes < total_bytes ? free_bytes : total_bytes};
  }

  BackendKind kind() const override { return BackendKind::kCuda; }
  bool host_accessible() const override { return false; }
  std::string description() const override {
    return name_ + " (device " + std::to_string(ordinal_) + ")";
  }

 private:
  const int ordinal_;
  const std::string name_;
};

class PinnedBackend final : public MemoryBackend {
 public:
  PinnedBackend(int ordinal, uint64_t capacity) : ordinal_(ordinal), capacity_(capacity) {}

  Result<void*> Alloc(size_t bytes) override {
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > capacity_ - used) {
        return Status(StatusCode::kResourceExhausted,
                      "pinned alloc: " + std::to_string(bytes) + " bytes exceed the capacity");
      }
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    DeviceScope scope(ordinal_);
    void* ptr = nullptr;
    cudaError_t err = scope.error() != cudaSuccess
                          ? scope.error()
                          : cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
    if (err != cudaSuccess) {
      used_.fetch_sub(bytes, std::memory_order_relaxed);  // roll back the reservation
      return CudaStatus("cudaHostAlloc(" + std::to_string(bytes) + ")", err);
    }
    return ptr;
  }

  Status Free(void* ptr, size_t bytes) override {
    cudaError_t err = cudaFreeHost(ptr);
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    if (err != cudaSuccess) return CudaStatus("cudaFreeHost", err);
    return Status::Ok();
  }

  BackendMemInfo MemInfo() const override {
    uint64_t used = used_.load(std::memory_order_relaxed);
    return BackendMemInfo{capacity_, capacity_ - used};
  }
  BackendKind kind() const override { return BackendKind::kPinned; }
  bool host_accessible() const override { return true; }
  std::string description() const override {
    return "pinned host memory (device " + std::to_string(ordinal_) + ")";
  }

 private:
  const int ordinal_;
  const uint64_t capacity_;
  std::atomic<uint64_t> used_{0};
};

// Probes the device so a missing GPU fails here, at creation, not at the
// first allocation.
Result<std::string> ProbeDevice(int ordinal) {
  Result<device::DeviceInfo> info = device::QueryCudaDevice(ordinal);
  if (!info.ok()) {
    Result<int> count = device::CudaDeviceCount();
    if (!count.ok()) return Status(StatusCode::kUnavailable, "no CUDA device: " + count.status().message());
    return Status(StatusCode::kUnavailable,
                  "CUDA device " + std::to_string(ordinal) + " unusable: " + info.status().message());
  }
  return info.value().name;
}

}  // namespace

Result<std::unique_ptr<MemoryBackend>> NewCudaBackend(int device_ordinal) {
  Result<std::string> name = ProbeDevice(device_ordinal);
  if (!name.ok()) return name.status();
  return std::unique_ptr<MemoryBackend>(new CudaBackend(device_ordinal, name.value()));
}

Result<std::unique_ptr<MemoryBackend>> NewPinnedBackend(int device_ordinal, uint64_t capacity_bytes) {
  Result<std::string> name = ProbeDevice(device_ordinal);
  if (!name.ok()) return name.status();
  return std::unique_ptr<MemoryBackend>(new PinnedBackend(device_ordinal, capacity_bytes));
}

}  // namespace hotpath::arena::detail
