// Gemm on CUDA: the own tiled SGEMM and the small-m kernels, each with a
// fused bias + activation epilogue, and the cuBLAS path. Which one runs is
// detail::SelectCudaGemmPath (gemm_path.h), a pure function of the shape
// that the host device-order set reproduces. See cuda_kernels.h.
//
// Every sum is written with fmaf so its order and rounding are exactly what
// gemm_path.h documents (and host_device_order.cc emulates), whatever nvcc's
// contraction choices.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "executor/cuda_kernels.h"
#include "executor/detail/cuda_status.h"
#include "executor/detail/gemm_path.h"
#include "executor/detail/kernel_math.h"

namespace hotpath::executor::detail {

namespace {

// Block tile 64 x 64 of C, k in steps of 16. 256 threads as 16 x 16; thread
// (tx, ty) owns the 4 x 4 elements at rows ty + 16 i and columns tx + 16 j of
// the tile, so a warp's stores to C are 16 consecutive floats per row
// (coalesced) and its shared-memory reads are broadcasts or consecutive.
constexpr int kTileM = 64;
constexpr int kTileN = 64;
constexpr int kTileK = 16;
constexpr int kThreadsX = 16;
constexpr int kThreadsY = 16;
constexpr int kGemmThreads = kThreadsX * kThreadsY;
constexpr int kMicro = 4;  // kTileM / kThreadsY == kTileN / kThreadsX
// Padding of a shared row. The transposing stores (a transposed operand's
// k-major walk) put a warp's 32 threads on 16 k rows x 2 columns: with a row
// stride of 64 + 2 floats their banks are 2 kk + r, all 32 distinct (with
// + 4 they were 4 kk + r mod 32: 2-way conflicts).
constexpr int kPad = 2;
constexpr int64_t kMaxGridYZ = 65535;

// C = act(alpha * op(A) @ op(B) + beta * bias) for every batch. Tiles and
// batches are walked grid-stride (grid y and z are limited to 65535), so any
// m, n and batch run. Out-of-range elements of edge tiles load as zeros and
// are not stored. Each thread sums its k terms in order as one FMA chain
// starting from 0 (the zero padding of a partial k tile adds exactly 0).
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kGemmThreads) SgemmKernel(GemmArgs g) {
  __shared__ float a_tile[kTileK][kTileM + kPad];
  __shared__ float b_tile[kTileK][kTileN + kPad];
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % kThreadsX;
  const int ty = tid / kThreadsX;
  const int64_t tiles_m = (g.m + kTileM - 1) / kTileM;
  const int64_t tiles_n = (g.n + kTileN - 1) / kTileN;

  for (int64_t batch = blockIdx.z; batch < g.batch; batch += gridDim.z) {
    const float* a = g.a + batch * g.stride_a;
    const float* b = g.b + batch * g.stride_b;
    float* c = g.c + batch * g.stride_c;
    const int64_t bias_offset = batch * g.bias_stride;
    for (int64_t tile_m = blockIdx.y; tile_m < tiles_m; tile_m += gridDim.y) {
      for (int64_t tile_n = blockIdx.x; tile_n < tiles_n; tile_n += gridDim.x) {
        const int64_t row0 = tile_m * kTileM;
        const int64_t col0 = tile_n * kTileN;
        float acc[kMicro][kMicro];
#pragma unroll
        for (int i = 0; i < kMicro; ++i) {
#pragma unroll
          for (int j = 0; j < kMicro; ++j) acc[i][j] = 0.0f;
        }

        for (int64_t k0 = 0; k0 < g.k; k0 += kTileK) {
          // Stage op(A)[row0:+64, k0:+16] as a_tile[k][m]; consecutive
          // threads walk the operand's contiguous dimension.
          for (int e = tid; e < kTileM * kTileK; e += kGemmThreads) {
            const int r = kTransA ? e % kTileM : e / kTileK;
            const int kk = kTransA ? e / kTileM : e % kTileK;
            const int64_t gr = row0 + r;
            const int64_t gk = k0 + kk;
            float v = 0.0f;
            if (gr < g.m && gk < g.k) v = kTransA ? a[gk * g.lda + gr] : a[gr * g.lda + gk];
            a_tile[kk][r] = v;
          }
          // Stage op(B)[k0:+16, col0:+64] as b_tile[k][n].
          for (int e = tid; e < kTileK * kTileN; e += kGemmThreads) {
            const int kk = kTransB ? e % kTileK : e / kTileN;
            const int cc = kTransB ? e / kTileK : e % kTileN;
            const int64_t gk = k0 + kk;
            const int64_t gc = col0 + cc;
            float v = 0.0f;
            if (gk < g.k && gc < g.n) v = kTransB ? b[gc * g.ldb + gk] : b[gk * g.ldb + gc];
            b_tile[kk][cc] = v;
          }
          __syncthreads();
#pragma unroll
          for (int kk = 0; kk < kTileK; ++kk) {
            float av[kMicro];
            float bv[kMicro];
#pragma unroll
            for (int i = 0; i < kMicro; ++i) av[i] = a_tile[kk][ty + kThreadsY * i];
#pragma unroll
            for (int j = 0; j < kMicro; ++j) bv[j] = b_tile[kk][tx + kThreadsX * j];
#pragma unroll
            for (int i = 0; i < kMicro; ++i) {
#pragma unroll
              for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
          }
          __syncthreads();  // the tiles are overwritten by the next step
        }

#pragma unroll
        for (int i = 0; i < kMicro; ++i) {
          const int64_t r = row0 + ty + kThreadsY * i;
          if (r >= g.m) continue;
#pragma unroll
          for (int j = 0; j < kMicro; ++j) {
            const int64_t col = col0 + tx + kThreadsX * j;
            if (col >= g.n) continue;
            c[r * g.ldc + col] = GemmBiasActivation(
                g.alpha * acc[i][j], g, BiasAt(g.bias, g.bias_kind, bias_offset, g.n, r, col));
          }
        }
      }
    }
  }
}

// Small m, op(B) stored N x K (transB): warp w of the block computes output
// column j = blockIdx.x * 8 + w for every row i < m. Lane l sums the terms
// p = l, l + 32, ... as one FMA chain per row (A's row and B's row j are read
// coalesced, each weight once), then the 32 partial sums are added by a
// xor-butterfly (offsets 16, 8, 4, 2, 1); lane 0 stores. The column loop is
// uniform per warp, so the full-mask shuffles are safe.
__global__ void __launch_bounds__(kRowDotWarpsPerBlock * kWarpLanes) SmallMRowDotKernel(GemmArgs g) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  const int warp = static_cast<int>(threadIdx.x) / kWarpLanes;
  for (int64_t batch = blockIdx.y; batch < g.batch; batch += gridDim.y) {
    const float* a = g.a + batch * g.stride_a;
    const float* b = g.b + batch * g.stride_b;
    float* c = g.c + batch * g.stride_c;
    const int64_t bias_offset = batch * g.bias_stride;
    for (int64_t col = static_cast<int64_t>(blockIdx.x) * kRowDotWarpsPerBlock + warp; col < g.n;
         col += static_cast<int64_t>(gridDim.x) * kRowDotWarpsPerBlock) {
      const float* b_row = b + col * g.ldb;
      float acc[kSmallMMaxRows];
#pragma unroll
      for (int i = 0; i < kSmallMMaxRows; ++i) acc[i] = 0.0f;
      for (int64_t p = lane; p < g.k; p += kWarpLanes) {
        const float bv = b_row[p];
#pragma unroll
        for (int i = 0; i < kSmallMMaxRows; ++i) {
          if (i < g.m) acc[i] = fmaf(a[i * g.lda + p], bv, acc[i]);
        }
      }
#pragma unroll
      for (int i = 0; i < kSmallMMaxRows; ++i) {
        if (i < g.m) {  // uniform across the warp: the shuffles see every lane
          float sum = acc[i];
          for (int offset = kWarpLanes / 2; offset > 0; offset /= 2) {
            sum += __shfl_xor_sync(0xffffffffu, sum, offset);
          }
          if (lane == 0) {
            c[i * g.ldc + col] =
                GemmBiasActivation(g.alpha * sum, g, BiasAt(g.bias, g.bias_kind, bias_offset, g.n, i, col));
          }
        }
      }
    }
  }
}

// Small m, op(B) stored K x N: thread t of the block computes output column
// j = blockIdx.x * 128 + t for every row i < m, each as one FMA chain over k
// (the tiled kernel's order). B's row p is read coalesced across the block;
// A's elements are the same address for every thread (broadcast).
__global__ void __launch_bounds__(kColumnThreadsPerBlock) SmallMColumnKernel(GemmArgs g) {
  for (int64_t batch = blockIdx.y; batch < g.batch; batch += gridDim.y) {
    const float* a = g.a + batch * g.stride_a;
    const float* b = g.b + batch * g.stride_b;
    float* c = g.c + batch * g.stride_c;
    const int64_t bias_offset = batch * g.bias_stride;
    for (int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnThreadsPerBlock + threadIdx.x; col < g.n;
         col += static_cast<int64_t>(gridDim.x) * kColumnThreadsPerBlock) {
      float acc[kSmallMMaxRows];
#pragma unroll
      for (int i = 0; i < kSmallMMaxRows; ++i) acc[i] = 0.0f;
      for (int64_t p = 0; p < g.k; ++p) {
        const float bv = b[p * g.ldb + col];
#pragma unroll
        for (int i = 0; i < kSmallMMaxRows; ++i) {
          if (i < g.m) acc[i] = fmaf(a[i * g.lda + p], bv, acc[i]);
        }
      }
#pragma unroll
      for (int i = 0; i < kSmallMMaxRows; ++i) {
        if (i < g.m) {
          c[i * g.ldc + col] =
              GemmBiasActivation(g.alpha * acc[i], g, BiasAt(g.bias, g.bias_kind, bias_offset, g.n, i, col));
        }
      }
    }
  }
}

// The cuBLAS path's epilogue: C already holds alpha * op(A) @ op(B); adds
// beta * bias and applies the activation, one thread per element.
__global__ void GemmEpilogueKernel(GemmArgs g, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t col = i % g.n;
    const int64_t rest = i / g.n;
    const int64_t r = rest % g.m;
    const int64_t batch = rest / g.m;
    float* c = g.c + batch * g.stride_c + r * g.ldc + col;
    *c = GemmBiasActivation(*c, g, BiasAt(g.bias, g.bias_kind, batch * g.bias_stride, g.n, r, col));
  }
}

