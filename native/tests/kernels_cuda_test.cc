// GPU test (CTest label "gpu"): every CUDA kernel against HostKernels() on
// random data with odd sizes, once with the set MakeCudaDevice picks
// ("cuda+cublas" when cuBLAS loads) and once with CudaBlas::kOff (own
// SGEMM, "cuda"); the stream's Gather error flag; and, first and without a
// device, the CUDA fault classifier. Exits 77 (skipped) when no device is
// usable, after the device-free checks passed.
//
// Gemm: the one device tolerance (executor/tolerance.h), |device - host| <=
// 1e-5 (|host| + rms(host)) over the m x n results (the padding must stay
// untouched, bit for bit), and with the own kernels ("cuda") the results
// must equal the host device-order set (host_device_order.h) bit for bit
// wherever the activation is exact (none, Relu, LeakyRelu, Clip): that is
// the proof that the CPU test of the check's tolerance
// (device_order_models_test) emulates the device's order.
//
// The other kernels: |device - host| <= 1e-6 + 1e-5 * |host| + a reduction
// term (their difference is the host's double accumulation against the
// device's float one, which the rms form does not bound: a LayerNorm of
// inputs offset by 1e3 differs by ~1e-3). For a sum of n terms the
// difference is bounded by about n * 2^-24 * sum|terms|; the Reduce tests
// add (n + 8) * 2^-24 * sum|terms|. Exact kernels (Gather, Transpose,
// Copy2D, Cast) must match bit for bit.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "executor/detail/cuda_status.h"
#include "executor/device_runtime.h"
#include "executor/host_device_order.h"
#include "executor/kernels.h"
#include "executor/tolerance.h"
#include "tests/check.h"
#include "tests/cuda_test_support.h"

