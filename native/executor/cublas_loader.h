// cuBLAS, loaded at run time with dlopen when the machine has it. The build
// machines have cudart only (no cuBLAS headers or libraries), so the few
// types, enum values and function signatures used here are declared from
// the public cuBLAS API documentation instead of included.
//
// Where it looks, first hit wins (a library missing a needed symbol is
// skipped):
//   1. HOTPATH_CUBLAS_PATH: a ':'-separated list of library files or
//      directories holding libcublas.so.13 / libcublas.so.12;
//   2. libcublas.so.13, then libcublas.so.12, through the dynamic loader's
//      own search (LD_LIBRARY_PATH, the ld.so cache, rpath);
//   3. /usr/local/cuda/lib64, and the Python wheels' layouts
//      (`nvidia-cublas`, `nvidia-cublas-cu12`):
//      <prefix>/lib/python3.*/{site,dist}-packages/nvidia/{cublas,cu13}/lib/
//      for prefix in $VIRTUAL_ENV, $CONDA_PREFIX, /usr, /usr/local,
//      /opt/conda.
// HOTPATH_CUBLAS=off (also 0, false, no) makes MakeCudaDevice skip cuBLAS
// altogether and use the own SGEMM (cuda_device.cu reads it once per
// process, at the first MakeCudaDevice; CudaBlas::kOff asks for the same
// explicitly, without touching the environment).
//
// The library is loaded once per process and never unloaded (handles may
// outlive any one device). Thread-safety: LoadCublas may be called from any
// thread; the returned table is immutable.
#pragma once

#include <string>

#include "common/result.h"

namespace hotpath::executor {

// The public cuBLAS ABI, as documented (cublas_api.h).
struct cublasContext;
using cublasHandle_t = cublasContext*;
using cublasStatus_t = int;
inline constexpr cublasStatus_t kCublasStatusSuccess = 0;
inline constexpr cublasStatus_t kCublasStatusNotInitialized = 1;
inline constexpr cublasStatus_t kCublasStatusAllocFailed = 3;
inline constexpr cublasStatus_t kCublasStatusInvalidValue = 7;
inline constexpr cublasStatus_t kCublasStatusArchMismatch = 8;
inline constexpr cublasStatus_t kCublasStatusMappingError = 11;
inline constexpr cublasStatus_t kCublasStatusExecutionFailed = 13;
inline constexpr cublasStatus_t kCublasStatusInternalError = 14;
inline constexpr cublasStatus_t kCublasStatusNotSupported = 15;
inline constexpr cublasStatus_t kCublasStatusLicenseError = 16;
using cublasOperation_t = int;
inline constexpr cublasOperation_t kCublasOpN = 0;
inline constexpr cublasOperation_t kCublasOpT = 1;
using cublasMath_t = int;
// FP32 math exactly as requested: no TF32 tensor cores, no reduced-precision
// reductions.
inline constexpr cublasMath_t kCublasPedanticMath = 2;

struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t* handle) = nullptr;                   // cublasCreate_v2
  cublasStatus_t (*destroy)(cublasHandle_t handle) = nullptr;                   // cublasDestroy_v2
  cublasStatus_t (*set_stream)(cublasHandle_t handle, void* stream) = nullptr;  // cublasSetStream_v2
  cublasStatus_t (*set_math_mode)(cublasHandle_t handle, cublasMath_t mode) = nullptr;  // cublasSetMathMode
  // cublasSgemmStridedBatched (column-major).
  cublasStatus_t (*sgemm_strided_batched)(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const float* alpha, const float* a, int lda,
                                          long long stride_a, const float* b, int ldb,
                                          long long stride_b, const float* beta, float* c, int ldc,
                                          long long stride_c, int batch_count) = nullptr;
  std::string library;  // the path or name that was loaded, for logs
};

// How a failed cuBLAS call is handled (cuda_gemm.cu). kPermanent: the call
// would fail the same way every time on this handle and device (a rejected
// argument or shape, an unsupported architecture or feature, a bad handle,
// no licence) and cuBLAS launched nothing, so the own SGEMM computes it
// instead; the device is fine. kTransient: it may work next time (workspace
// allocation, a kernel that failed to launch, an internal error, unknown
// statuses): the batch fails as a transient device fault and runs on CPU.
// A sticky CUDA error behind either is checked separately (cudaGetLastError).
enum class CublasFailure { kPermanent, kTransient };
inline CublasFailure ClassifyCublasStatus(cublasStatus_t status) {
  switch (status) {
    case kCublasStatusNotInitialized:
    case kCublasStatusInvalidValue:
    case kCublasStatusArchMismatch:
    case kCublasStatusNotSupported:
    case kCublasStatusLicenseError:
      return CublasFailure::kPermanent;
    default:
      return CublasFailure::kTransient;
  }
}

// The process's cuBLAS, loading it on first use. UNAVAILABLE listing what
// was tried when none loads (the caller then uses its own SGEMM).
Result<const CublasApi*> LoadCublas();

// "CUBLAS_STATUS_ALLOC_FAILED", ...; "CUBLAS_STATUS_<n>" for unknown values.
std::string CublasStatusName(cublasStatus_t status);

}  // namespace hotpath::executor
