// The host kernel set's arithmetic (HostKernels(): Gemm, Binary, Activate,
// Softmax, LayerNorm, ChannelAffine, Reduce) against naive double-precision
// references computed here, written as directly from the definitions in
// kernels.h as possible (index formulas, no helpers shared with the
// kernels). Data movement, Cast and the guard checks are in
// kernels_host_data_test.cc.
//
// Tolerances: results are FP32, the references double, so a kernel is
// accepted within rtol 1e-5 / atol 1e-6 of the reference magnitude; for dot
// products and sums the bound scales with the summed magnitudes (see Near).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "executor/kernels.h"
#include "tests/check.h"

namespace hotpath::executor {
namespace {

using test::Checker;

const KernelContext kCtx{};

std::vector<float> Random(size_t count, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

// |got - want| <= atol + rtol * scale, where scale is |want| for a single
// rounding, or the sum of the magnitudes of the terms for a reduction (the
// error of a float sum grows with that, not with the result, which can
// cancel to near 0).
bool Near(double got, double want, double scale, double rtol = 1e-5, double atol = 1e-6) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * scale;
}

// Compares every element; reports the first few mismatches only.
void ExpectNear(Checker& check, const std::vector<float>& got, const std::vector<double>& want,
                const std::vector<double>& scale, const std::string& what, double rtol = 1e-5) {
  if (!check.Equal(got.size(), want.size(), what + ": size")) return;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double s = scale.empty() ? std::fabs(want[i]) : scale[i];
    if (!Near(got[i], want[i], s, rtol) && reported++ < 3) {
      check.True(false, what + ": element " + std::to_string(i) + " got " + std::to_string(got[i]) +
                            " want " + std::to_string(want[i]));
    }
  }
  check.True(reported == 0, what + ": " + std::to_string(reported) + " mismatches");
}

double RefActivation(double x, const ActivationParams& p) {
  switch (p.kind) {
    case Activation::kNone: return x;
    case Activation::kRelu: return x < 0 ? 0 : x;
    case Activation::kLeakyRelu: return x < 0 ? p.alpha * x : x;
    case Activation::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Activation::kTanh: return std::tanh(x);
    case Activation::kClip: return std::min(std::max(x, static_cast<double>(p.lo)), static_cast<double>(p.hi));
  }
  return x;
}

// --- Gemm ---------------------------------------------------------------------

struct GemmCase {
  int64_t m, n, k;
  bool ta, tb;
  int64_t batch;
  bool broadcast_a, broadcast_b;  // stride 0
  BiasKind bias;
  bool bias_per_batch;
  Activation act;
  int64_t pad;  // extra elements per leading dimension
};

void RunGemmCase(Checker& check, const GemmCase& t, std::mt19937& rng) {
  const int64_t a_rows = t.ta ? t.k : t.m, a_cols = t.ta ? t.m : t.k;
  const int64_t b_rows = t.tb ? t.n : t.k, b_cols = t.tb ? t.k : t.n;
  const int64_t lda = a_cols + t.pad, ldb = b_cols + t.pad, ldc = t.n + t.pad;
  const int64_t sa = t.broadcast_a ? 0 : a_rows * lda;
  const int64_t sb = t.broadcast_b ? 0 : b_rows * ldb;
  const int64_t sc = t.m * ldc;
  int64_t bias_len = 0;
  switch (t.bias) {
    case BiasKind::kNone: bias_len = 0; break;
    case BiasKind::kScalar: bias_len = 1; break;
    case BiasKind::kRow: bias_len = t.n; break;
    case BiasKind::kColumn: bias_len = t.m; break;
    case BiasKind::kFull: bias_len = t.m * t.n; break;
  }
  const int64_t bias_stride = t.bias_per_batch ? bias_len : 0;
  std::vector<float> a = Random(static_cast<size_t>((t.broadcast_a ? 1 : t.batch) * a_rows * lda + 1), rng);
  std::vector<float> b = Random(static_cast<size_t>((t.broadcast_b ? 1 : t.batch) * b_rows * ldb + 1), rng);
  std::vector<float> bias = Random(static_cast<size_t>((t.bias_per_batch ? t.batch : 1) * bias_len + 1), rng);
  const float sentinel = 1234.5f;
  std::vector<float> c(static_cast<size_t>(t.batch * sc), sentinel);

  GemmArgs args;
  args.a = a.data();
  args.b = b.data();
  args.c = c.data();
  args.m = t.m, args.n = t.n, args.k = t.k;
  args.trans_a = t.ta, args.trans_b = t.tb;
  args.lda = lda, args.ldb = ldb, args.ldc = ldc;
  args.batch = t.batch;
  args.stride_a = sa, args.stride_b = sb, args.stride_c = sc;
  args.alpha = 0.75f;
  args.bias = t.bias == BiasKind::kNone ? nullptr : bias.data();
  args.bias_kind = t.bias;
  args.beta = 1.5f;
  args.bias_stride = bias_stride;
  args.activation.kind = t.act;
  args.activation.alpha = 0.1f;
  args.activation.lo = -0.3f;
  args.activation.hi = 0.4f;
  std::string what = "Gemm m" + std::to_string(t.m) + " n" + std::to_string(t.n) + " k" + std::to_string(t.k) +
                     (t.ta ? " tA" : "") + (t.tb ? " tB" : "") + " batch" + std::to_string(t.batch) +
                     " bias" + std::to_string(static_cast<int>(t.bias)) + " act" +
                     std::to_string(static_cast<int>(t.act));
  Status status = HostKernels().Gemm(kCtx, args);
  if (!check.True(status.ok(), what + ": " + status.ToString())) return;

  std::vector<float> got;
  std::vector<double> want, scale;
  bool padding_intact = true;
  for (int64_t bt = 0; bt < t.batch; ++bt) {
    for (int64_t i = 0; i < t.m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        float value = c[static_cast<size_t>(bt * sc + i * ldc + j)];
        if (j >= t.n) {
          padding_intact = padding_intact && value == sentinel;
          continue;
        }
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < t.k; ++p) {
          double av = t.ta ? a[static_cast<size_t>(bt * sa + p * lda + i)] : a[static_cast<size_t>(bt * sa + i * lda + p)];
          double bv = t.tb ? b[static_cast<size_t>(bt * sb + j * ldb + p)] : b[static_cast<size_t>(bt * sb + p * ldb + j)];
          sum += av * bv;
          magnitude += std::fabs(av * bv);
        }
        double pre = 0.75 * sum;
        const float* bb = bias.data() + bt * bias_stride;
        double bias_value = 0;
        switch (t.bias) {
          case BiasKind::kNone: break;
          case BiasKind::kScalar: bias_value = bb[0]; break;
          case BiasKind::kRow: bias_value = bb[j]; break;
          case BiasKind::kColumn: bias_value = bb[i]; break;
          case BiasKind::kFull: bias_value = bb[i * t.n + j]; break;
        }
        pre += 1.5 * bias_value;
        got.push_back(value);
        want.push_back(RefActivation(pre, args.activation));
        // float accumulation over k terms: error <= ~k * eps * sum|a*b|;
        // 1e-5 per unit of magnitude covers k up to ~100 at worst and far
        // more on average (random signs).
        scale.push_back(std::fabs(pre) + magnitude + 1.5 * std::fabs(bias_value));
      }
    }
  }
  check.True(padding_intact, what + ": C padding columns untouched");
  ExpectNear(check, got, want, scale, what);
}