namespace hotpath::executor {
namespace {

using test::Checker;

constexpr double kUlp = 1.0 / 16777216.0;  // 2^-24
const KernelContext kHostCtx{};

std::vector<float> Random(size_t count, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

// `extra[i]` (may be empty) is the element's reduction term (see the top).
void ExpectClose(Checker& check, const std::vector<float>& got, const std::vector<float>& want,
                 const std::vector<double>& extra, const std::string& what) {
  if (!check.Equal(got.size(), want.size(), what + ": size")) return;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want[i], g = got[i];
    bool ok = false;
    if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isinf(w)) {
      ok = g == w;
    } else {
      ok = std::fabs(g - w) <= 1e-6 + 1e-5 * std::fabs(w) + (extra.empty() ? 0.0 : extra[i]);
    }
    if (!ok && bad++ < 3) {
      check.True(false, what + ": element " + std::to_string(i) + " device " + std::to_string(g) + " host " +
                            std::to_string(w));
    }
  }
  check.True(bad == 0, what + ": " + std::to_string(bad) + " elements out of tolerance");
}

template <typename T>
void ExpectSameBytes(Checker& check, const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  check.True(got.size() == want.size() && std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0,
             what + ": bitwise equal to host");
}

// --- Fault classification (no device needed) -------------------------------------

void TestClassifier(Checker& check) {
  using detail::ClassifyCudaError;
  const cudaError_t sticky[] = {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorHardwareStackError,
                                cudaErrorIllegalInstruction, cudaErrorMisalignedAddress,
                                cudaErrorInvalidAddressSpace, cudaErrorInvalidPc, cudaErrorECCUncorrectable,
                                cudaErrorLaunchTimeout, cudaErrorDevicesUnavailable, cudaErrorNoDevice,
                                cudaErrorContextIsDestroyed, cudaErrorUnknown, cudaErrorDeviceUninitialized,
                                cudaErrorAssert, cudaErrorContained, cudaErrorNoKernelImageForDevice};
  for (cudaError_t err : sticky) {
    check.True(ClassifyCudaError(err) == FaultClass::kSticky, std::string(cudaGetErrorName(err)) + " is sticky");
  }
  const cudaError_t transient[] = {cudaErrorMemoryAllocation, cudaErrorLaunchOutOfResources,
                                   cudaErrorInvalidValue, cudaErrorInvalidConfiguration,
                                   cudaErrorInvalidPitchValue, cudaErrorNotReady, cudaErrorInvalidResourceHandle};
  for (cudaError_t err : transient) {
    check.True(ClassifyCudaError(err) == FaultClass::kTransient,
               std::string(cudaGetErrorName(err)) + " is transient");
  }
  check.True(ClassifyCudaError(cudaSuccess) == FaultClass::kNone, "cudaSuccess is no fault");

  ExecStatus sticky_status = detail::CudaExecStatus("cudaMemcpyAsync", cudaErrorIllegalAddress);
  check.True(sticky_status.fault == FaultClass::kSticky, "ExecStatus carries the class");
  check.True(sticky_status.status.code() == StatusCode::kInternal, "sticky -> INTERNAL");
  check.Contains(sticky_status.status.message(), "cudaMemcpyAsync: cudaErrorIllegalAddress (", "message names call and error");
  Status transient_status = detail::CudaStatus("cudaMalloc", cudaErrorMemoryAllocation);
  check.True(transient_status.code() == StatusCode::kUnavailable, "transient -> UNAVAILABLE");
  check.Contains(transient_status.message(), "cudaMalloc: cudaErrorMemoryAllocation (", "transient message");
}

// --- Gemm -----------------------------------------------------------------------------

struct GemmShape {
  int64_t m, n, k;
  bool ta, tb;
  int64_t batch;
  int broadcast;  // 1: stride_a 0, 2: stride_b 0
  BiasKind bias;
  bool bias_batched;
  Activation act;
  int64_t pad;
};

void GemmCase(Checker& check, Gpu& gpu, const GemmShape& t, std::mt19937& rng) {
  const int64_t a_rows = t.ta ? t.k : t.m, a_cols = t.ta ? t.m : t.k;
  const int64_t b_rows = t.tb ? t.n : t.k, b_cols = t.tb ? t.k : t.n;
  GemmArgs args;
  args.m = t.m, args.n = t.n, args.k = t.k, args.trans_a = t.ta, args.trans_b = t.tb;
  args.lda = a_cols + t.pad, args.ldb = b_cols + t.pad, args.ldc = t.n + t.pad;
  args.batch = t.batch;
  args.stride_a = t.broadcast == 1 ? 0 : a_rows * args.lda;
  args.stride_b = t.broadcast == 2 ? 0 : b_rows * args.ldb;
  args.stride_c = t.m * args.ldc;
  const int64_t bias_len = t.bias == BiasKind::kScalar ? 1
                           : t.bias == BiasKind::kRow  ? t.n
                           : t.bias == BiasKind::kColumn ? t.m
                           : t.bias == BiasKind::kFull ? t.m * t.n : 0;
  args.bias_kind = t.bias, args.bias_stride = t.bias_batched ? bias_len : 0;
  args.alpha = 0.5f, args.beta = -1.25f;
  args.activation.kind = t.act, args.activation.alpha = 0.2f, args.activation.lo = -0.25f, args.activation.hi = 0.5f;

  std::vector<float> a = Random(static_cast<size_t>((t.broadcast == 1 ? 1 : t.batch) * a_rows * args.lda), rng);
  std::vector<float> b = Random(static_cast<size_t>((t.broadcast == 2 ? 1 : t.batch) * b_rows * args.ldb), rng);
  std::vector<float> bias = Random(static_cast<size_t>((t.bias_batched ? t.batch : 1) * bias_len + 1), rng);
  std::vector<float> c(static_cast<size_t>(t.batch * args.stride_c), 777.0f);
  std::string what = "Gemm m" + std::to_string(t.m) + " n" + std::to_string(t.n) + " k" + std::to_string(t.k) +
                     (t.ta ? " tA" : "") + (t.tb ? " tB" : "") + " batch " + std::to_string(t.batch) +
                     " bcast " + std::to_string(t.broadcast) + " bias " + std::to_string(static_cast<int>(t.bias)) +
                     " act " + std::to_string(static_cast<int>(t.act)) + " [" + gpu.kernels().name() + "]";

  // Host reference, and the host in the own kernels' order.
  std::vector<float> want = c, ordered = c;
  GemmArgs host = args;
  host.a = a.data(), host.b = b.data(), host.c = want.data(), host.bias = t.bias == BiasKind::kNone ? nullptr : bias.data();
  if (!check.True(HostKernels().Gemm(kHostCtx, host).ok(), what + ": host")) return;
  host.c = ordered.data();
  if (!check.True(HostDeviceOrderKernels().Gemm(kHostCtx, host).ok(), what + ": host device order")) return;

  DeviceArray<float> da(a), db(b), dbias(bias), dc(c);
  GemmArgs dev = args;
  dev.a = da.get(), dev.b = db.get(), dev.c = dc.get(), dev.bias = t.bias == BiasKind::kNone ? nullptr : dbias.get();
  Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Gemm(ctx, dev); });
  if (!check.True(status.ok(), what + ": " + status.ToString())) return;
  const std::vector<float> got = dc.Download();
  std::vector<float> got_results, want_results;
  size_t padding_touched = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (static_cast<int64_t>(i) % args.ldc < t.n) {
      got_results.push_back(got[i]);
      want_results.push_back(want[i]);
    } else {
      padding_touched += got[i] != 777.0f ? 1 : 0;
    }
  }
  check.Equal(padding_touched, size_t{0}, what + ": padding elements written");
  const FloatComparison r = CompareFloats(got_results.data(), want_results.data(), got_results.size(), kDeviceRtol);
  check.True(r.ok(), what + ": " + DescribeComparison(r));
  const bool exact_activation = t.act != Activation::kSigmoid && t.act != Activation::kTanh;
  if (std::string(gpu.kernels().name()) == "cuda" && exact_activation) {
    size_t differ = 0;
    for (size_t i = 0; i < c.size(); ++i) differ += got[i] != ordered[i] ? 1 : 0;
    check.Equal(differ, size_t{0}, what + ": elements differing from the host device-order set");
  }
}