Status LaunchTiled(cudaStream_t stream, const GemmArgs& g) {
  const int64_t tiles_m = (g.m + kTileM - 1) / kTileM;
  const int64_t tiles_n = (g.n + kTileN - 1) / kTileN;
  dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles_n, std::numeric_limits<int32_t>::max())),
            static_cast<unsigned>(std::min(tiles_m, kMaxGridYZ)),
            static_cast<unsigned>(std::min(g.batch, kMaxGridYZ)));
  if (!g.trans_a && !g.trans_b) {
    SgemmKernel<false, false><<<grid, kGemmThreads, 0, stream>>>(g);
  } else if (!g.trans_a && g.trans_b) {
    SgemmKernel<false, true><<<grid, kGemmThreads, 0, stream>>>(g);
  } else if (g.trans_a && !g.trans_b) {
    SgemmKernel<true, false><<<grid, kGemmThreads, 0, stream>>>(g);
  } else {
    SgemmKernel<true, true><<<grid, kGemmThreads, 0, stream>>>(g);
  }
  return CheckLaunch("SgemmKernel");
}

// Grid y walks the batch (grid-stride past 65535); grid x the columns.
Status LaunchSmallM(cudaStream_t stream, const GemmArgs& g, CudaGemmPath path) {
  const unsigned batches = static_cast<unsigned>(std::min(g.batch, kMaxGridYZ));
  const int64_t per_block = path == CudaGemmPath::kSmallMRowDot ? kRowDotWarpsPerBlock : kColumnThreadsPerBlock;
  const int64_t blocks = std::min<int64_t>((g.n + per_block - 1) / per_block, std::numeric_limits<int32_t>::max());
  const dim3 grid(static_cast<unsigned>(blocks), batches);
  if (path == CudaGemmPath::kSmallMRowDot) {
    SmallMRowDotKernel<<<grid, kRowDotWarpsPerBlock * kWarpLanes, 0, stream>>>(g);
    return CheckLaunch("SmallMRowDotKernel");
  }
  SmallMColumnKernel<<<grid, kColumnThreadsPerBlock, 0, stream>>>(g);
  return CheckLaunch("SmallMColumnKernel");
}