void TestGemm(Checker& check) {
  std::mt19937 rng(7);
  const Activation acts[] = {Activation::kNone, Activation::kRelu, Activation::kLeakyRelu,
                             Activation::kSigmoid, Activation::kTanh, Activation::kClip};
  const BiasKind biases[] = {BiasKind::kNone, BiasKind::kScalar, BiasKind::kRow, BiasKind::kColumn,
                             BiasKind::kFull};
  int variant = 0;
  for (int64_t m : {1, 7, 33}) {
    for (int64_t n : {1, 5, 17}) {
      for (int64_t k : {0, 1, 9, 40}) {
        for (int tr = 0; tr < 4; ++tr) {
          GemmCase t{m, n, k, (tr & 1) != 0, (tr & 2) != 0, 1, false, false,
                     biases[variant % 5], false, acts[variant % 6], variant % 3};
          RunGemmCase(check, t, rng);
          ++variant;
        }
      }
    }
  }
  // Batched, with stride-0 broadcasts of either operand and per-batch bias.
  for (int tr = 0; tr < 4; ++tr) {
    for (int bc = 0; bc < 3; ++bc) {
      GemmCase t{6, 11, 13, (tr & 1) != 0, (tr & 2) != 0, 3, bc == 1, bc == 2,
                 biases[(tr + bc) % 5], bc != 0, acts[(tr + 2 * bc) % 6], 1};
      RunGemmCase(check, t, rng);
    }
  }
  // A larger product (k = 300) where summation order matters.
  RunGemmCase(check, GemmCase{20, 30, 300, false, true, 2, false, true, BiasKind::kRow, false,
                              Activation::kNone, 0}, rng);

  // lda/ldb/ldc 0 mean dense.
  std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, c(4, 0);
  GemmArgs args;
  args.a = a.data(), args.b = b.data(), args.c = c.data();
  args.m = 2, args.n = 2, args.k = 2;
  check.True(HostKernels().Gemm(kCtx, args).ok(), "dense Gemm with ld 0");
  check.True(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50, "dense Gemm values");
  // Empty outputs do nothing, even with null pointers.
  GemmArgs empty;
  empty.m = 0, empty.n = 4, empty.k = 3;
  check.True(HostKernels().Gemm(kCtx, empty).ok(), "m = 0 is a no-op");
}

