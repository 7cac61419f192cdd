// CPU test (label "unit") of what the device's Gemm depends on but a CPU can
// check (issue 22):
//   - SelectCudaGemmPath: which kernel each shape gets (cuBLAS, the small-m
//     row-dot and column kernels, the tiled SGEMM);
//   - the host device-order set (host_device_order.h) against sums written
//     here independently: one fmaf chain for the tiled/column order, and for
//     the row-dot order the 32 lane chains reduced by a recursive halving
//     tree (the butterfly's shape, stated another way), bit for bit, with
//     the fused epilogue;
//   - the same set against the reference HostKernels() within the device
//     tolerance (tolerance.h) on random shapes: batches, strides, biases,
//     activations, transposes, k not a multiple of 32;
//   - ClassifyCublasStatus and the tolerance helper itself (NaN, inf, the
//     rms term, a readable message).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "executor/cublas_loader.h"
#include "executor/detail/gemm_path.h"
#include "executor/host_device_order.h"
#include "executor/kernels.h"
#include "executor/tolerance.h"
#include "tests/check.h"

namespace hotpath::executor {
namespace {

using detail::CudaGemmPath;
using detail::SelectCudaGemmPath;
using test::Checker;

const KernelContext kCtx{};

std::vector<float> Random(size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

GemmArgs Shape(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b) {
  GemmArgs g;
  g.m = m, g.n = n, g.k = k;
  g.trans_a = trans_a, g.trans_b = trans_b;
  g.lda = trans_a ? m : k;
  g.ldb = trans_b ? k : n;
  g.ldc = n;
  return g;
}

void TestSelection(Checker& check) {
  auto path = [](const GemmArgs& g, bool blas) { return std::string(CudaGemmPathName(SelectCudaGemmPath(g, blas))); };
  check.Equal(path(Shape(1, 1024, 1024, false, true), true), std::string("cublas"), "cuBLAS first when present");
  check.Equal(path(Shape(1, 1024, 0, false, true), true), std::string("tiled"),
              "k == 0 (the epilogue alone) goes to neither cuBLAS nor small-m");
  GemmArgs huge = Shape(1, 4, 8, false, true);
  huge.batch = int64_t{1} << 32;
  check.Equal(path(huge, true), std::string("small-m row-dot"), "a batch past INT_MAX cannot go to cuBLAS");
  check.Equal(path(Shape(1, 1024, 1024, false, true), false), std::string("small-m row-dot"), "m 1, transB");
  check.Equal(path(Shape(detail::kSmallMMaxRows, 1024, 1024, false, true), false), std::string("small-m row-dot"),
              "m at the small-m limit");
  check.Equal(path(Shape(detail::kSmallMMaxRows + 1, 1024, 1024, false, true), false), std::string("tiled"),
              "m past the small-m limit");
  check.Equal(path(Shape(4, 64, 256, false, false), false), std::string("small-m column"), "m 4, B stored K x N");
  check.Equal(path(Shape(1, 64, 256, true, true), false), std::string("tiled"), "transposed A stays tiled");
  check.Equal(path(Shape(256, 1024, 1024, false, true), false), std::string("tiled"), "batch 256: tiled");
}

// C = act(alpha * sum + beta * bias) with the sums computed here.
struct Case {
  GemmArgs g;
  std::vector<float> a, b, bias;
};

Case MakeCase(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, std::mt19937& rng) {
  Case c;
  c.g = Shape(m, n, k, trans_a, trans_b);
  c.a = Random(static_cast<size_t>(m * k), rng);
  c.b = Random(static_cast<size_t>(n * k), rng);
  c.bias = Random(static_cast<size_t>(n), rng);
  c.g.alpha = 0.75f;
  c.g.beta = 1.25f;
  c.g.bias_kind = BiasKind::kRow;
  c.g.activation.kind = Activation::kLeakyRelu;
  return c;
}

float At(const Case& c, bool is_a, int64_t row, int64_t p) {
  const GemmArgs& g = c.g;
  if (is_a) return g.trans_a ? c.a[static_cast<size_t>(p * g.lda + row)] : c.a[static_cast<size_t>(row * g.lda + p)];
  return g.trans_b ? c.b[static_cast<size_t>(row * g.ldb + p)] : c.b[static_cast<size_t>(p * g.ldb + row)];
}

// The 32 lanes' chains reduced by halving: R(start, stride) = R(start, 2s) +
// R(start + s, 2s), R(l, 32) = lane l. Lane 0 after the butterfly 16, 8, 4,
// 2, 1 is exactly R(0, 1).
float Halving(const std::vector<float>& lanes, int start, int stride) {
  if (stride == 32) return lanes[static_cast<size_t>(start)];
  return Halving(lanes, start, stride * 2) + Halving(lanes, start + stride, stride * 2);
}

std::vector<float> Expected(const Case& c) {
  const GemmArgs& g = c.g;
  const bool row_dot = SelectCudaGemmPath(g, false) == CudaGemmPath::kSmallMRowDot;
  std::vector<float> out(static_cast<size_t>(g.m * g.n));
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      float sum = 0.0f;
      if (row_dot) {
        std::vector<float> lanes(32, 0.0f);
        for (int64_t p = 0; p < g.k; ++p) {
          float& lane = lanes[static_cast<size_t>(p % 32)];
          lane = std::fma(At(c, true, i, p), At(c, false, j, p), lane);
        }
        sum = Halving(lanes, 0, 1);
      } else {
        for (int64_t p = 0; p < g.k; ++p) sum = std::fma(At(c, true, i, p), At(c, false, j, p), sum);
      }
      const float scaled = g.alpha * sum;
      const float biased = std::fma(g.beta, c.bias[static_cast<size_t>(j)], scaled);
      out[static_cast<size_t>(i * g.n + j)] = biased < 0.0f ? g.activation.alpha * biased : biased;
    }
  }
  return out;
}

std::vector<float> Run(const KernelSet& kernels, const Case& c) {
  GemmArgs g = c.g;
  std::vector<float> out(static_cast<size_t>(g.m * g.n), -7.0f);
  g.a = c.a.data(), g.b = c.b.data(), g.bias = c.bias.data(), g.c = out.data();
  Status ran = kernels.Gemm(kCtx, g);
  if (!ran.ok()) std::fprintf(stderr, "Gemm failed: %s\n", ran.ToString().c_str());
  return out;
}

void TestDeviceOrderExact(Checker& check) {
  std::mt19937 rng(22);
  struct S {
    int64_t m, n, k;
    bool ta, tb;
  };
  // Row-dot (m <= 16, transB), column (m <= 16, B K x N), tiled (m > 16 or
  // transposed A); k below, at and past multiples of 32.
  const S shapes[] = {{1, 9, 1, false, true},   {1, 33, 31, false, true}, {7, 5, 100, false, true},
                      {16, 3, 64, false, true}, {3, 10, 33, false, false}, {17, 6, 70, false, true},
                      {5, 4, 45, true, true},   {20, 7, 19, true, false}};
  for (const S& s : shapes) {
    const Case c = MakeCase(s.m, s.n, s.k, s.ta, s.tb, rng);
    const std::string what = "device order m " + std::to_string(s.m) + " n " + std::to_string(s.n) + " k " +
                             std::to_string(s.k) + (s.ta ? " transA" : "") + (s.tb ? " transB" : "") + " (" +
                             CudaGemmPathName(SelectCudaGemmPath(c.g, false)) + ")";
    const std::vector<float> got = Run(HostDeviceOrderKernels(), c);
    const std::vector<float> want = Expected(c);
    size_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i] ? 1 : 0;
    check.Equal(differ, size_t{0}, what + ": elements not bit-identical to the order written here");
  }
  check.Equal(std::string(HostDeviceOrderKernels().name()), std::string("host-device-order"), "set name");
  check.Equal(std::string(HostDeviceOrderDevice()->kind()), std::string("host"), "device kind");
}