// The own kernels: small-m or tiled by shape (SelectCudaGemmPath without cuBLAS).
Status LaunchOwn(cudaStream_t stream, const GemmArgs& g) {
  const CudaGemmPath path = SelectCudaGemmPath(g, false);
  if (path == CudaGemmPath::kTiled) return LaunchTiled(stream, g);
  return LaunchSmallM(stream, g, path);
}

// cuBLAS is column-major. Row-major C (m x n, ldc) is column-major C^T, and
// C^T = op(B)^T @ op(A)^T, where a row-major operand read column-major is
// already its transpose: so B goes first with B's own flag, then A, and m/n
// swap. alpha goes in, beta is 0 (C is only written, so stale NaNs in C
// cannot leak in); the bias and activation follow in the epilogue kernel.
//
// A failed call is classified: a sticky CUDA error behind it is the
// device's fault (INTERNAL, kSticky; the executor also re-checks with a
// synchronize). Otherwise ClassifyCublasStatus decides: a permanent status
// (NOT_SUPPORTED, INVALID_VALUE, ARCH_MISMATCH...: this call fails the same
// way every time, and cuBLAS launched nothing) sets *permanent so the caller
// runs the own kernels instead; a transient one (ALLOC_FAILED,
// EXECUTION_FAILED, INTERNAL_ERROR, unknown) is UNAVAILABLE, a transient
// device failure of this batch, which runs on CPU.
Status LaunchCublas(cudaStream_t stream, cublasHandle_t handle, const CublasApi& blas,
                    const GemmArgs& g, bool* permanent) {
  *permanent = false;
  const float zero = 0.0f;
  cublasStatus_t status = blas.sgemm_strided_batched(
      handle, g.trans_b ? kCublasOpT : kCublasOpN, g.trans_a ? kCublasOpT : kCublasOpN,
      static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &g.alpha, g.b,
      static_cast<int>(g.ldb), g.stride_b, g.a, static_cast<int>(g.lda), g.stride_a, &zero, g.c,
      static_cast<int>(g.ldc), g.stride_c, static_cast<int>(g.batch));
  if (status != kCublasStatusSuccess) {
    cudaError_t cuda_err = cudaGetLastError();
    std::string what = "cublasSgemmStridedBatched: " + CublasStatusName(status);
    if (ClassifyCudaError(cuda_err) == FaultClass::kSticky) return CudaStatus(what, cuda_err);
    if (ClassifyCublasStatus(status) == CublasFailure::kPermanent) {
      *permanent = true;
      return Status(StatusCode::kFailedPrecondition, what);
    }
    return Status(StatusCode::kUnavailable, what);
  }
  if (g.bias_kind == BiasKind::kNone && g.activation.kind == Activation::kNone) return Status::Ok();
  const int64_t count = g.batch * g.m * g.n;
  const int64_t blocks = std::min<int64_t>((count + 255) / 256, int64_t{1} << 20);
  GemmEpilogueKernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(g, count);
  return CheckLaunch("GemmEpilogueKernel");
}

}  // namespace