// --- Element-wise -------------------------------------------------------------

double RefBinary(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
  }
  return 0;
}

// out dims with a and b shapes broadcast ONNX-style (a 1 in a dim -> stride 0).
void RunBinaryCase(Checker& check, const std::vector<int64_t>& out_dims, const std::vector<int64_t>& a_dims,
                   const std::vector<int64_t>& b_dims, BinaryOp op, Activation act, std::mt19937& rng) {
  const int rank = static_cast<int>(out_dims.size());
  auto strides_of = [&](const std::vector<int64_t>& dims, int64_t* strides) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; --d) {
      strides[d] = dims[d] == 1 && out_dims[d] != 1 ? 0 : s;
      s *= dims[d];
    }
    return s;
  };
  BinaryArgs args;
  args.op = op;
  args.rank = rank;
  for (int d = 0; d < rank; ++d) args.out_dims[d] = out_dims[d];
  const int64_t a_count = strides_of(a_dims, args.a_strides);
  const int64_t b_count = strides_of(b_dims, args.b_strides);
  int64_t count = 1;
  for (int64_t d : out_dims) count *= d;
  std::vector<float> a = Random(static_cast<size_t>(a_count), rng);
  std::vector<float> b = Random(static_cast<size_t>(b_count), rng, 0.5f, 2.0f);  // no division by ~0
  std::vector<float> out(static_cast<size_t>(count));
  args.a = a.data(), args.b = b.data(), args.out = out.data();
  args.activation.kind = act;
  std::string what = "Binary op" + std::to_string(static_cast<int>(op)) + " rank" + std::to_string(rank);
  Status status = HostKernels().Binary(kCtx, args);
  if (!check.True(status.ok(), what + ": " + status.ToString())) return;
  std::vector<double> want(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t coord = rest % out_dims[d];
      rest /= out_dims[d];
      ia += coord * args.a_strides[d];
      ib += coord * args.b_strides[d];
    }
    want[static_cast<size_t>(i)] = RefActivation(RefBinary(op, a[static_cast<size_t>(ia)], b[static_cast<size_t>(ib)]), args.activation);
  }
  ExpectNear(check, out, want, {}, what);
}