// Against the reference set within the device tolerance, with batches and
// broadcast operands.
void TestAgainstReference(Checker& check) {
  std::mt19937 rng(2201);
  struct S {
    int64_t m, n, k, batch;
    bool ta, tb;
  };
  const S shapes[] = {{1, 256, 1024, 1, false, true},  {7, 64, 1024, 2, false, true}, {16, 40, 257, 3, false, false},
                      {64, 96, 1024, 1, false, true},  {33, 17, 300, 2, true, false}, {1, 1, 4096, 1, false, true}};
  for (const S& s : shapes) {
    Case c = MakeCase(s.m, s.n, s.k, s.ta, s.tb, rng);
    c.a = Random(static_cast<size_t>(s.m * s.k * s.batch), rng);
    c.g.batch = s.batch;
    c.g.stride_a = s.m * s.k;
    c.g.stride_b = 0;  // the weights broadcast over the batch
    c.g.stride_c = s.m * s.n;
    c.g.activation.kind = Activation::kNone;
    GemmArgs g = c.g;
    std::vector<float> device(static_cast<size_t>(s.m * s.n * s.batch));
    std::vector<float> host(device.size());
    g.a = c.a.data(), g.b = c.b.data(), g.bias = c.bias.data();
    g.c = device.data();
    check.True(HostDeviceOrderKernels().Gemm(kCtx, g).ok(), "device-order Gemm runs");
    g.c = host.data();
    check.True(HostKernels().Gemm(kCtx, g).ok(), "reference Gemm runs");
    const FloatComparison r = CompareFloats(device.data(), host.data(), device.size(), kDeviceRtol);
    const std::string what = "m " + std::to_string(s.m) + " n " + std::to_string(s.n) + " k " +
                             std::to_string(s.k) + " batch " + std::to_string(s.batch);
    check.True(r.ok(), what + ": " + DescribeComparison(r));
    std::printf("%s (%s): max |d - h| %s, %s of the allowed difference\n", what.c_str(),
                CudaGemmPathName(SelectCudaGemmPath(g, false)), FormatNumber(r.max_abs).c_str(),
                FormatNumber(r.max_ratio).c_str());
  }
}

