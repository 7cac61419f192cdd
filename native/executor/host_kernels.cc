// The host kernel set: portable, readable C++ that is the reference every
// other kernel set is tested against (kernels.h), and the set CI runs the
// whole executor path with.
//
// Written for clarity first: plain loops in cache-friendly order, FP32 math
// as the CUDA kernels do it, except that long reductions (softmax sums,
// layer-norm moments, Reduce) accumulate in double, which makes the
// reference more exact, never less. Element counts and indices are int64.
//
// Thread-safety: the set is stateless; calls may run concurrently on any
// threads (each on its own buffers). KernelContext is ignored.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "executor/detail/kernel_checks.h"
#include "executor/detail/kernel_math.h"
#include "executor/kernels.h"

namespace hotpath::executor {

namespace {

using detail::ApplyActivation;

float ApplyBinary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
  }
  return 0.0f;
}

// Walks the index space of `dims` (all but the innermost dimension) like an
// odometer, keeping the element offsets of up to two strided operands. The
// caller handles the innermost dimension itself, where the loop is tight.
class Odometer {
 public:
  Odometer(int32_t rank, const int64_t* dims, const int64_t* strides_a, const int64_t* strides_b)
      : rank_(rank), dims_(dims), strides_a_(strides_a), strides_b_(strides_b) {}

  int64_t offset_a() const { return offset_a_; }
  int64_t offset_b() const { return offset_b_; }

  // Advances dimensions [0, rank - 1) by one step.
  void Next() {
    for (int32_t d = rank_ - 2; d >= 0; --d) {
      ++index_[d];
      offset_a_ += strides_a_[d];
      if (strides_b_ != nullptr) offset_b_ += strides_b_[d];
      if (index_[d] < dims_[d]) return;
      offset_a_ -= strides_a_[d] * dims_[d];
      if (strides_b_ != nullptr) offset_b_ -= strides_b_[d] * dims_[d];
      index_[d] = 0;
    }
  }

 private:
  const int32_t rank_;
  const int64_t* dims_;
  const int64_t* strides_a_;
  const int64_t* strides_b_;  // may be null
  int64_t index_[kMaxRank] = {};
  int64_t offset_a_ = 0;
  int64_t offset_b_ = 0;
};

// sum(x[p] * y[p]) for p < k in 8 interleaved partial sums: independent
// chains the compiler can vectorise (a single float chain cannot be
// reordered without fast-math), and a smaller rounding error too.
float Dot(const float* x, const float* y, int64_t k) {
  constexpr int kLanes = 8;
  float partial[kLanes] = {};
  int64_t p = 0;
  for (; p + kLanes <= k; p += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) partial[lane] += x[p + lane] * y[p + lane];
  }
  float tail = 0.0f;
  for (; p < k; ++p) tail += x[p] * y[p];
  return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
         ((partial[4] + partial[5]) + (partial[6] + partial[7])) + tail;
}

// The same with x strided (a column of a transposed A): one plain chain.
float StridedDot(const float* x, int64_t x_stride, const float* y, int64_t k) {
  float sum = 0.0f;
  for (int64_t p = 0; p < k; ++p) sum += x[p * x_stride] * y[p];
  return sum;
}

// One output row C[i, 0..n) of one batch: alpha * op(A) @ op(B), then the
// bias and activation epilogue.
void GemmRow(const GemmArgs& g, const float* a, const float* b, const float* bias, float* c_row,
             int64_t i) {
  if (!g.trans_b) {
    // i-k-j order: C's row is the accumulator and B is read row by row.
    for (int64_t j = 0; j < g.n; ++j) c_row[j] = 0.0f;
    for (int64_t p = 0; p < g.k; ++p) {
      const float a_ip = g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p];
      const float* b_row = b + p * g.ldb;
      for (int64_t j = 0; j < g.n; ++j) c_row[j] += a_ip * b_row[j];
    }
  } else {
    // B is stored N x K: each C element is a dot product of two rows.
    const float* a_row = a + i * g.lda;  // when !trans_a
    for (int64_t j = 0; j < g.n; ++j) {
      const float* b_row = b + j * g.ldb;
      c_row[j] = g.trans_a ? StridedDot(a + i, g.lda, b_row, g.k) : Dot(a_row, b_row, g.k);
    }
  }
  for (int64_t j = 0; j < g.n; ++j) {
    float value = g.alpha * c_row[j];
    if (g.bias_kind != BiasKind::kNone) {
      value += g.beta * detail::BiasAt(bias, g.bias_kind, 0, g.n, i, j);
    }
    c_row[j] = ApplyActivation(value, g.activation);
  }
}

