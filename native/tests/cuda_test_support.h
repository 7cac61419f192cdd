// Device-side helpers for the CUDA kernel tests (kernels_cuda_test.cc): a
// device copy of a host vector whose copies are ordered, and one device with
// one stream. CUDA builds only. Thread-safety: used from one thread.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "executor/device_runtime.h"
#include "executor/kernels.h"

namespace hotpath::executor {

// Exits the test at once when a set-up call fails: nothing after it could
// mean anything.
inline void Must(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "FATAL %s: %s\n", what, cudaGetErrorString(err));
  std::exit(1);
}

// A device copy of a host vector (or zero-filled), freed on scope exit.
// Copies run on a stream of their own and are waited for: a pageable
// cudaMemcpy on the legacy stream may return before its DMA lands and does
// not order with the test's non-blocking stream, whose kernels launch right
// after the last upload.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : count_(host.size()) {
    Must(cudaMalloc(&ptr_, Bytes() + 1), "cudaMalloc");
    if (count_ > 0) Copy(ptr_, host.data(), cudaMemcpyHostToDevice, "upload");
  }
  ~DeviceArray() { (void)cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return static_cast<T*>(ptr_); }
  std::vector<T> Download() const {
    std::vector<T> host(count_);
    if (count_ > 0) Copy(host.data(), ptr_, cudaMemcpyDeviceToHost, "download");
    return host;
  }

 private:
  void Copy(void* dst, const void* src, cudaMemcpyKind kind, const char* what) const {
    cudaStream_t stream = nullptr;
    Must(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), what);
    Must(cudaMemcpyAsync(dst, src, Bytes(), kind, stream), what);
    Must(cudaStreamSynchronize(stream), what);
    Must(cudaStreamDestroy(stream), what);
  }
  size_t Bytes() const { return count_ * sizeof(T); }
  size_t count_;
  void* ptr_ = nullptr;
};

// One device, one stream, its error flag.
struct Gpu {
  std::shared_ptr<ExecDevice> device;
  std::unique_ptr<ExecStream> stream;
  uint32_t* flag = nullptr;

  const KernelSet& kernels() const { return device->kernels(); }
  KernelContext ctx() const { return stream->context(); }
  // The kernel's status, or the synchronisation's when the kernel launched.
  Status Run(const std::function<Status(const KernelSet&, const KernelContext&)>& kernel) {
    Status launched = kernel(kernels(), ctx());
    ExecStatus synced = stream->Synchronize();
    return launched.ok() ? synced.status : launched;
  }
};

}  // namespace hotpath::executor
