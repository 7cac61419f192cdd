// The host kernel set's data movement and conversions (HostKernels():
// Gather, Transpose, Copy2D, Cast) against references computed here, and
// the guard checks every kernel shares (detail/kernel_checks.h): bad
// arguments give INVALID_ARGUMENT, never a crash. Everything here is exact,
// so results are compared bit for bit.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "executor/kernels.h"
#include "tests/check.h"

namespace hotpath::executor {
namespace {

using test::Checker;

const KernelContext kCtx{};
// --- Data movement ------------------------------------------------------------

void TestGather(Checker& check) {
  // data [outer 2, axis 5, inner 3] of int16 (element_bytes 2) and float.
  const int64_t outer = 2, axis = 5, inner = 3;
  std::vector<int16_t> data(outer * axis * inner);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int16_t>(i * 7 - 40);
  for (bool int64_indices : {true, false}) {
    std::vector<int64_t> idx64 = {4, -1, 0, -5, 2};
    std::vector<int32_t> idx32(idx64.begin(), idx64.end());
    std::vector<int16_t> out(outer * idx64.size() * inner, -1);
    GatherArgs args;
    args.data = data.data();
    args.indices = int64_indices ? static_cast<const void*>(idx64.data()) : idx32.data();
    args.indices_int64 = int64_indices;
    args.out = out.data();
    args.outer = outer, args.axis_len = axis, args.inner = inner;
    args.count = static_cast<int64_t>(idx64.size());
    args.element_bytes = 2;
    std::string what = int64_indices ? "Gather int64" : "Gather int32";
    if (!check.True(HostKernels().Gather(kCtx, args).ok(), what)) continue;
    bool same = true;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < args.count; ++j) {
        int64_t index = idx64[static_cast<size_t>(j)] < 0 ? idx64[static_cast<size_t>(j)] + axis : idx64[static_cast<size_t>(j)];
        for (int64_t r = 0; r < inner; ++r) {
          same = same && out[static_cast<size_t>((o * args.count + j) * inner + r)] ==
                             data[static_cast<size_t>((o * axis + index) * inner + r)];
        }
      }
    }
    check.True(same, what + ": values (negative indices wrap)");

    // Out of range either way: INVALID_ARGUMENT naming index, position, axis.
    for (int64_t bad : {int64_t{5}, int64_t{-6}, int64_t{1} << 40}) {
      if (!int64_indices && bad > INT32_MAX) continue;
      idx64[3] = bad;
      idx32[3] = static_cast<int32_t>(bad);
      Status status = HostKernels().Gather(kCtx, args);
      check.True(status.code() == StatusCode::kInvalidArgument, what + " out of range: " + status.ToString());
      check.Contains(status.message(), "index " + std::to_string(bad) + " at position 3", what + " names index");
      check.Contains(status.message(), "axis length 5", what + " names the axis length");
    }
  }
  // A row-major embedding lookup of floats (outer 1).
  std::vector<float> table = {0, 1, 2, 3, 4, 5}, out(4);
  std::vector<int64_t> ids = {2, 0};
  GatherArgs args;
  args.data = table.data(), args.indices = ids.data(), args.out = out.data();
  args.outer = 1, args.axis_len = 3, args.inner = 2, args.count = 2;
  check.True(HostKernels().Gather(kCtx, args).ok() && out[0] == 4 && out[1] == 5 && out[2] == 0 && out[3] == 1,
             "Gather embedding rows");
}