void TestCublasClassification(Checker& check) {
  for (cublasStatus_t s : {kCublasStatusNotInitialized, kCublasStatusInvalidValue, kCublasStatusArchMismatch,
                           kCublasStatusNotSupported, kCublasStatusLicenseError}) {
    check.True(ClassifyCublasStatus(s) == CublasFailure::kPermanent, "cuBLAS status " + std::to_string(s) + " is permanent");
  }
  for (cublasStatus_t s : {kCublasStatusAllocFailed, kCublasStatusMappingError, kCublasStatusExecutionFailed,
                           kCublasStatusInternalError, 99}) {
    check.True(ClassifyCublasStatus(s) == CublasFailure::kTransient, "cuBLAS status " + std::to_string(s) + " is transient");
  }
}

void TestTolerance(Checker& check) {
  // rms of {3, 4, 0.001} is ~2.89: the element near 0 gets the rms's slack
  // (1e-5 * 2.89), far more than 1e-5 of itself.
  const float want[] = {3.0f, 4.0f, 0.001f};
  const float near_zero_ok[] = {3.0f, 4.0f, 0.001f + 2e-5f};
  FloatComparison c = CompareFloats(near_zero_ok, want, 3, 1e-5);
  check.True(c.ok(), "a difference of 2e-5 at 0.001 is within 1e-5 (|h| + rms)");
  const float off[] = {3.0f, 4.0f, 0.0011f};
  c = CompareFloats(off, want, 3, 1e-5);
  check.Equal(c.failures, uint64_t{1}, "a difference of 1e-4 fails");
  check.Equal(c.worst, uint64_t{2}, "the worst element is named");
  const std::string text = DescribeComparison(c);
  check.Contains(text, "1 of 3 elements", "message counts");
  check.Contains(text, "device 0.0011 host 0.001", "message prints the numbers readably");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {nan, inf, 1.0f};
  check.True(CompareFloats(special, special, 3, 1e-5).ok(), "NaN meets NaN, inf meets inf");
  const float swapped[] = {1.0f, inf, nan};
  check.Equal(CompareFloats(swapped, special, 3, 1e-5).failures, uint64_t{2}, "NaN vs a number fails both ways");
  check.Equal(FormatNumber(2.8e-6), std::string("2.8e-06"), "small numbers keep their digits");
}

}  // namespace
}  // namespace hotpath::executor

int main() {
  hotpath::test::Checker check;
  hotpath::executor::TestSelection(check);
  hotpath::executor::TestDeviceOrderExact(check);
  hotpath::executor::TestAgainstReference(check);
  hotpath::executor::TestCublasClassification(check);
  hotpath::executor::TestTolerance(check);
  return check.ExitCode();
}