void TestBinary(Checker& check) {
  std::mt19937 rng(11);
  RunBinaryCase(check, {}, {}, {}, BinaryOp::kAdd, Activation::kNone, rng);  // scalars
  RunBinaryCase(check, {7}, {7}, {7}, BinaryOp::kSub, Activation::kRelu, rng);
  RunBinaryCase(check, {3, 5}, {3, 5}, {1, 5}, BinaryOp::kMul, Activation::kNone, rng);
  RunBinaryCase(check, {3, 5}, {3, 1}, {1, 5}, BinaryOp::kDiv, Activation::kTanh, rng);
  RunBinaryCase(check, {2, 3, 4, 5}, {2, 1, 4, 1}, {1, 3, 1, 5}, BinaryOp::kAdd, Activation::kSigmoid, rng);
  RunBinaryCase(check, {2, 1, 3, 1, 2, 3, 1, 2}, {2, 1, 3, 1, 1, 3, 1, 2}, {1, 1, 1, 1, 2, 1, 1, 2},
                BinaryOp::kSub, Activation::kNone, rng);  // rank 8
  RunBinaryCase(check, {4, 6}, {1, 1}, {4, 6}, BinaryOp::kMul, Activation::kLeakyRelu, rng);

  // In place (out == a, no broadcast of a).
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  BinaryArgs args;
  args.a = a.data(), args.b = b.data(), args.out = a.data();
  args.rank = 1, args.out_dims[0] = 3, args.a_strides[0] = 1, args.b_strides[0] = 1;
  check.True(HostKernels().Binary(kCtx, args).ok() && a[2] == 33, "Binary in place");
}

void TestActivate(Checker& check) {
  std::vector<float> in = {-1e30f, -5.0f, -1.0f, -0.0f, 0.0f, 0.5f, 3.0f, 1e30f,
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), 100.0f, -100.0f};
  const Activation acts[] = {Activation::kNone, Activation::kRelu, Activation::kLeakyRelu,
                             Activation::kSigmoid, Activation::kTanh, Activation::kClip};
  for (Activation act : acts) {
    ActivationArgs args;
    std::vector<float> out(in.size());
    args.in = in.data(), args.out = out.data(), args.count = static_cast<int64_t>(in.size());
    args.activation.kind = act;
    args.activation.alpha = 0.2f;
    args.activation.lo = -2.0f;
    args.activation.hi = 1.0f;
    std::string what = "Activate " + std::to_string(static_cast<int>(act));
    if (!check.True(HostKernels().Activate(kCtx, args).ok(), what)) continue;
    std::vector<double> want;
    for (float x : in) want.push_back(RefActivation(x, args.activation));
    ExpectNear(check, out, want, {}, what);
  }
  // Sigmoid saturates without overflow or NaN.
  ActivationArgs args;
  std::vector<float> big = {-1000.0f, 1000.0f}, out(2);
  args.in = big.data(), args.out = out.data(), args.count = 2;
  args.activation.kind = Activation::kSigmoid;
  check.True(HostKernels().Activate(kCtx, args).ok() && out[0] == 0.0f && out[1] == 1.0f,
             "sigmoid saturates to 0 and 1");
}

// --- Normalisations and reductions --------------------------------------------