// Builds TransposeArgs for a dense input of `in_dims` and permutation `perm`.
TransposeArgs MakeTranspose(const std::vector<int64_t>& in_dims, const std::vector<int>& perm,
                            const void* in, void* out, uint32_t element_bytes) {
  TransposeArgs args;
  args.in = in, args.out = out, args.element_bytes = element_bytes;
  args.rank = static_cast<int32_t>(in_dims.size());
  std::vector<int64_t> in_strides(in_dims.size());
  int64_t s = 1;
  for (int d = args.rank - 1; d >= 0; --d) {
    in_strides[static_cast<size_t>(d)] = s;
    s *= in_dims[static_cast<size_t>(d)];
  }
  for (int k = 0; k < args.rank; ++k) {
    args.out_dims[k] = in_dims[static_cast<size_t>(perm[static_cast<size_t>(k)])];
    args.in_strides_permuted[k] = in_strides[static_cast<size_t>(perm[static_cast<size_t>(k)])];
  }
  return args;
}

template <typename T>
void RunTransposeCase(Checker& check, const std::vector<int64_t>& in_dims, const std::vector<int>& perm) {
  int64_t count = 1;
  for (int64_t d : in_dims) count *= d;
  std::vector<T> in(static_cast<size_t>(count)), out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) in[static_cast<size_t>(i)] = static_cast<T>(i * 3 + 1);
  TransposeArgs args = MakeTranspose(in_dims, perm, in.data(), out.data(), sizeof(T));
  std::string what = "Transpose rank " + std::to_string(in_dims.size()) + " bytes " + std::to_string(sizeof(T));
  if (!check.True(HostKernels().Transpose(kCtx, args).ok(), what)) return;
  // Reference: out index -> coordinates in out dims -> input coordinate.
  const int rank = static_cast<int>(in_dims.size());
  bool same = true;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> in_coord(static_cast<size_t>(rank));
    int64_t rest = i;
    for (int k = rank - 1; k >= 0; --k) {
      in_coord[static_cast<size_t>(perm[static_cast<size_t>(k)])] = rest % args.out_dims[k];
      rest /= args.out_dims[k];
    }
    int64_t in_index = 0;
    for (int d = 0; d < rank; ++d) in_index = in_index * in_dims[static_cast<size_t>(d)] + in_coord[static_cast<size_t>(d)];
    same = same && out[static_cast<size_t>(i)] == in[static_cast<size_t>(in_index)];
  }
  check.True(same, what + ": values");
}

struct Bytes3 {
  unsigned char b[3];
  Bytes3() = default;
  explicit Bytes3(int64_t v) : b{static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                 static_cast<unsigned char>(v >> 16)} {}
  bool operator==(const Bytes3& o) const { return std::memcmp(b, o.b, 3) == 0; }
};

void TestTranspose(Checker& check) {
  RunTransposeCase<float>(check, {3, 5}, {1, 0});
  RunTransposeCase<float>(check, {2, 3, 4}, {2, 0, 1});
  RunTransposeCase<int64_t>(check, {2, 3, 4, 5}, {0, 2, 3, 1});
  RunTransposeCase<uint16_t>(check, {7, 1, 3, 2}, {3, 1, 0, 2});
  RunTransposeCase<uint8_t>(check, {4, 33}, {1, 0});
  RunTransposeCase<Bytes3>(check, {3, 2, 5}, {1, 2, 0});  // odd element size
  RunTransposeCase<float>(check, {6}, {0});
  // Rank 0: one element.
  float in = 42.0f, out = 0.0f;
  TransposeArgs args;
  args.in = &in, args.out = &out, args.rank = 0;
  check.True(HostKernels().Transpose(kCtx, args).ok() && out == 42.0f, "Transpose rank 0");
}

void TestCopy2D(Checker& check) {
  // 3 rows of 5 bytes out of pitch 8 into pitch 6; bytes between rows kept.
  std::vector<unsigned char> src(24), dst(18, 0xEE);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i);
  Copy2DArgs args;
  args.src = src.data(), args.dst = dst.data(), args.rows = 3, args.row_bytes = 5;
  args.src_pitch = 8, args.dst_pitch = 6;
  if (!check.True(HostKernels().Copy2D(kCtx, args).ok(), "Copy2D")) return;
  bool same = true;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 6; ++c) {
      unsigned char want = c < 5 ? src[static_cast<size_t>(r * 8 + c)] : 0xEE;
      same = same && dst[static_cast<size_t>(r * 6 + c)] == want;
    }
  }
  check.True(same, "Copy2D rows and gaps");
  // One row ignores the pitches (a plain copy).
  std::vector<unsigned char> one(5, 0);
  Copy2DArgs plain;
  plain.src = src.data(), plain.dst = one.data(), plain.rows = 1, plain.row_bytes = 5;
  check.True(HostKernels().Copy2D(kCtx, plain).ok() && one[4] == 4, "Copy2D single row, pitch 0");
}