void TestGemm(Checker& check, Gpu& gpu) {
  std::mt19937 rng(101);
  const Activation acts[] = {Activation::kNone, Activation::kRelu, Activation::kLeakyRelu,
                             Activation::kSigmoid, Activation::kTanh, Activation::kClip};
  const BiasKind biases[] = {BiasKind::kNone, BiasKind::kScalar, BiasKind::kRow, BiasKind::kColumn, BiasKind::kFull};
  // Small m (<= 16: the small-m kernels when A is not transposed) and tiled.
  const int64_t shapes[][3] = {{1, 1, 1},   {7, 33, 129}, {33, 7, 1000}, {129, 129, 33}, {1, 1000, 7},
                               {1000, 1, 1024}, {64, 64, 64}, {65, 63, 17}, {3, 5, 0}, {257, 130, 1024},
                               {1, 1024, 1024}, {16, 257, 1000}, {9, 40, 31}, {17, 64, 256}};
  int variant = 0;
  for (const auto& s : shapes) {
    for (int tr = 0; tr < 4; ++tr, ++variant) {
      GemmCase(check, gpu, GemmShape{s[0], s[1], s[2], (tr & 1) != 0, (tr & 2) != 0, 1, 0,
                                     biases[variant % 5], false, acts[variant % 6], variant % 3}, rng);
    }
  }
  for (int tr = 0; tr < 4; ++tr) {
    for (int broadcast = 0; broadcast < 3; ++broadcast) {
      GemmCase(check, gpu, GemmShape{33, 17, 65, (tr & 1) != 0, (tr & 2) != 0, 3, broadcast,
                                     biases[(tr + broadcast) % 5], broadcast != 0, acts[(tr + broadcast) % 6], 1}, rng);
    }
  }
  // Grid-stride paths: more batches than grid z and more row tiles than grid y allow.
  GemmCase(check, gpu, GemmShape{1, 1, 1, false, false, 70000, 2, BiasKind::kScalar, true, Activation::kNone, 0}, rng);
  GemmCase(check, gpu, GemmShape{65535 * 64 + 5, 1, 2, false, false, 1, 0, BiasKind::kColumn, false,
                                 Activation::kRelu, 0}, rng);
}

// --- Element-wise and normalisations ---------------------------------------------

void BinaryCase(Checker& check, Gpu& gpu, const std::vector<int64_t>& out_dims, const std::vector<int64_t>& a_dims,
                const std::vector<int64_t>& b_dims, BinaryOp op, Activation act, std::mt19937& rng) {
  const int rank = static_cast<int>(out_dims.size());
  BinaryArgs args;
  args.op = op, args.rank = rank, args.activation.kind = act;
  int64_t a_count = 1, b_count = 1, count = 1;
  for (int d = rank - 1; d >= 0; --d) {
    args.out_dims[d] = out_dims[static_cast<size_t>(d)];
    args.a_strides[d] = a_dims[static_cast<size_t>(d)] == 1 ? 0 : a_count;
    args.b_strides[d] = b_dims[static_cast<size_t>(d)] == 1 ? 0 : b_count;
    a_count *= a_dims[static_cast<size_t>(d)], b_count *= b_dims[static_cast<size_t>(d)], count *= out_dims[static_cast<size_t>(d)];
  }
  std::vector<float> a = Random(static_cast<size_t>(a_count), rng), b = Random(static_cast<size_t>(b_count), rng, 0.25f, 2.0f);
  std::vector<float> want(static_cast<size_t>(count));
  BinaryArgs host = args;
  host.a = a.data(), host.b = b.data(), host.out = want.data();
  std::string what = "Binary rank " + std::to_string(rank) + " count " + std::to_string(count);
  if (!check.True(HostKernels().Binary(kHostCtx, host).ok(), what + ": host")) return;
  DeviceArray<float> da(a), db(b), dout{std::vector<float>(static_cast<size_t>(count))};
  BinaryArgs dev = args;
  dev.a = da.get(), dev.b = db.get(), dev.out = dout.get();
  Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Binary(ctx, dev); });
  if (check.True(status.ok(), what + ": " + status.ToString())) ExpectClose(check, dout.Download(), want, {}, what);
}

