// The CUDA ExecDevice and ExecStream (device_runtime.h).
//
// MakeCudaDevice checks the device once (count, cudaSetDevice, cudaFree(0)
// to create the context, that our kernels have an image for it) and picks
// the kernel set: "cuda+cublas" when cuBLAS loads and a handle works on this
// device, else "cuda" (own SGEMM). HOTPATH_CUBLAS=off|0|false|no forces the
// own kernels (tests compare both).
//
// Each stream owns: a cudaStreamNonBlocking stream, the 4-byte device error
// flag it was given (zeroed at creation), a 4-byte pinned host word the flag
// is read into, and, with cuBLAS, its own handle bound to the stream (cuBLAS
// handles must not be shared between threads). The destructor releases them
// in reverse order after draining the stream. cudaDeviceReset is never
// called.
//
// Thread-safety: the device is immutable after creation (any thread); a
// stream is used by one thread at a time, which has called BindThread.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "executor/cublas_loader.h"
#include "executor/cuda_kernels.h"
#include "executor/detail/cuda_status.h"
#include "executor/device_runtime.h"

namespace hotpath::executor {

namespace {

using detail::CudaExecStatus;
using detail::DeviceScope;

ExecStatus Ok() { return ExecStatus{}; }

// HOTPATH_CUBLAS=off (or 0, false, no): own SGEMM even when cuBLAS exists.
bool CublasDisabledByEnv() {
  const char* value = std::getenv("HOTPATH_CUBLAS");
  if (value == nullptr) return false;
  for (const char* off : {"off", "OFF", "0", "false", "no"}) {
    if (std::strcmp(value, off) == 0) return true;
  }
  return false;
}

Status CublasFailure(const char* call, cublasStatus_t status) {
  return Status(StatusCode::kUnavailable, std::string(call) + ": " + CublasStatusName(status));
}

// A cuBLAS handle bound to `stream` with pedantic (true FP32) math.
Result<cublasHandle_t> CreateBlasHandle(const CublasApi& blas, cudaStream_t stream) {
  cublasHandle_t handle = nullptr;
  cublasStatus_t status = blas.create(&handle);
  if (status != kCublasStatusSuccess) return CublasFailure("cublasCreate_v2", status);
  status = blas.set_stream(handle, stream);
  if (status == kCublasStatusSuccess) status = blas.set_math_mode(handle, kCublasPedanticMath);
  if (status != kCublasStatusSuccess) {
    (void)blas.destroy(handle);
    return CublasFailure("cublasSetStream_v2/cublasSetMathMode", status);
  }
  return handle;
}

class CudaStream final : public ExecStream {
 public:
  // Builds a stream for `ordinal`; `blas` (nullable) gets a handle on it.
  static Result<std::unique_ptr<ExecStream>> Create(int ordinal, const CublasApi* blas,
                                                    uint32_t* error_flag) {
    DeviceScope scope(ordinal);
    if (scope.error() != cudaSuccess) return detail::CudaStatus("cudaSetDevice", scope.error());
    std::unique_ptr<CudaStream> stream(new CudaStream(ordinal, blas, error_flag));
    cudaError_t err = cudaStreamCreateWithFlags(&stream->stream_, cudaStreamNonBlocking);
    if (err != cudaSuccess) {
      stream->stream_ = nullptr;
      return detail::CudaStatus("cudaStreamCreateWithFlags", err);
    }
    err = cudaHostAlloc(reinterpret_cast<void**>(&stream->host_flag_), sizeof(uint32_t), cudaHostAllocDefault);
    if (err != cudaSuccess) {
      stream->host_flag_ = nullptr;
      return detail::CudaStatus("cudaHostAlloc(error flag)", err);
    }
    *stream->host_flag_ = 0;
    err = cudaMemsetAsync(error_flag, 0, sizeof(uint32_t), stream->stream_);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream->stream_);
    if (err != cudaSuccess) return detail::CudaStatus("cudaMemsetAsync(error flag)", err);
    if (blas != nullptr) {
      Result<cublasHandle_t> handle = CreateBlasHandle(*blas, stream->stream_);
      if (!handle.ok()) return handle.status();
      stream->blas_handle_ = handle.value();
    }
    return std::unique_ptr<ExecStream>(std::move(stream));
  }

  // Drains the stream, then releases the handle, the pinned word and the
  // stream. Failures cannot be reported from here; they are cleared from
  // the thread's error slot so they do not surface in unrelated code.
  ~CudaStream() override {
    DeviceScope scope(ordinal_);
    if (stream_ != nullptr && cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
    if (blas_handle_ != nullptr) (void)blas_->destroy(blas_handle_);
    if (host_flag_ != nullptr && cudaFreeHost(host_flag_) != cudaSuccess) (void)cudaGetLastError();
    if (stream_ != nullptr && cudaStreamDestroy(stream_) != cudaSuccess) (void)cudaGetLastError();
  }

  KernelContext context() const override {
    KernelContext ctx;
    ctx.stream = stream_;
    ctx.error_flag = error_flag_;
    ctx.blas_handle = blas_handle_;
    return ctx;
  }

  ExecStatus CopyIn(void* device_dst, const void* host_src, size_t bytes) override {
    if (bytes == 0) return Ok();
    cudaError_t err = cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_);
    if (err != cudaSuccess) return CudaExecStatus("cudaMemcpyAsync (copy in)", err);
    return Ok();
  }