uint16_t CastToHalf(float value) {
  uint16_t out = 0;
  CastArgs args;
  args.in = &value, args.out = &out, args.count = 1, args.from = DType::kFloat32, args.to = DType::kFloat16;
  Status status = HostKernels().Cast(kCtx, args);
  return status.ok() ? out : 0xDEAD;
}

uint16_t CastDoubleToHalf(double value) {
  uint16_t out = 0;
  CastArgs args;
  args.in = &value, args.out = &out, args.count = 1, args.from = DType::kFloat64, args.to = DType::kFloat16;
  return HostKernels().Cast(kCtx, args).ok() ? out : 0xDEAD;
}

float CastHalfToFloat(uint16_t half) {
  float out = 0;
  CastArgs args;
  args.in = &half, args.out = &out, args.count = 1, args.from = DType::kFloat16, args.to = DType::kFloat32;
  return HostKernels().Cast(kCtx, args).ok() ? out : -12345.0f;
}

std::string Hex(uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%04X", v);
  return buf;
}

void TestCast(Checker& check) {
  struct Case { float in; uint16_t want; };
  const Case cases[] = {
      {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3C00}, {-2.0f, 0xC000}, {65504.0f, 0x7BFF},
      {65519.99f, 0x7BFF},                       // just below the rounding boundary
      {65520.0f, 0x7C00},                        // ties to even: overflows to inf
      {1e10f, 0x7C00}, {-1e10f, 0xFC00},
      {std::numeric_limits<float>::infinity(), 0x7C00}, {-std::numeric_limits<float>::infinity(), 0xFC00},
      {6.103515625e-05f, 0x0400},                // smallest normal 2^-14
      {5.9604644775390625e-08f, 0x0001},         // smallest subnormal 2^-24
      {2.98023223876953125e-08f, 0x0000},        // 2^-25: a tie, to even (0)
      {2.9802326e-08f, 0x0001},                  // just above the tie
      {8.940696716308594e-08f, 0x0002},          // 1.5 * 2^-24: tie, to even (2)
      {1.4901161193847656e-07f, 0x0002},         // 2.5 * 2^-24: tie, to even (2)
      {6.097555160522461e-05f, 0x03FF},          // largest subnormal
      {1.00048828125f, 0x3C00},                  // 1 + 2^-11: tie, to even (1.0)
      {1.00146484375f, 0x3C02},                  // 1 + 3 * 2^-11: tie, to even (1 + 2^-9)
      {1.0009765625f, 0x3C01},                   // exact
      {0.1f, 0x2E66}, {-3.14159265f, 0xC248},
  };
  for (const Case& c : cases) {
    uint16_t got = CastToHalf(c.in);
    check.True(got == c.want, "f32->f16 " + std::to_string(c.in) + ": got " + Hex(got) + " want " + Hex(c.want));
  }
  uint16_t nan = CastToHalf(std::numeric_limits<float>::quiet_NaN());
  check.True((nan & 0x7C00) == 0x7C00 && (nan & 0x03FF) != 0, "f32->f16 NaN stays NaN: " + Hex(nan));

  // NaNs come out canonical (sign kept), as on CUDA, whatever the payload.
  {
    uint32_t payload_bits = 0xFFA12345u;  // negative NaN with a payload
    float payload_nan = 0;
    std::memcpy(&payload_nan, &payload_bits, 4);
    double wide = 0;
    CastArgs args;
    args.in = &payload_nan, args.out = &wide, args.count = 1, args.from = DType::kFloat32, args.to = DType::kFloat64;
    uint64_t wide_bits = 0;
    if (check.True(HostKernels().Cast(kCtx, args).ok(), "f32 NaN -> f64")) std::memcpy(&wide_bits, &wide, 8);
    check.True(wide_bits == 0xFFF8000000000000ull, "f32 NaN -> canonical f64 NaN");
    check.Equal(Hex(CastToHalf(payload_nan)), Hex(0xFE00), "f32 NaN -> canonical f16 NaN");
    float narrow = CastHalfToFloat(0x7D01);
    uint32_t narrow_bits = 0;
    std::memcpy(&narrow_bits, &narrow, 4);
    check.True(narrow_bits == 0x7FC00000u, "f16 NaN -> canonical f32 NaN");
  }

  // f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is above the tie, while the
  // same value through float (1 + 2^-11, a tie) would round down to 1.0.
  check.Equal(Hex(CastDoubleToHalf(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))), Hex(0x3C01),
              "f64->f16 is not double-rounded");
  check.Equal(Hex(CastDoubleToHalf(1e-300)), Hex(0x0000), "f64->f16 tiny -> 0");
  check.Equal(Hex(CastDoubleToHalf(-1e300)), Hex(0xFC00), "f64->f16 huge -> -inf");

  // f16 -> f32 is exact for every value; all finite halves round-trip.
  check.Equal(CastHalfToFloat(0x0001), 5.9604644775390625e-08f, "f16 smallest subnormal");
  check.Equal(CastHalfToFloat(0x03FF), 6.097555160522461e-05f, "f16 largest subnormal");
  check.Equal(CastHalfToFloat(0x7BFF), 65504.0f, "f16 max");
  check.True(std::isinf(CastHalfToFloat(0xFC00)) && CastHalfToFloat(0xFC00) < 0, "f16 -inf");
  check.True(std::isnan(CastHalfToFloat(0x7E00)), "f16 NaN");
  check.True(std::signbit(CastHalfToFloat(0x8000)), "f16 -0 keeps its sign");
  int round_trip_failures = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) continue;  // NaNs
    float f = CastHalfToFloat(static_cast<uint16_t>(h));
    if (CastToHalf(f) != h) ++round_trip_failures;
  }
  check.Equal(round_trip_failures, 0, "every f16 value round-trips through f32");

  // Bulk conversions between every pair, against double references.
  std::vector<double> d = {0.0, 1.5, -2.25, 1e-3, 3.0e38, -7.0, 1e40};
  std::vector<float> f(d.size());
  CastArgs args;
  args.in = d.data(), args.out = f.data(), args.count = static_cast<int64_t>(d.size());
  args.from = DType::kFloat64, args.to = DType::kFloat32;
  check.True(HostKernels().Cast(kCtx, args).ok() && f[2] == -2.25f && f[3] == 1e-3f && std::isinf(f[6]),
             "f64->f32");
  std::vector<double> back(d.size());
  args.in = f.data(), args.out = back.data(), args.from = DType::kFloat32, args.to = DType::kFloat64;
  check.True(HostKernels().Cast(kCtx, args).ok() && back[1] == 1.5 && back[3] == static_cast<double>(1e-3f),
             "f32->f64");
  std::vector<uint16_t> h(d.size());
  args.in = d.data(), args.out = h.data(), args.from = DType::kFloat64, args.to = DType::kFloat16;
  check.True(HostKernels().Cast(kCtx, args).ok() && h[1] == 0x3E00 && h[4] == 0x7C00, "f64->f16 bulk");
  args.in = h.data(), args.out = back.data(), args.from = DType::kFloat16, args.to = DType::kFloat64;
  check.True(HostKernels().Cast(kCtx, args).ok() && back[2] == -2.25, "f16->f64");
  std::vector<float> same = {1, 2, 3}, copy(3);
  args.in = same.data(), args.out = copy.data(), args.count = 3, args.from = DType::kFloat32, args.to = DType::kFloat32;
  check.True(HostKernels().Cast(kCtx, args).ok() && copy[2] == 3, "f32->f32 copy");
}