void TestElementwise(Checker& check, Gpu& gpu) {
  std::mt19937 rng(103);
  BinaryCase(check, gpu, {}, {}, {}, BinaryOp::kAdd, Activation::kNone, rng);
  BinaryCase(check, gpu, {1000, 1000}, {1000, 1000}, {1, 1000}, BinaryOp::kDiv, Activation::kTanh, rng);
  BinaryCase(check, gpu, {7, 33, 129}, {7, 1, 129}, {1, 33, 1}, BinaryOp::kMul, Activation::kSigmoid, rng);
  BinaryCase(check, gpu, {2, 3, 1, 5, 2, 3, 2, 7}, {2, 1, 1, 5, 1, 3, 2, 7}, {1, 3, 1, 1, 2, 1, 1, 7},
             BinaryOp::kSub, Activation::kLeakyRelu, rng);

  std::vector<float> in = Random(1000003, rng, -10.0f, 10.0f);
  for (float special : {0.0f, -0.0f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    in.push_back(special);
  }
  DeviceArray<float> din(in), dout{std::vector<float>(in.size())};
  for (Activation act : {Activation::kRelu, Activation::kLeakyRelu, Activation::kSigmoid, Activation::kTanh,
                         Activation::kClip}) {
    ActivationArgs args;
    args.count = static_cast<int64_t>(in.size()), args.activation.kind = act;
    args.activation.lo = -1.5f, args.activation.hi = 2.5f;
    std::vector<float> want(in.size());
    ActivationArgs host = args;
    host.in = in.data(), host.out = want.data();
    (void)HostKernels().Activate(kHostCtx, host);
    ActivationArgs dev = args;
    dev.in = din.get(), dev.out = dout.get();
    std::string what = "Activate " + std::to_string(static_cast<int>(act));
    Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Activate(ctx, dev); });
    if (check.True(status.ok(), what + ": " + status.ToString())) ExpectClose(check, dout.Download(), want, {}, what);
  }

  const int64_t outer = 3, channels = 33, inner = 129;
  std::vector<float> x = Random(outer * channels * inner, rng), scale = Random(channels, rng), shift = Random(channels, rng);
  std::vector<float> want(x.size());
  ChannelAffineArgs args;
  args.outer = outer, args.channels = channels, args.inner = inner;
  ChannelAffineArgs host = args;
  host.in = x.data(), host.scale = scale.data(), host.shift = shift.data(), host.out = want.data();
  (void)HostKernels().ChannelAffine(kHostCtx, host);
  DeviceArray<float> dx(x), dscale(scale), dshift(shift), dy{std::vector<float>(x.size())};
  ChannelAffineArgs dev = args;
  dev.in = dx.get(), dev.scale = dscale.get(), dev.shift = dshift.get(), dev.out = dy.get();
  Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.ChannelAffine(ctx, dev); });
  if (check.True(status.ok(), "ChannelAffine: " + status.ToString())) ExpectClose(check, dy.Download(), want, {}, "ChannelAffine");
}

