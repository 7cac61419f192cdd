// Which CUDA Gemm kernel runs a call, as a pure function of its shape, so the
// choice is tested on CPU (gemm_device_order_test) and the host device-order
// kernel set (host_device_order.h) can reproduce the device's summation
// order exactly. CUDA-free: included by cuda_gemm.cu and by host code.
//
//   kCublas        cuBLAS (cublasSgemmStridedBatched + epilogue) whenever the
//                  stream has a handle and every size fits an int;
//   kSmallMRowDot  op(B) stored N x K (transB, what torch exports): one warp
//                  per output column j; lane l sums p = l, l + 32, ... as one
//                  FMA chain per row of A, then a xor-butterfly over the 32
//                  lanes (offsets 16, 8, 4, 2, 1);
//   kSmallMColumn  op(B) stored K x N: one thread per output column, every
//                  row of A, one FMA chain over k (the tiled order);
//   kTiled         the 64 x 64 tiled SGEMM: one FMA chain over k per element.
//
// Why a small-m path: with m <= 16 a 64-row tile wastes at least 75% of its
// multiply-adds (98% at m = 1) and n = 1024 gives 16 blocks for 132 SMs; the
// row-dot kernel reads each weight once, coalesced, with 8 warps per block
// and n / 8 blocks.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <limits>

#include "executor/kernels.h"

namespace hotpath::executor::detail {

enum class CudaGemmPath : int32_t { kCublas, kSmallMRowDot, kSmallMColumn, kTiled };

inline constexpr int64_t kSmallMMaxRows = 16;  // m at or below this takes a small-m kernel
inline constexpr int kWarpLanes = 32;
inline constexpr int kRowDotWarpsPerBlock = 8;
inline constexpr int kColumnThreadsPerBlock = 128;

inline const char* CudaGemmPathName(CudaGemmPath path) {
  switch (path) {
    case CudaGemmPath::kCublas:
      return "cublas";
    case CudaGemmPath::kSmallMRowDot:
      return "small-m row-dot";
    case CudaGemmPath::kSmallMColumn:
      return "small-m column";
    case CudaGemmPath::kTiled:
      return "tiled";
  }
  return "?";
}

inline bool FitsCublasInt(int64_t value) { return value >= 0 && value <= std::numeric_limits<int>::max(); }

// `g` has passed CheckGemm (leading dimensions resolved). `have_blas`: the
// kernel set has cuBLAS and the calling stream a handle.
inline CudaGemmPath SelectCudaGemmPath(const GemmArgs& g, bool have_blas) {
  // k == 0 (C is the epilogue alone) takes the own kernels, which handle it.
  if (have_blas && g.k > 0 && FitsCublasInt(g.m) && FitsCublasInt(g.n) && FitsCublasInt(g.k) &&
      FitsCublasInt(g.lda) && FitsCublasInt(g.ldb) && FitsCublasInt(g.ldc) && FitsCublasInt(g.batch)) {
    return CudaGemmPath::kCublas;
  }
  // A transposed A is strided along k: the small-m kernels would read it
  // uncoalesced, so it stays on the tiled kernel (which stages it).
  if (g.m <= kSmallMMaxRows && g.k > 0 && !g.trans_a) {
    return g.trans_b ? CudaGemmPath::kSmallMRowDot : CudaGemmPath::kSmallMColumn;
  }
  return CudaGemmPath::kTiled;
}

}  // namespace hotpath::executor::detail