// Copies one element of `kBytes` bytes (memcpy: no alignment assumptions).
template <size_t kBytes>
void TransposeTyped(const TransposeArgs& args, int64_t count) {
  constexpr auto kSize = static_cast<int64_t>(kBytes);
  const auto* in = static_cast<const unsigned char*>(args.in);
  auto* out = static_cast<unsigned char*>(args.out);
  if (args.rank == 0) {
    std::memcpy(out, in, kBytes);
    return;
  }
  const int64_t inner = args.out_dims[args.rank - 1];
  const int64_t inner_stride = args.in_strides_permuted[args.rank - 1];
  Odometer walk(args.rank, args.out_dims, args.in_strides_permuted, nullptr);
  for (int64_t o = 0; o < count; o += inner) {
    const unsigned char* src = in + walk.offset_a() * kSize;
    for (int64_t j = 0; j < inner; ++j) {
      std::memcpy(out + (o + j) * kSize, src + j * inner_stride * kSize, kBytes);
    }
    walk.Next();
  }
}

void TransposeBytes(const TransposeArgs& args, int64_t count) {
  const auto* in = static_cast<const unsigned char*>(args.in);
  auto* out = static_cast<unsigned char*>(args.out);
  const int64_t bytes = args.element_bytes;
  if (args.rank == 0) {
    std::memcpy(out, in, static_cast<size_t>(bytes));
    return;
  }
  const int64_t inner = args.out_dims[args.rank - 1];
  const int64_t inner_stride = args.in_strides_permuted[args.rank - 1];
  Odometer walk(args.rank, args.out_dims, args.in_strides_permuted, nullptr);
  for (int64_t o = 0; o < count; o += inner) {
    for (int64_t j = 0; j < inner; ++j) {
      std::memcpy(out + (o + j) * bytes, in + (walk.offset_a() + j * inner_stride) * bytes,
                  static_cast<size_t>(bytes));
    }
    walk.Next();
  }
}

double ReadFloat(DType dtype, const void* base, int64_t i) {
  switch (dtype) {
    case DType::kFloat16:
      return detail::WidenFloat(detail::HalfBitsToFloat(static_cast<const uint16_t*>(base)[i]));
    case DType::kFloat64:
      return static_cast<const double*>(base)[i];
    default:
      return detail::WidenFloat(static_cast<const float*>(base)[i]);
  }
}

// A double converts to the destination with one rounding (float: the
// hardware's round-to-nearest-even; half: DoubleToHalfBits), so f64 -> f16
// is never double-rounded through float. NaNs come out canonical
// (kernel_math.h), as on CUDA.
void WriteFloat(DType dtype, void* base, int64_t i, double value) {
  switch (dtype) {
    case DType::kFloat16:
      static_cast<uint16_t*>(base)[i] = detail::DoubleToHalfBits(value);
      break;
    case DType::kFloat64:
      static_cast<double*>(base)[i] = value;
      break;
    default:
      static_cast<float*>(base)[i] = detail::NarrowDouble(value);
      break;
  }
}

class HostKernelSet final : public KernelSet {
 public:
  const char* name() const override { return "host"; }

  Status Gemm(const KernelContext&, const GemmArgs& args) const override {
    GemmArgs g;
    int64_t work = 0;
    Status checked = detail::CheckGemm(args, &g, &work);
    if (!checked.ok() || work == 0) return checked;
    for (int64_t batch = 0; batch < g.batch; ++batch) {
      const float* a = g.a + batch * g.stride_a;
      const float* b = g.b + batch * g.stride_b;
      const float* bias = g.bias != nullptr ? g.bias + batch * g.bias_stride : nullptr;
      float* c = g.c + batch * g.stride_c;
      for (int64_t i = 0; i < g.m; ++i) GemmRow(g, a, b, bias, c + i * g.ldc, i);
    }
    return Status::Ok();
  }