void TestSoftmaxAndNorm(Checker& check, Gpu& gpu) {
  std::mt19937 rng(107);
  struct Shape { int64_t outer, axis, inner; float range; };
  for (const Shape& s : {Shape{1, 1, 1, 1}, Shape{7, 1000, 1, 5}, Shape{3, 33, 129, 5}, Shape{129, 7, 1, 5},
                         Shape{2, 5000, 1, 1e4f}, Shape{5, 129, 7, 1e4f}}) {
    std::vector<float> x = Random(static_cast<size_t>(s.outer * s.axis * s.inner), rng, -s.range, s.range);
    std::vector<float> want(x.size());
    SoftmaxArgs args;
    args.outer = s.outer, args.axis = s.axis, args.inner = s.inner;
    SoftmaxArgs host = args;
    host.in = x.data(), host.out = want.data();
    (void)HostKernels().Softmax(kHostCtx, host);
    DeviceArray<float> dx(x), dy{std::vector<float>(x.size())};
    SoftmaxArgs dev = args;
    dev.in = dx.get(), dev.out = dy.get();
    std::string what = "Softmax " + std::to_string(s.outer) + "x" + std::to_string(s.axis) + "x" + std::to_string(s.inner);
    Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Softmax(ctx, dev); });
    if (check.True(status.ok(), what + ": " + status.ToString())) ExpectClose(check, dy.Download(), want, {}, what);
  }

  struct NormShape { int64_t rows, cols; float offset; };
  for (const NormShape& s : {NormShape{1, 1, 0}, NormShape{7, 1000, 0}, NormShape{129, 33, 0}, NormShape{3, 4096, 1e3f}}) {
    std::vector<float> x = Random(static_cast<size_t>(s.rows * s.cols), rng);
    for (float& v : x) v += s.offset;
    std::vector<float> scale = Random(static_cast<size_t>(s.cols), rng, 0.5f, 1.5f), bias = Random(static_cast<size_t>(s.cols), rng);
    std::vector<float> want(x.size());
    LayerNormArgs args;
    args.rows = s.rows, args.cols = s.cols, args.epsilon = 1e-5f;
    LayerNormArgs host = args;
    host.in = x.data(), host.scale = scale.data(), host.bias = bias.data(), host.out = want.data();
    (void)HostKernels().LayerNorm(kHostCtx, host);
    DeviceArray<float> dx(x), dscale(scale), dbias(bias), dy{std::vector<float>(x.size())};
    LayerNormArgs dev = args;
    dev.in = dx.get(), dev.scale = dscale.get(), dev.bias = dbias.get(), dev.out = dy.get();
    // A float input of magnitude |offset| carries ~|offset| * 2^-24 of
    // rounding, which normalisation scales by 1/std (~1.7 here).
    std::vector<double> extra(x.size(), 8.0 * (s.offset + 1.0) * kUlp * 1.5 * 1.8);
    std::string what = "LayerNorm " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
    Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.LayerNorm(ctx, dev); });
    if (check.True(status.ok(), what + ": " + status.ToString())) ExpectClose(check, dy.Download(), want, extra, what);
  }

  struct ReduceShape { int64_t outer, reduce, inner; };
  for (const ReduceShape& s : {ReduceShape{1, 1, 1}, ReduceShape{7, 1000, 1}, ReduceShape{3, 129, 33},
                               ReduceShape{1000, 7, 1}, ReduceShape{2, 0, 3}}) {
    for (bool mean : {false, true}) {
      std::vector<float> x = Random(static_cast<size_t>(s.outer * s.reduce * s.inner), rng);
      std::vector<float> want(static_cast<size_t>(s.outer * s.inner));
      std::vector<double> extra(want.size());
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t i = 0; i < s.inner; ++i) {
          double magnitude = 0;
          for (int64_t r = 0; r < s.reduce; ++r) magnitude += std::fabs(x[static_cast<size_t>((o * s.reduce + r) * s.inner + i)]);
          if (mean && s.reduce > 0) magnitude /= static_cast<double>(s.reduce);
          extra[static_cast<size_t>(o * s.inner + i)] = static_cast<double>(s.reduce + 8) * kUlp * magnitude;
        }
      }
      ReduceArgs args;
      args.outer = s.outer, args.reduce = s.reduce, args.inner = s.inner, args.mean = mean;
      ReduceArgs host = args;
      host.in = x.data(), host.out = want.data();
      (void)HostKernels().Reduce(kHostCtx, host);
      DeviceArray<float> dx(x), dy{std::vector<float>(want.size())};
      ReduceArgs dev = args;
      dev.in = dx.get(), dev.out = dy.get();
      std::string what = std::string(mean ? "ReduceMean " : "ReduceSum ") + std::to_string(s.outer) + "x" +
                         std::to_string(s.reduce) + "x" + std::to_string(s.inner);
      Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Reduce(ctx, dev); });
      if (check.True(status.ok(), what + ": " + status.ToString())) ExpectClose(check, dy.Download(), want, extra, what);
    }
  }
}

// --- Data movement (bit-exact) ------------------------------------------------------

std::vector<unsigned char> RandomBytes(size_t count, std::mt19937& rng) {
  std::vector<unsigned char> bytes(count);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng());
  return bytes;
}