Status CudaGemm(const KernelContext& ctx, const GemmArgs& g, const CublasApi* blas) {
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  // A stream without a handle (its CreateBlasHandle failed) runs the own kernels.
  const bool have_blas = blas != nullptr && ctx.blas_handle != nullptr;
  if (SelectCudaGemmPath(g, have_blas) == CudaGemmPath::kCublas) {
    bool permanent = false;
    Status ran = LaunchCublas(stream, static_cast<cublasHandle_t>(ctx.blas_handle), *blas, g, &permanent);
    // cuBLAS refused this call for good and launched nothing: the own
    // kernels compute the same product (C is only written, never read).
    if (!permanent) return ran;
  }
  return LaunchOwn(stream, g);
}

Status ProbeGemmKernels() {
  cudaFuncAttributes attributes{};
  cudaError_t err = cudaFuncGetAttributes(&attributes, SgemmKernel<false, false>);
  if (err != cudaSuccess) return CudaStatus("cudaFuncGetAttributes(SgemmKernel)", err);
  err = cudaFuncGetAttributes(&attributes, SmallMRowDotKernel);
  if (err != cudaSuccess) return CudaStatus("cudaFuncGetAttributes(SmallMRowDotKernel)", err);
  return Status::Ok();
}

}  // namespace hotpath::executor::detail
