// The CUDA ExecDevice and ExecStream (device_runtime.h).
//
// MakeCudaDevice checks a device once per process (count, cudaSetDevice,
// cudaFree(0) to create the context, that our kernels have an image for it)
// and picks the kernel set once: "cuda+cublas" when cuBLAS loads and a
// handle works on this device, else "cuda" (own SGEMM). The device is cached
// per (ordinal, CudaBlas), so every executor of a process shares it and the
// cuBLAS probe runs once. HOTPATH_CUBLAS=off|0|false|no (read at the first
// call) or CudaBlas::kOff forces the own kernels (tests compare both).
//
// Each stream owns: a cudaStreamNonBlocking stream, the 4-byte device error
// flag it was given (zeroed at creation), a 4-byte pinned host word the flag
// is read into, kTimingMarks timing events and, with cuBLAS, its own handle
// bound to the stream (cuBLAS handles must not be shared between threads).
// A stream whose handle cannot be created runs the own SGEMM (the Gemm
// kernel takes cuBLAS only when the context carries a handle). The
// destructor releases them in reverse order after draining the stream.
// cudaDeviceReset is never called.
//
// Thread-safety: the device is immutable after creation (any thread); the
// cache is guarded by a mutex; a stream is used by one thread at a time,
// which has called BindThread.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
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
// Read once, at the first MakeCudaDevice (a function-local static: thread-safe
// initialisation), so no later setenv from any thread can race with it.
bool CublasDisabledByEnv() {
  static const bool disabled = [] {
    const char* value = std::getenv("HOTPATH_CUBLAS");
    if (value == nullptr) return false;
    for (const char* off : {"off", "OFF", "0", "false", "no"}) {
      if (std::strcmp(value, off) == 0) return true;
    }
    return false;
  }();
  return disabled;
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
    for (cudaEvent_t& event : stream->marks_) {
      err = cudaEventCreateWithFlags(&event, cudaEventDefault);  // with timing
      if (err != cudaSuccess) {
        event = nullptr;
        return detail::CudaStatus("cudaEventCreateWithFlags(timing mark)", err);
      }
    }
    if (blas != nullptr) {
      // PickBlas proved a handle works on this device; one failing now (out
      // of memory, say) leaves this stream on the own SGEMM, which computes
      // the same thing, rather than failing the executor.
      Result<cublasHandle_t> handle = CreateBlasHandle(*blas, stream->stream_);
      if (handle.ok()) {
        stream->blas_handle_ = handle.value();
      } else {
        (void)cudaGetLastError();
      }
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
    for (cudaEvent_t event : marks_) {
      if (event != nullptr && cudaEventDestroy(event) != cudaSuccess) (void)cudaGetLastError();
    }
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

  ExecStatus Mark(int mark) override {
    if (mark < 0 || mark >= kTimingMarks) {
      return ExecStatus{Status(StatusCode::kInvalidArgument, "Mark: no mark " + std::to_string(mark)),
                        FaultClass::kNone};
    }
    cudaError_t err = cudaEventRecord(marks_[mark], stream_);
    if (err != cudaSuccess) return CudaExecStatus("cudaEventRecord (timing mark)", err);
    return Ok();
  }

  // Valid after Synchronize: every mark has completed. Event resolution is
  // about half a microsecond.
  ExecStatus Intervals(uint64_t ns[3]) override {
    for (int i = 0; i + 1 < kTimingMarks; ++i) {
      float ms = 0;
      cudaError_t err = cudaEventElapsedTime(&ms, marks_[i], marks_[i + 1]);
      if (err != cudaSuccess) return CudaExecStatus("cudaEventElapsedTime", err);
      ns[i] = ms > 0 ? static_cast<uint64_t>(static_cast<double>(ms) * 1e6) : 0;
    }
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
  cudaEvent_t marks_[kTimingMarks] = {};
  cublasHandle_t blas_handle_ = nullptr;  // null: this stream runs the own SGEMM
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

  // On a stream of its own, synchronised before returning: a pageable
  // cudaMemcpy on the legacy stream may return before its DMA lands and does
  // not order with the instances' non-blocking streams, so a kernel could
  // read half-uploaded weights. After cudaStreamSynchronize the bytes are on
  // the device, whichever stream reads them next. Load time only.
  ExecStatus Upload(void* device_dst, const void* host_src, size_t bytes) override {
    if (bytes == 0) return Ok();
    DeviceScope scope(ordinal_);
    if (scope.error() != cudaSuccess) return CudaExecStatus("cudaSetDevice", scope.error());
    cudaStream_t stream = nullptr;
    cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (err != cudaSuccess) return CudaExecStatus("cudaStreamCreateWithFlags (upload)", err);
    err = cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream);
    const char* what = "cudaMemcpyAsync (upload)";
    if (err == cudaSuccess) {
      err = cudaStreamSynchronize(stream);
      what = "cudaStreamSynchronize (upload)";
    }
    const cudaError_t destroyed = cudaStreamDestroy(stream);
    if (err != cudaSuccess) return CudaExecStatus(what, err);
    if (destroyed != cudaSuccess) return CudaExecStatus("cudaStreamDestroy (upload)", destroyed);
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

namespace {

// Checks the device and builds it (the cache's miss path).
Result<std::shared_ptr<ExecDevice>> CreateCudaDevice(int ordinal, bool want_blas) {
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
  return std::shared_ptr<ExecDevice>(std::make_shared<CudaDevice>(ordinal, want_blas ? PickBlas() : nullptr));
}

}  // namespace

Result<std::shared_ptr<ExecDevice>> MakeCudaDevice(int ordinal, CudaBlas blas) {
  const bool want_blas = blas == CudaBlas::kAuto && !CublasDisabledByEnv();
  // Never destroyed: instance threads of executors still alive at exit may
  // hold a device during static destruction. Guarded by `mu`; creation runs
  // under it, so two executors racing to their first device probe once.
  static std::mutex mu;
  static auto* devices = new std::map<std::pair<int, bool>, std::shared_ptr<ExecDevice>>();
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(ordinal, want_blas);
  auto found = devices->find(key);
  if (found != devices->end()) return found->second;
  Result<std::shared_ptr<ExecDevice>> made = CreateCudaDevice(ordinal, want_blas);
  if (made.ok()) devices->emplace(key, made.value());
  return made;
}

}  // namespace hotpath::executor