void TestGather(Checker& check, Gpu& gpu) {
  std::mt19937 rng(109);
  const int64_t outer = 3, axis = 7, inner = 33, count = 129;
  for (uint32_t element_bytes : {1u, 2u, 3u, 4u, 8u}) {
    for (bool int64_indices : {true, false}) {
      std::vector<unsigned char> data = RandomBytes(static_cast<size_t>(outer * axis * inner * element_bytes), rng);
      std::vector<int64_t> idx64(count);
      for (int64_t& v : idx64) v = static_cast<int64_t>(rng() % (2 * axis)) - axis;  // [-axis, axis)
      std::vector<int32_t> idx32(idx64.begin(), idx64.end());
      const size_t out_bytes = static_cast<size_t>(outer * count * inner * element_bytes);
      std::vector<unsigned char> want(out_bytes);
      GatherArgs args;
      args.outer = outer, args.axis_len = axis, args.inner = inner, args.count = count;
      args.element_bytes = element_bytes, args.indices_int64 = int64_indices;
      GatherArgs host = args;
      host.data = data.data(), host.out = want.data();
      host.indices = int64_indices ? static_cast<const void*>(idx64.data()) : idx32.data();
      std::string what = "Gather bytes " + std::to_string(element_bytes) + (int64_indices ? " int64" : " int32");
      if (!check.True(HostKernels().Gather(kHostCtx, host).ok(), what + ": host")) continue;
      DeviceArray<unsigned char> ddata(data), dout{std::vector<unsigned char>(out_bytes)};
      DeviceArray<int64_t> di64(idx64);
      DeviceArray<int32_t> di32(idx32);
      GatherArgs dev = args;
      dev.data = ddata.get(), dev.out = dout.get();
      dev.indices = int64_indices ? static_cast<const void*>(di64.get()) : di32.get();
      Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Gather(ctx, dev); });
      if (check.True(status.ok(), what + ": " + status.ToString())) ExpectSameBytes(check, dout.Download(), want, what);
    }
  }

  // An index out of range: the launch succeeds, its rows are zeros, the
  // stream's Synchronize reports INVALID_ARGUMENT (no device fault) once,
  // and the flag is clear for the next batch.
  std::vector<float> table = Random(5 * 4, rng);
  std::vector<int64_t> ids = {1, 5, -6, 4};  // 5 and -6 are out of [-5, 5)
  DeviceArray<float> dtable(table), dout{std::vector<float>(16, 9.0f)};
  DeviceArray<int64_t> dids(ids);
  GatherArgs args;
  args.data = dtable.get(), args.indices = dids.get(), args.out = dout.get();
  args.outer = 1, args.axis_len = 5, args.inner = 4, args.count = 4;
  Status launched = gpu.kernels().Gather(gpu.ctx(), args);
  check.True(launched.ok(), "out-of-range Gather launches: " + launched.ToString());
  ExecStatus synced = gpu.stream->Synchronize();
  check.True(synced.status.code() == StatusCode::kInvalidArgument, "Synchronize reports the index: " + synced.status.ToString());
  check.Contains(synced.status.message(), "Gather index out of range", "flag message");
  check.True(synced.fault == FaultClass::kNone, "a data error is not a device fault");
  std::vector<float> out = dout.Download();
  check.True(out[0] == table[4] && out[3] == table[7], "valid rows gathered");
  check.True(out[4] == 0.0f && out[7] == 0.0f && out[8] == 0.0f && out[11] == 0.0f, "invalid rows are zeros");
  check.True(gpu.stream->Synchronize().ok(), "the flag was reset");
  ids[1] = 0, ids[2] = -5;
  DeviceArray<int64_t> good(ids);
  args.indices = good.get();
  check.True(gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Gather(ctx, args); }).ok(),
             "a valid Gather afterwards is OK");
}

void TestTranspose(Checker& check, Gpu& gpu) {
  std::mt19937 rng(113);
  struct Case { std::vector<int64_t> dims; std::vector<int> perm; };
  const Case cases[] = {{{129, 33}, {1, 0}}, {{7, 33, 5}, {2, 0, 1}}, {{3, 4, 5, 6}, {3, 1, 0, 2}},
                        {{1000}, {0}}, {{}, {}}, {{2, 1, 3, 1, 2, 1, 2, 3}, {7, 6, 5, 4, 3, 2, 1, 0}}};
  for (const Case& c : cases) {
    for (uint32_t element_bytes : {1u, 2u, 3u, 4u, 8u}) {
      const int rank = static_cast<int>(c.dims.size());
      int64_t count = 1;
      for (int64_t d : c.dims) count *= d;
      std::vector<int64_t> strides(c.dims.size());
      for (int64_t d = rank - 1, s = 1; d >= 0; --d) strides[static_cast<size_t>(d)] = s, s *= c.dims[static_cast<size_t>(d)];
      TransposeArgs args;
      args.rank = rank, args.element_bytes = element_bytes;
      for (int k = 0; k < rank; ++k) {
        args.out_dims[k] = c.dims[static_cast<size_t>(c.perm[static_cast<size_t>(k)])];
        args.in_strides_permuted[k] = strides[static_cast<size_t>(c.perm[static_cast<size_t>(k)])];
      }
      std::vector<unsigned char> in = RandomBytes(static_cast<size_t>(count * element_bytes), rng);
      std::vector<unsigned char> want(in.size());
      TransposeArgs host = args;
      host.in = in.data(), host.out = want.data();
      std::string what = "Transpose rank " + std::to_string(rank) + " bytes " + std::to_string(element_bytes);
      if (!check.True(HostKernels().Transpose(kHostCtx, host).ok(), what + ": host")) continue;
      DeviceArray<unsigned char> din(in), dout{std::vector<unsigned char>(in.size())};
      TransposeArgs dev = args;
      dev.in = din.get(), dev.out = dout.get();
      Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Transpose(ctx, dev); });
      if (check.True(status.ok(), what + ": " + status.ToString())) ExpectSameBytes(check, dout.Download(), want, what);
    }
  }
}