void TestSoftmax(Checker& check) {
  std::mt19937 rng(13);
  struct Shape { int64_t outer, axis, inner; float scale; };
  // scale 1e4: logits far beyond exp()'s float range (stability check).
  const Shape shapes[] = {{1, 1, 1, 1}, {3, 7, 1, 5}, {2, 33, 3, 5}, {1, 1000, 1, 10}, {4, 9, 2, 1e4f}};
  for (const Shape& s : shapes) {
    std::vector<float> in = Random(static_cast<size_t>(s.outer * s.axis * s.inner), rng, -s.scale, s.scale);
    std::vector<float> out(in.size());
    SoftmaxArgs args;
    args.in = in.data(), args.out = out.data();
    args.outer = s.outer, args.axis = s.axis, args.inner = s.inner;
    std::string what = "Softmax " + std::to_string(s.outer) + "x" + std::to_string(s.axis) + "x" +
                       std::to_string(s.inner) + " scale " + std::to_string(s.scale);
    if (!check.True(HostKernels().Softmax(kCtx, args).ok(), what)) continue;
    std::vector<double> want(in.size());
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        auto at = [&](int64_t a) { return static_cast<size_t>((o * s.axis + a) * s.inner + i); };
        double mx = -INFINITY, sum = 0;
        for (int64_t a = 0; a < s.axis; ++a) mx = std::max(mx, static_cast<double>(in[at(a)]));
        for (int64_t a = 0; a < s.axis; ++a) sum += std::exp(in[at(a)] - mx);
        for (int64_t a = 0; a < s.axis; ++a) want[at(a)] = std::exp(in[at(a)] - mx) / sum;
      }
    }
    ExpectNear(check, out, want, {}, what);
  }
  // Identical huge logits: a uniform distribution, not NaN.
  std::vector<float> same(4, 3e38f), out(4);
  SoftmaxArgs args;
  args.in = same.data(), args.out = out.data(), args.outer = 1, args.axis = 4, args.inner = 1;
  check.True(HostKernels().Softmax(kCtx, args).ok() && out[0] == 0.25f && out[3] == 0.25f,
             "softmax of equal huge logits is uniform");
}

void TestLayerNorm(Checker& check) {
  std::mt19937 rng(17);
  struct Shape { int64_t rows, cols; float offset; bool bias; };
  // offset 1e3: a large mean where one-pass E[x^2]-E[x]^2 would lose digits.
  const Shape shapes[] = {{1, 1, 0, true}, {3, 7, 0, false}, {5, 129, 1e3f, true}, {2, 1000, 0, true}};
  for (const Shape& s : shapes) {
    std::vector<float> in = Random(static_cast<size_t>(s.rows * s.cols), rng);
    for (float& v : in) v += s.offset;
    std::vector<float> scale = Random(static_cast<size_t>(s.cols), rng, 0.5f, 1.5f);
    std::vector<float> bias = Random(static_cast<size_t>(s.cols), rng);
    std::vector<float> out(in.size());
    LayerNormArgs args;
    args.in = in.data(), args.scale = scale.data(), args.bias = s.bias ? bias.data() : nullptr;
    args.out = out.data(), args.rows = s.rows, args.cols = s.cols, args.epsilon = 1e-5f;
    std::string what = "LayerNorm " + std::to_string(s.rows) + "x" + std::to_string(s.cols);
    if (!check.True(HostKernels().LayerNorm(kCtx, args).ok(), what)) continue;
    std::vector<double> want(in.size()), tol(in.size());
    for (int64_t r = 0; r < s.rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < s.cols; ++c) mean += in[static_cast<size_t>(r * s.cols + c)];
      mean /= static_cast<double>(s.cols);
      for (int64_t c = 0; c < s.cols; ++c) {
        double d = in[static_cast<size_t>(r * s.cols + c)] - mean;
        var += d * d;
      }
      var /= static_cast<double>(s.cols);
      for (int64_t c = 0; c < s.cols; ++c) {
        size_t i = static_cast<size_t>(r * s.cols + c);
        double norm = (in[i] - mean) / std::sqrt(var + 1e-5);
        want[i] = norm * scale[static_cast<size_t>(c)] + (s.bias ? bias[static_cast<size_t>(c)] : 0.0);
        // Input rounding of |x| ~ offset is relative to the std, not to the result.
        tol[i] = std::fabs(want[i]) + (s.offset + 1) / std::sqrt(var + 1e-5);
      }
    }
    ExpectNear(check, out, want, tol, what);
  }
}