  Status Binary(const KernelContext&, const BinaryArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckBinary(args, &count);
    if (!checked.ok() || count == 0) return checked;
    if (args.rank == 0) {
      args.out[0] = ApplyActivation(ApplyBinary(args.op, args.a[0], args.b[0]), args.activation);
      return Status::Ok();
    }
    const int64_t inner = args.out_dims[args.rank - 1];
    const int64_t stride_a = args.a_strides[args.rank - 1];
    const int64_t stride_b = args.b_strides[args.rank - 1];
    Odometer walk(args.rank, args.out_dims, args.a_strides, args.b_strides);
    for (int64_t o = 0; o < count; o += inner) {
      const float* a = args.a + walk.offset_a();
      const float* b = args.b + walk.offset_b();
      float* out = args.out + o;
      for (int64_t j = 0; j < inner; ++j) {
        out[j] = ApplyActivation(ApplyBinary(args.op, a[j * stride_a], b[j * stride_b]), args.activation);
      }
      walk.Next();
    }
    return Status::Ok();
  }

  Status Activate(const KernelContext&, const ActivationArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckActivation(args, &count);
    if (!checked.ok() || count == 0) return checked;
    for (int64_t i = 0; i < count; ++i) args.out[i] = ApplyActivation(args.in[i], args.activation);
    return Status::Ok();
  }