void TestCopy2DAndCast(Checker& check, Gpu& gpu) {
  std::mt19937 rng(127);
  struct Case { int64_t rows, row_bytes, src_pitch, dst_pitch; };
  for (const Case& c : {Case{129, 37, 64, 40}, Case{1, 1000, 0, 0}, Case{7, 12, 12, 12}, Case{33, 5, 5, 9}}) {
    std::vector<unsigned char> src = RandomBytes(static_cast<size_t>(c.rows * std::max(c.src_pitch, c.row_bytes)), rng);
    std::vector<unsigned char> dst = RandomBytes(static_cast<size_t>(c.rows * std::max(c.dst_pitch, c.row_bytes)), rng);
    std::vector<unsigned char> want = dst;
    Copy2DArgs args;
    args.rows = c.rows, args.row_bytes = c.row_bytes, args.src_pitch = c.src_pitch, args.dst_pitch = c.dst_pitch;
    Copy2DArgs host = args;
    host.src = src.data(), host.dst = want.data();
    (void)HostKernels().Copy2D(kHostCtx, host);
    DeviceArray<unsigned char> dsrc(src), ddst(dst);
    Copy2DArgs dev = args;
    dev.src = dsrc.get(), dev.dst = ddst.get();
    std::string what = "Copy2D rows " + std::to_string(c.rows) + " pitches " + std::to_string(c.src_pitch) + "/" +
                       std::to_string(c.dst_pitch);
    Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Copy2D(ctx, dev); });
    if (check.True(status.ok(), what + ": " + status.ToString())) ExpectSameBytes(check, ddst.Download(), want, what);
  }

  // Every conversion pair on values that exercise rounding, subnormals,
  // overflow, infinities and NaN, bit for bit against the host.
  std::vector<double> values;
  std::uniform_real_distribution<double> wide(-70000.0, 70000.0);
  std::uniform_real_distribution<double> tiny(-1e-6, 1e-6);
  for (int i = 0; i < 1000; ++i) values.push_back(i % 2 == 0 ? wide(rng) : tiny(rng));
  for (double v : {0.0, -0.0, 65504.0, 65520.0, 65519.999, 5.960464477539063e-08, 2.9802322387695312e-08,
                   1.00048828125, 1e-300, 1e300, std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    values.push_back(v);
  }
  const DType types[] = {DType::kFloat32, DType::kFloat16, DType::kFloat64};
  auto size_of = [](DType t) -> size_t { return t == DType::kFloat16 ? 2 : t == DType::kFloat64 ? 8 : 4; };
  for (DType from : types) {
    // The source values in `from`'s format (converted by the host kernel).
    std::vector<unsigned char> src(values.size() * size_of(from));
    CastArgs make;
    make.in = values.data(), make.out = src.data(), make.count = static_cast<int64_t>(values.size());
    make.from = DType::kFloat64, make.to = from;
    (void)HostKernels().Cast(kHostCtx, make);
    for (DType to : types) {
      std::vector<unsigned char> want(values.size() * size_of(to));
      CastArgs args;
      args.count = static_cast<int64_t>(values.size()), args.from = from, args.to = to;
      CastArgs host = args;
      host.in = src.data(), host.out = want.data();
      std::string what = "Cast " + std::to_string(static_cast<int>(from)) + "->" + std::to_string(static_cast<int>(to));
      if (!check.True(HostKernels().Cast(kHostCtx, host).ok(), what + ": host")) continue;
      DeviceArray<unsigned char> din(src), dout{std::vector<unsigned char>(want.size())};
      CastArgs dev = args;
      dev.in = din.get(), dev.out = dout.get();
      Status status = gpu.Run([&](const KernelSet& k, const KernelContext& ctx) { return k.Cast(ctx, dev); });
      if (check.True(status.ok(), what + ": " + status.ToString())) ExpectSameBytes(check, dout.Download(), want, what);
    }
  }
}

