// The host kernel set in the device's summation order (host_device_order.h).
//
// Built with -ffp-contract=off (native/executor/CMakeLists.txt): every fused
// multiply-add here is an explicit fmaf, and nothing else may be fused.
#include "executor/host_device_order.h"

#include <cmath>
#include <cstdint>
#include <memory>

#include "executor/detail/gemm_path.h"
#include "executor/detail/kernel_checks.h"
#include "executor/detail/kernel_math.h"

namespace hotpath::executor {

namespace {

using detail::CudaGemmPath;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HOTPATH_HAVE_FMA_DISPATCH 1
#define HOTPATH_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define HOTPATH_ALWAYS_INLINE inline
#endif

// op(A)[i][p] and op(B)[p][j] of one batch.
HOTPATH_ALWAYS_INLINE float OpA(const GemmArgs& g, const float* a, int64_t i, int64_t p) {
  return g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p];
}
HOTPATH_ALWAYS_INLINE float OpB(const GemmArgs& g, const float* b, int64_t p, int64_t j) {
  return g.trans_b ? b[j * g.ldb + p] : b[p * g.ldb + j];
}

// One FMA chain over k for every element of row i (the tiled and small-m
// column kernels). Eight columns at a time: independent chains, each still
// summed in k order, so the CPU overlaps them.
HOTPATH_ALWAYS_INLINE void ChainRow(const GemmArgs& g, const float* a, const float* b, float* sums, int64_t i) {
  constexpr int64_t kColumns = 8;
  for (int64_t j0 = 0; j0 < g.n; j0 += kColumns) {
    const int64_t count = g.n - j0 < kColumns ? g.n - j0 : kColumns;
    float acc[kColumns] = {};
    for (int64_t p = 0; p < g.k; ++p) {
      const float av = OpA(g, a, i, p);
      for (int64_t q = 0; q < count; ++q) acc[q] = __builtin_fmaf(av, OpB(g, b, p, j0 + q), acc[q]);
    }
    for (int64_t q = 0; q < count; ++q) sums[j0 + q] = acc[q];
  }
}

// The row-dot kernel's order for C[i][j]: lane l's chain over p = l, l + 32,
// ..., then the butterfly (offset 16 first). Lane l < offset ends with
// lane[l] + lane[l + offset], which is what the shuffle gives lane l
// (float addition is commutative); lane 0 holds the sum.
HOTPATH_ALWAYS_INLINE float RowDot(const GemmArgs& g, const float* a, const float* b, int64_t i, int64_t j) {
  float lane[detail::kWarpLanes] = {};
  for (int64_t p0 = 0; p0 < g.k; p0 += detail::kWarpLanes) {
    const int64_t count = g.k - p0 < detail::kWarpLanes ? g.k - p0 : detail::kWarpLanes;
    for (int64_t l = 0; l < count; ++l) lane[l] = __builtin_fmaf(OpA(g, a, i, p0 + l), OpB(g, b, p0 + l, j), lane[l]);
  }
  for (int offset = detail::kWarpLanes / 2; offset > 0; offset /= 2) {
    for (int l = 0; l < offset; ++l) lane[l] = lane[l] + lane[l + offset];
  }
  return lane[0];
}

// The whole call (every batch); `g` passed CheckGemm. `sums` has room for n.
HOTPATH_ALWAYS_INLINE void GemmBody(const GemmArgs& g, float* sums) {
  const CudaGemmPath path = detail::SelectCudaGemmPath(g, false);
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    const float* a = g.a + batch * g.stride_a;
    const float* b = g.b + batch * g.stride_b;
    float* c = g.c + batch * g.stride_c;
    const int64_t bias_offset = batch * g.bias_stride;
    for (int64_t i = 0; i < g.m; ++i) {
      if (path == CudaGemmPath::kSmallMRowDot) {
        for (int64_t j = 0; j < g.n; ++j) sums[j] = RowDot(g, a, b, i, j);
      } else {
        ChainRow(g, a, b, sums, i);
      }
      for (int64_t j = 0; j < g.n; ++j) {
        c[i * g.ldc + j] = detail::GemmBiasActivation(
            g.alpha * sums[j], g, detail::BiasAt(g.bias, g.bias_kind, bias_offset, g.n, i, j));
      }
    }
  }
}

#ifdef HOTPATH_HAVE_FMA_DISPATCH
// The same body compiled for CPUs with FMA: __builtin_fmaf becomes one
// instruction instead of a libm call (identical results).
__attribute__((target("fma"))) void GemmWithFmaInstructions(const GemmArgs& g, float* sums) { GemmBody(g, sums); }
#endif

void GemmPortable(const GemmArgs& g, float* sums) { GemmBody(g, sums); }

class HostDeviceOrderSet final : public KernelSet {
 public:
  const char* name() const override { return "host-device-order"; }

  Status Gemm(const KernelContext&, const GemmArgs& args) const override {
    GemmArgs g;
    int64_t work = 0;
    Status checked = detail::CheckGemm(args, &g, &work);
    if (!checked.ok() || work == 0) return checked;
    // C may not overlap A or B (CheckGemm), so a row of sums is the only
    // scratch; one per call keeps the set stateless.
    std::unique_ptr<float[]> sums(new float[static_cast<size_t>(g.n)]);
#ifdef HOTPATH_HAVE_FMA_DISPATCH
    static const bool has_fma = __builtin_cpu_supports("fma");
    if (has_fma) {
      GemmWithFmaInstructions(g, sums.get());
      return Status::Ok();
    }
#endif
    GemmPortable(g, sums.get());
    return Status::Ok();
  }

  Status Binary(const KernelContext& ctx, const BinaryArgs& args) const override {
    return HostKernels().Binary(ctx, args);
  }
  Status Activate(const KernelContext& ctx, const ActivationArgs& args) const override {
    return HostKernels().Activate(ctx, args);
  }
  Status Softmax(const KernelContext& ctx, const SoftmaxArgs& args) const override {
    return HostKernels().Softmax(ctx, args);
  }
  Status LayerNorm(const KernelContext& ctx, const LayerNormArgs& args) const override {
    return HostKernels().LayerNorm(ctx, args);
  }
  Status ChannelAffine(const KernelContext& ctx, const ChannelAffineArgs& args) const override {
    return HostKernels().ChannelAffine(ctx, args);
  }
  Status Reduce(const KernelContext& ctx, const ReduceArgs& args) const override {
    return HostKernels().Reduce(ctx, args);
  }
  Status Gather(const KernelContext& ctx, const GatherArgs& args) const override {
    return HostKernels().Gather(ctx, args);
  }
  Status Transpose(const KernelContext& ctx, const TransposeArgs& args) const override {
    return HostKernels().Transpose(ctx, args);
  }
  Status Copy2D(const KernelContext& ctx, const Copy2DArgs& args) const override {
    return HostKernels().Copy2D(ctx, args);
  }
  Status Cast(const KernelContext& ctx, const CastArgs& args) const override {
    return HostKernels().Cast(ctx, args);
  }
};

}  // namespace

const KernelSet& HostDeviceOrderKernels() {
  static const HostDeviceOrderSet set;
  return set;
}

std::shared_ptr<ExecDevice> HostDeviceOrderDevice() {
  static const std::shared_ptr<ExecDevice> device = MakeHostDevice(HostDeviceOrderKernels());
  return device;
}

}  // namespace hotpath::executor