void TestChannelAffine(Checker& check) {
  std::mt19937 rng(19);
  const int64_t outer = 3, channels = 5, inner = 7;
  std::vector<float> in = Random(outer * channels * inner, rng), scale = Random(channels, rng),
                     shift = Random(channels, rng), out(in.size());
  ChannelAffineArgs args;
  args.in = in.data(), args.scale = scale.data(), args.shift = shift.data(), args.out = out.data();
  args.outer = outer, args.channels = channels, args.inner = inner;
  if (!check.True(HostKernels().ChannelAffine(kCtx, args).ok(), "ChannelAffine")) return;
  std::vector<double> want(in.size());
  for (int64_t i = 0; i < outer * channels * inner; ++i) {
    int64_t c = (i / inner) % channels;
    want[static_cast<size_t>(i)] = static_cast<double>(in[static_cast<size_t>(i)]) * scale[static_cast<size_t>(c)] + shift[static_cast<size_t>(c)];
  }
  ExpectNear(check, out, want, {}, "ChannelAffine");
}

void TestReduce(Checker& check) {
  std::mt19937 rng(23);
  struct Shape { int64_t outer, reduce, inner; };
  const Shape shapes[] = {{1, 1, 1}, {3, 7, 1}, {1, 1000, 1}, {2, 33, 5}, {4, 1, 3}};
  for (const Shape& s : shapes) {
    for (bool mean : {false, true}) {
      std::vector<float> in = Random(static_cast<size_t>(s.outer * s.reduce * s.inner), rng);
      std::vector<float> out(static_cast<size_t>(s.outer * s.inner));
      ReduceArgs args;
      args.in = in.data(), args.out = out.data();
      args.outer = s.outer, args.reduce = s.reduce, args.inner = s.inner, args.mean = mean;
      std::string what = std::string(mean ? "ReduceMean " : "ReduceSum ") + std::to_string(s.outer) + "x" +
                         std::to_string(s.reduce) + "x" + std::to_string(s.inner);
      if (!check.True(HostKernels().Reduce(kCtx, args).ok(), what)) continue;
      std::vector<double> want(out.size()), tol(out.size());
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t i = 0; i < s.inner; ++i) {
          double sum = 0, mag = 0;
          for (int64_t r = 0; r < s.reduce; ++r) {
            double v = in[static_cast<size_t>((o * s.reduce + r) * s.inner + i)];
            sum += v;
            mag += std::fabs(v);
          }
          size_t at = static_cast<size_t>(o * s.inner + i);
          want[at] = mean ? sum / static_cast<double>(s.reduce) : sum;
          tol[at] = mean ? mag / static_cast<double>(s.reduce) : mag;
        }
      }
      ExpectNear(check, out, want, tol, what);
    }
  }
  // The mean of an empty axis is NaN, the sum 0.
  std::vector<float> out(2, 5.0f);
  ReduceArgs args;
  args.out = out.data(), args.outer = 2, args.reduce = 0, args.inner = 1;
  check.True(HostKernels().Reduce(kCtx, args).ok() && out[0] == 0.0f, "empty sum is 0");
  args.mean = true;
  check.True(HostKernels().Reduce(kCtx, args).ok() && std::isnan(out[1]), "empty mean is NaN");
}

}  // namespace
}  // namespace hotpath::executor

int main() {
  hotpath::test::Checker check;
  hotpath::executor::TestGemm(check);
  hotpath::executor::TestBinary(check);
  hotpath::executor::TestActivate(check);
  hotpath::executor::TestSoftmax(check);
  hotpath::executor::TestLayerNorm(check);
  hotpath::executor::TestChannelAffine(check);
  hotpath::executor::TestReduce(check);
  return check.ExitCode();
}