  Status Softmax(const KernelContext&, const SoftmaxArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckSoftmax(args, &count);
    if (!checked.ok() || count == 0) return checked;
    const int64_t inner = args.inner;
    for (int64_t o = 0; o < args.outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const float* in = args.in + o * args.axis * inner + i;
        float* out = args.out + o * args.axis * inner + i;
        // Subtracting the maximum keeps every exp() argument <= 0: no
        // overflow for large logits, and the largest term is exactly 1.
        float max_value = in[0];
        for (int64_t a = 1; a < args.axis; ++a) {
          max_value = in[a * inner] > max_value ? in[a * inner] : max_value;
        }
        double sum = 0.0;
        for (int64_t a = 0; a < args.axis; ++a) {
          float e = std::exp(in[a * inner] - max_value);
          out[a * inner] = e;
          sum += e;
        }
        for (int64_t a = 0; a < args.axis; ++a) {
          out[a * inner] = static_cast<float>(out[a * inner] / sum);
        }
      }
    }
    return Status::Ok();
  }

  Status LayerNorm(const KernelContext&, const LayerNormArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckLayerNorm(args, &count);
    if (!checked.ok() || count == 0) return checked;
    for (int64_t r = 0; r < args.rows; ++r) {
      const float* in = args.in + r * args.cols;
      float* out = args.out + r * args.cols;
      // Two passes (mean, then the mean squared deviation): no catastrophic
      // cancellation as in E[x^2] - E[x]^2.
      double sum = 0.0;
      for (int64_t c = 0; c < args.cols; ++c) sum += in[c];
      const double mean = sum / static_cast<double>(args.cols);
      double squares = 0.0;
      for (int64_t c = 0; c < args.cols; ++c) {
        const double d = in[c] - mean;
        squares += d * d;
      }
      const double variance = squares / static_cast<double>(args.cols);
      const double inv_std = 1.0 / std::sqrt(variance + static_cast<double>(args.epsilon));
      for (int64_t c = 0; c < args.cols; ++c) {
        double value = (in[c] - mean) * inv_std * args.scale[c];
        if (args.bias != nullptr) value += args.bias[c];
        out[c] = static_cast<float>(value);
      }
    }
    return Status::Ok();
  }

  Status ChannelAffine(const KernelContext&, const ChannelAffineArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckChannelAffine(args, &count);
    if (!checked.ok() || count == 0) return checked;
    for (int64_t o = 0; o < args.outer; ++o) {
      for (int64_t c = 0; c < args.channels; ++c) {
        const int64_t base = (o * args.channels + c) * args.inner;
        const float scale = args.scale[c];
        const float shift = args.shift[c];
        for (int64_t i = 0; i < args.inner; ++i) args.out[base + i] = args.in[base + i] * scale + shift;
      }
    }
    return Status::Ok();
  }

  Status Reduce(const KernelContext&, const ReduceArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckReduce(args, &count);
    if (!checked.ok() || count == 0) return checked;
    for (int64_t o = 0; o < args.outer; ++o) {
      for (int64_t i = 0; i < args.inner; ++i) {
        double sum = 0.0;
        for (int64_t r = 0; r < args.reduce; ++r) sum += args.in[(o * args.reduce + r) * args.inner + i];
        float value = static_cast<float>(sum);
        if (args.mean) {
          // The mean of nothing is NaN (numpy, ONNX Runtime), not a division by zero.
          value = args.reduce > 0 ? static_cast<float>(sum / static_cast<double>(args.reduce))
                                  : std::numeric_limits<float>::quiet_NaN();
        }
        args.out[o * args.inner + i] = value;
      }
    }
    return Status::Ok();
  }

  Status Gather(const KernelContext&, const GatherArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckGather(args, &count);
    if (!checked.ok() || count == 0) return checked;
    // Every index is checked before anything is written.
    for (int64_t j = 0; j < args.count; ++j) {
      const int64_t index = IndexAt(args, j);
      if (index < -args.axis_len || index >= args.axis_len) {
        return detail::GatherIndexError(index, j, args.axis_len);
      }
    }
    const int64_t row_bytes = args.inner * args.element_bytes;
    const auto* data = static_cast<const unsigned char*>(args.data);
    auto* out = static_cast<unsigned char*>(args.out);
    for (int64_t o = 0; o < args.outer; ++o) {
      for (int64_t j = 0; j < args.count; ++j) {
        int64_t index = IndexAt(args, j);
        if (index < 0) index += args.axis_len;
        std::memcpy(out + (o * args.count + j) * row_bytes, data + (o * args.axis_len + index) * row_bytes,
                    static_cast<size_t>(row_bytes));
      }
    }
    return Status::Ok();
  }

  Status Transpose(const KernelContext&, const TransposeArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckTranspose(args, &count);
    if (!checked.ok() || count == 0) return checked;
    switch (args.element_bytes) {
      case 1: TransposeTyped<1>(args, count); break;
      case 2: TransposeTyped<2>(args, count); break;
      case 4: TransposeTyped<4>(args, count); break;
      case 8: TransposeTyped<8>(args, count); break;
      default: TransposeBytes(args, count); break;
    }
    return Status::Ok();
  }

  Status Copy2D(const KernelContext&, const Copy2DArgs& args) const override {
    int64_t bytes = 0;
    Status checked = detail::CheckCopy2D(args, &bytes);
    if (!checked.ok() || bytes == 0) return checked;
    if (args.src == args.dst) return Status::Ok();  // onto itself (the only overlap allowed)
    const auto* src = static_cast<const unsigned char*>(args.src);
    auto* dst = static_cast<unsigned char*>(args.dst);
    for (int64_t r = 0; r < args.rows; ++r) {
      std::memcpy(dst + r * args.dst_pitch, src + r * args.src_pitch, static_cast<size_t>(args.row_bytes));
    }
    return Status::Ok();
  }

  Status Cast(const KernelContext&, const CastArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckCast(args, &count);
    if (!checked.ok() || count == 0) return checked;
    if (args.from == args.to) {
      if (args.in != args.out) std::memcpy(args.out, args.in, static_cast<size_t>(count) * DTypeBytes(args.from));
      return Status::Ok();
    }
    for (int64_t i = 0; i < count; ++i) WriteFloat(args.to, args.out, i, ReadFloat(args.from, args.in, i));
    return Status::Ok();
  }

 private:
  static int64_t IndexAt(const GatherArgs& args, int64_t j) {
    return args.indices_int64 ? static_cast<const int64_t*>(args.indices)[j]
                              : static_cast<const int32_t*>(args.indices)[j];
  }

  // Only the float types CheckCast lets through.
  static size_t DTypeBytes(DType dtype) {
    return dtype == DType::kFloat16 ? 2 : dtype == DType::kFloat64 ? 8 : 4;
  }
};

}  // namespace

const KernelSet& HostKernels() {
  static const HostKernelSet kernels;
  return kernels;
}

}  // namespace hotpath::executor