  ExecStatus CopyOut(void* host_dst, const void* device_src, size_t bytes) override {
    if (bytes == 0) return Ok();
    cudaError_t err = cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_);
    if (err != cudaSuccess) return CudaExecStatus("cudaMemcpyAsync (copy out)", err);
    return Ok();
  }

  // The flag's copy is queued behind the batch's work, so one
  // cudaStreamSynchronize covers both. A raised flag is reset on the stream
  // (ordered before the next batch's kernels) and reported as a data error.
  ExecStatus Synchronize() override {
    cudaError_t err = cudaMemcpyAsync(host_flag_, error_flag_, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream_);
    if (err != cudaSuccess) return CudaExecStatus("cudaMemcpyAsync (error flag)", err);
    err = cudaStreamSynchronize(stream_);
    if (err != cudaSuccess) return CudaExecStatus("cudaStreamSynchronize", err);
    if (*host_flag_ == 0) return Ok();
    *host_flag_ = 0;
    err = cudaMemsetAsync(error_flag_, 0, sizeof(uint32_t), stream_);
    if (err != cudaSuccess) return CudaExecStatus("cudaMemsetAsync (error flag)", err);
    return ExecStatus{Status(StatusCode::kInvalidArgument, "Gather index out of range"), FaultClass::kNone};
  }

 private:
  CudaStream(int ordinal, const CublasApi* blas, uint32_t* error_flag)
      : ordinal_(ordinal), blas_(blas), error_flag_(error_flag) {}

  const int ordinal_;
  const CublasApi* const blas_;  // null without cuBLAS
  uint32_t* const error_flag_;   // device memory, owned by the executor's workspace
  cudaStream_t stream_ = nullptr;
  uint32_t* host_flag_ = nullptr;  // pinned
  cublasHandle_t blas_handle_ = nullptr;
};

class CudaDevice final : public ExecDevice {
 public:
  CudaDevice(int ordinal, const CublasApi* blas)
      : ordinal_(ordinal), blas_(blas), kernels_(MakeCudaKernelSet(blas)) {}

  const char* kind() const override { return "cuda"; }
  int ordinal() const override { return ordinal_; }
  const KernelSet& kernels() const override { return *kernels_; }

  Result<std::unique_ptr<ExecStream>> CreateStream(uint32_t* error_flag) override {
    if (error_flag == nullptr) {
      return Status(StatusCode::kInvalidArgument, "CreateStream: a CUDA stream needs an error flag");
    }
    return CudaStream::Create(ordinal_, blas_, error_flag);
  }

  ExecStatus Upload(void* device_dst, const void* host_src, size_t bytes) override {
    if (bytes == 0) return Ok();
    DeviceScope scope(ordinal_);
    if (scope.error() != cudaSuccess) return CudaExecStatus("cudaSetDevice", scope.error());
    cudaError_t err = cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice);
    if (err != cudaSuccess) return CudaExecStatus("cudaMemcpy (upload)", err);
    return Ok();
  }

  ExecStatus BindThread() override {
    cudaError_t err = cudaSetDevice(ordinal_);
    if (err != cudaSuccess) return CudaExecStatus("cudaSetDevice", err);
    return Ok();
  }

 private:
  const int ordinal_;
  const CublasApi* const blas_;
  const std::unique_ptr<KernelSet> kernels_;
};

Status Unavailable(const std::string& what, const Status& cause) {
  return Status(StatusCode::kUnavailable, what + ": " + cause.message());
}

// cuBLAS if it loads and a handle works on the current device; null (own
// SGEMM) otherwise, never an error: the own kernels are always there.
const CublasApi* PickBlas() {
  if (CublasDisabledByEnv()) return nullptr;
  Result<const CublasApi*> blas = LoadCublas();
  if (!blas.ok()) return nullptr;
  cudaStream_t probe_stream = nullptr;
  if (cudaStreamCreateWithFlags(&probe_stream, cudaStreamNonBlocking) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  Result<cublasHandle_t> handle = CreateBlasHandle(*blas.value(), probe_stream);
  if (handle.ok()) (void)blas.value()->destroy(handle.value());
  if (cudaStreamDestroy(probe_stream) != cudaSuccess) (void)cudaGetLastError();
  return handle.ok() ? blas.value() : nullptr;
}

}  // namespace

Result<std::shared_ptr<ExecDevice>> MakeCudaDevice(int ordinal) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return Unavailable("no CUDA device", detail::CudaStatus("cudaGetDeviceCount", err));
  if (ordinal < 0 || ordinal >= count) {
    return Status(StatusCode::kUnavailable, "CUDA device " + std::to_string(ordinal) + " not present (" +
                                                std::to_string(count) + " devices)");
  }
  DeviceScope scope(ordinal);
  if (scope.error() != cudaSuccess) {
    return Unavailable("CUDA device " + std::to_string(ordinal), detail::CudaStatus("cudaSetDevice", scope.error()));
  }
  err = cudaFree(nullptr);  // creates the primary context now, not at the first kernel
  if (err != cudaSuccess) {
    return Unavailable("CUDA device " + std::to_string(ordinal), detail::CudaStatus("cudaFree(0)", err));
  }
  Status probe = ProbeCudaKernels();
  if (!probe.ok()) return Unavailable("CUDA device " + std::to_string(ordinal), probe);
  return std::shared_ptr<ExecDevice>(std::make_shared<CudaDevice>(ordinal, PickBlas()));
}

}  // namespace hotpath::executor