// --- Guard checks -------------------------------------------------------------

void ExpectInvalid(Checker& check, const Status& status, const std::string& what) {
  check.True(status.code() == StatusCode::kInvalidArgument, what + ": " + status.ToString());
}

void TestGuards(Checker& check) {
  const KernelSet& k = HostKernels();
  std::vector<float> buf(64, 1.0f);
  float* p = buf.data();

  GemmArgs g;
  g.a = p, g.b = p + 16, g.c = p + 32, g.m = 2, g.n = 2, g.k = 2;
  check.True(k.Gemm(kCtx, g).ok(), "valid Gemm");
  GemmArgs bad = g;
  bad.a = nullptr;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm null A");
  bad = g, bad.c = nullptr;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm null C");
  bad = g, bad.m = -1;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm negative m");
  bad = g, bad.lda = 1;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm lda < k");
  bad = g, bad.ldc = 1;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm ldc < n");
  bad = g, bad.bias_kind = BiasKind::kRow;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm null bias");
  bad = g, bad.batch = 2, bad.stride_c = 1;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm overlapping batches");
  bad = g, bad.c = p + 1;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm C aliases A");
  bad = g, bad.m = int64_t{1} << 40, bad.n = int64_t{1} << 40;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm size overflow");
  bad = g, bad.activation.kind = static_cast<Activation>(99);
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm unknown activation");

  bad = g, bad.bias = p + 32, bad.bias_kind = BiasKind::kFull;
  ExpectInvalid(check, k.Gemm(kCtx, bad), "Gemm bias aliases C");

  BinaryArgs b;
  b.a = p, b.b = p, b.out = p + 8, b.rank = kMaxRank + 1;
  ExpectInvalid(check, k.Binary(kCtx, b), "Binary rank > kMaxRank");
  b.rank = 1, b.out_dims[0] = 4, b.a = nullptr;
  ExpectInvalid(check, k.Binary(kCtx, b), "Binary null a");
  b.a = p, b.a_strides[0] = -1;
  ExpectInvalid(check, k.Binary(kCtx, b), "Binary negative stride");
  b.a_strides[0] = 1, b.op = static_cast<BinaryOp>(9);
  ExpectInvalid(check, k.Binary(kCtx, b), "Binary unknown op");
  b.op = BinaryOp::kAdd, b.out = p, b.b = p + 16, b.b_strides[0] = 1;
  check.True(k.Binary(kCtx, b).ok(), "Binary in place on a dense operand");
  b.a_strides[0] = 0;
  ExpectInvalid(check, k.Binary(kCtx, b), "Binary in place on a broadcast operand");
  b.a_strides[0] = 1, b.out = p + 1;
  ExpectInvalid(check, k.Binary(kCtx, b), "Binary output shifted over its operand");

  ActivationArgs act;
  act.count = 3;
  ExpectInvalid(check, k.Activate(kCtx, act), "Activate null");
  act.count = 0;
  check.True(k.Activate(kCtx, act).ok(), "Activate count 0 with null pointers");

  SoftmaxArgs sm;
  sm.outer = 1, sm.axis = -2, sm.inner = 1, sm.in = p, sm.out = p;
  ExpectInvalid(check, k.Softmax(kCtx, sm), "Softmax negative axis");
  sm.axis = 4;
  check.True(k.Softmax(kCtx, sm).ok(), "Softmax in place");
  sm.out = p + 2;
  ExpectInvalid(check, k.Softmax(kCtx, sm), "Softmax partial overlap");
  LayerNormArgs ln;
  ln.rows = 1, ln.cols = 4, ln.in = p, ln.out = p + 8;
  ExpectInvalid(check, k.LayerNorm(kCtx, ln), "LayerNorm null scale");
  ln.scale = p, ln.epsilon = -1.0f;
  ExpectInvalid(check, k.LayerNorm(kCtx, ln), "LayerNorm negative epsilon");
  ChannelAffineArgs ca;
  ca.outer = 1, ca.channels = 2, ca.inner = 2, ca.in = p, ca.out = p, ca.scale = p;
  ExpectInvalid(check, k.ChannelAffine(kCtx, ca), "ChannelAffine null shift");
  ReduceArgs rd;
  rd.outer = 1, rd.reduce = 3, rd.inner = 1, rd.out = p;
  ExpectInvalid(check, k.Reduce(kCtx, rd), "Reduce null input");
  rd.in = p;
  ExpectInvalid(check, k.Reduce(kCtx, rd), "Reduce output overlaps input");

  int64_t idx = 0;
  GatherArgs ga;
  ga.data = p, ga.indices = &idx, ga.out = p + 32, ga.outer = 1, ga.axis_len = 4, ga.inner = 1, ga.count = 1;
  check.True(k.Gather(kCtx, ga).ok(), "valid Gather");
  ga.element_bytes = 0;
  ExpectInvalid(check, k.Gather(kCtx, ga), "Gather element_bytes 0");
  ga.element_bytes = 4, ga.indices = nullptr;
  ExpectInvalid(check, k.Gather(kCtx, ga), "Gather null indices");
  ga.indices = &idx, ga.out = p + 1;
  ExpectInvalid(check, k.Gather(kCtx, ga), "Gather output overlaps data");

  TransposeArgs tr;
  tr.in = p, tr.out = p + 32, tr.rank = kMaxRank + 1;
  ExpectInvalid(check, k.Transpose(kCtx, tr), "Transpose rank > kMaxRank");
  tr.rank = 1, tr.out_dims[0] = 4, tr.in_strides_permuted[0] = 1, tr.out = nullptr;
  ExpectInvalid(check, k.Transpose(kCtx, tr), "Transpose null output");

  Copy2DArgs cp;
  cp.src = p, cp.dst = p + 32, cp.rows = 2, cp.row_bytes = 8, cp.src_pitch = 4, cp.dst_pitch = 8;
  ExpectInvalid(check, k.Copy2D(kCtx, cp), "Copy2D pitch < row_bytes");
  cp.src_pitch = 8, cp.dst = nullptr;
  ExpectInvalid(check, k.Copy2D(kCtx, cp), "Copy2D null dst");
  cp.dst = reinterpret_cast<unsigned char*>(p) + 4;
  ExpectInvalid(check, k.Copy2D(kCtx, cp), "Copy2D overlapping rows");
  cp.dst = p;
  check.True(k.Copy2D(kCtx, cp).ok(), "Copy2D onto itself is a no-op");

  CastArgs cs;
  cs.in = p, cs.out = p + 32, cs.count = 2, cs.from = DType::kInt32;
  ExpectInvalid(check, k.Cast(kCtx, cs), "Cast from INT32");
  cs.from = DType::kFloat16, cs.to = DType::kFloat32, cs.out = p;
  ExpectInvalid(check, k.Cast(kCtx, cs), "Cast widening in place");
  cs.from = DType::kFloat32;
  check.True(k.Cast(kCtx, cs).ok(), "Cast onto itself, same type");
  cs.count = -1;
  ExpectInvalid(check, k.Cast(kCtx, cs), "Cast negative count");

  check.Equal(std::string(k.name()), std::string("host"), "name");
}

}  // namespace
}  // namespace hotpath::executor

int main() {
  hotpath::test::Checker check;
  hotpath::executor::TestGather(check);
  hotpath::executor::TestTranspose(check);
  hotpath::executor::TestCopy2D(check);
  hotpath::executor::TestCast(check);
  hotpath::executor::TestGuards(check);
  return check.ExitCode();
}