void TestGuards(Checker& check, Gpu& gpu) {
  GemmArgs gemm;
  gemm.m = 2, gemm.n = 2, gemm.k = 2;  // null pointers
  check.True(gpu.kernels().Gemm(gpu.ctx(), gemm).code() == StatusCode::kInvalidArgument, "Gemm guard on CUDA");
  GatherArgs gather;
  gather.outer = 1, gather.axis_len = 1, gather.inner = 1, gather.count = 1;
  check.True(gpu.kernels().Gather(gpu.ctx(), gather).code() == StatusCode::kInvalidArgument, "Gather guard on CUDA");
  check.True(gpu.stream->Synchronize().ok(), "nothing was launched");
}

// One full pass over every kernel with the device's set.
void TestKernelSet(Checker& check, Gpu& gpu) {
  std::printf("kernel set: %s\n", gpu.kernels().name());
  TestGemm(check, gpu);
  TestElementwise(check, gpu);
  TestSoftmaxAndNorm(check, gpu);
  TestGather(check, gpu);
  TestTranspose(check, gpu);
  TestCopy2DAndCast(check, gpu);
  TestGuards(check, gpu);
}

bool OpenGpu(Checker& check, Gpu& gpu, uint32_t* flag, CudaBlas blas = CudaBlas::kAuto) {
  Result<std::shared_ptr<ExecDevice>> device = MakeCudaDevice(0, blas);
  if (!check.True(device.ok(), "MakeCudaDevice: " + device.status().ToString())) return false;
  gpu.device = device.value();
  check.True(gpu.device->BindThread().ok(), "BindThread");
  Result<std::unique_ptr<ExecStream>> stream = gpu.device->CreateStream(flag);
  if (!check.True(stream.ok(), "CreateStream: " + stream.status().ToString())) return false;
  gpu.stream = std::move(stream).value();
  gpu.flag = flag;
  return true;
}

// A kernel reading an unmapped address: Synchronize must report a sticky
// fault naming the error. Last, because it destroys the process's context.
void TestStickyFault(Checker& check, Gpu& gpu) {
  BinaryArgs args;
  args.rank = 1, args.out_dims[0] = 1024, args.a_strides[0] = 1, args.b_strides[0] = 1;
  args.a = reinterpret_cast<const float*>(uintptr_t{0x10});  // never mapped
  args.b = args.a;
  float* out = nullptr;
  Must(cudaMalloc(reinterpret_cast<void**>(&out), 1024 * sizeof(float)), "cudaMalloc");
  args.out = out;
  Status launched = gpu.kernels().Binary(gpu.ctx(), args);
  ExecStatus synced = gpu.stream->Synchronize();
  check.True(launched.ok() && !synced.ok(), "a faulting kernel fails at the sync: " + synced.status.ToString());
  check.True(synced.fault == FaultClass::kSticky, "an illegal address is sticky");
  // The fault surfaces at the first call after it: the flag's copy or the sync.
  check.Contains(synced.status.message(), ": cudaErrorIllegalAddress (", "names the error");
}

}  // namespace
}  // namespace hotpath::executor

int main() {
  using namespace hotpath::executor;
  using hotpath::Result;
  hotpath::test::Checker check;
  TestClassifier(check);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: device-free checks only\n");
    int code = check.ExitCode();
    return code != 0 ? code : hotpath::test::kSkipExitCode;
  }
  Result<std::shared_ptr<ExecDevice>> probe = MakeCudaDevice(0);
  if (!probe.ok()) {
    std::printf("MakeCudaDevice(0) failed, skipping: %s\n", probe.status().ToString().c_str());
    int code = check.ExitCode();
    return code != 0 ? code : hotpath::test::kSkipExitCode;
  }
  uint32_t* flags = nullptr;
  Must(cudaMalloc(reinterpret_cast<void**>(&flags), 2 * sizeof(uint32_t)), "cudaMalloc(flags)");
  {
    // The set MakeCudaDevice picks: cuBLAS when it loads.
    Gpu gpu;
    if (OpenGpu(check, gpu, flags)) {
      if (std::string(gpu.kernels().name()) != "cuda+cublas") {
        std::printf("cuBLAS not loaded; set HOTPATH_CUBLAS_PATH to test it (own kernels only)\n");
      } else {
        TestKernelSet(check, gpu);
      }
    }
  }
  Gpu own;
  if (OpenGpu(check, own, flags + 1, CudaBlas::kOff)) {
    check.Equal(std::string(own.kernels().name()), std::string("cuda"), "CudaBlas::kOff forces own kernels");
    TestKernelSet(check, own);
    TestStickyFault(check, own);
  }
  return check.ExitCode();
}
