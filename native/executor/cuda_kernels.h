// The CUDA kernel set (internal to native/executor; CUDA builds only).
//
//   cuda_kernels.cu  the KernelSet and every kernel but Gemm's
//   cuda_gemm.cu     Gemm: the own kernels (small-m for m <= 16, the tiled
//                    SGEMM above; detail/gemm_path.h) with their fused
//                    epilogue, and the cuBLAS path (cublasSgemmStridedBatched,
//                    then the bias/activation epilogue kernel; a permanent
//                    cuBLAS refusal falls back to the own kernels)
//
// FP32 only: plain FFMA, no TF32 or tensor cores, built without fast math.
// Every launch goes on the context's stream and is checked with
// cudaGetLastError; errors follow kernels.h (UNAVAILABLE transient,
// INTERNAL sticky).
//
// Thread-safety: the set is immutable; calls from different threads use
// their own stream (KernelContext).
#pragma once

#include <memory>

#include "common/status.h"
#include "executor/cublas_loader.h"
#include "executor/kernels.h"

namespace hotpath::executor {

// The CUDA set. With `blas` (process lifetime, may be null) its name is
// "cuda+cublas" and Gemm runs cuBLAS whenever the context carries a handle
// and the sizes fit cuBLAS's int parameters (a stream whose handle could not
// be created runs the own kernels); otherwise "cuda", own kernels.
std::unique_ptr<KernelSet> MakeCudaKernelSet(const CublasApi* blas);

// Checks that this device can run the kernels (cudaFuncGetAttributes; e.g.
// cudaErrorNoKernelImageForDevice on an architecture the build has neither
// SASS nor PTX for). Call with the device current.
Status ProbeCudaKernels();

namespace detail {

// Gemm on CUDA (cuda_gemm.cu). `args` must have passed CheckGemm (resolved
// leading dimensions, work > 0).
Status CudaGemm(const KernelContext& ctx, const GemmArgs& args, const CublasApi* blas);
// cudaFuncGetAttributes on the SGEMM kernel.
Status ProbeGemmKernels();

}  // namespace detail
}  // namespace hotpath::executor
