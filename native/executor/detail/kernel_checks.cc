// Guard checks shared by the kernel sets. See kernel_checks.h.
#include "executor/detail/kernel_checks.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace hotpath::executor::detail {

namespace {

Status Invalid(const char* kernel, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, std::string(kernel) + ": " + what);
}

std::string Str(int64_t value) { return std::to_string(value); }

// a * b into *out; false on a negative operand or int64 overflow.
bool Mul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_mul_overflow(a, b, out);
}

// The product of `count` sizes (a shape's element count); false on a
// negative size or overflow.
bool Product(const int64_t* sizes, int count, int64_t* out) {
  int64_t total = 1;
  for (int i = 0; i < count; ++i) {
    if (!Mul(total, sizes[i], &total)) return false;
  }
  *out = total;
  return true;
}

// One past the highest element index touched by `batch` matrices of `rows`
// rows of `cols` elements, rows `ld` apart, matrices `stride` apart (0 when
// nothing is touched). False on overflow.
bool Span(int64_t batch, int64_t stride, int64_t rows, int64_t ld, int64_t cols, int64_t* out) {
  if (batch == 0 || rows == 0 || cols == 0) {
    *out = 0;
    return true;
  }
  int64_t batch_part = 0, row_part = 0, total = 0;
  if (!Mul(batch - 1, stride, &batch_part) || !Mul(rows - 1, ld, &row_part)) return false;
  if (__builtin_add_overflow(batch_part, row_part, &total)) return false;
  if (__builtin_add_overflow(total, cols, &total)) return false;
  *out = total;
  return true;
}

// One past the highest element index a strided view of `dims` touches.
bool StridedSpan(const int64_t* dims, const int64_t* strides, int rank, int64_t* out) {
  int64_t last = 0;
  for (int d = 0; d < rank; ++d) {
    if (dims[d] == 0) {
      *out = 0;
      return true;
    }
    int64_t part = 0;
    if (strides[d] < 0 || !Mul(dims[d] - 1, strides[d], &part)) return false;
    if (__builtin_add_overflow(last, part, &last)) return false;
  }
  *out = last + 1;
  return true;
}

bool ValidActivation(const ActivationParams& p) {
  return static_cast<int32_t>(p.kind) >= static_cast<int32_t>(Activation::kNone) &&
         static_cast<int32_t>(p.kind) <= static_cast<int32_t>(Activation::kClip);
}

// Whether byte ranges [a, a + a_bytes) and [b, b + b_bytes) share a byte.
// Kernels that read other elements than the one they write (Gemm, Gather,
// Transpose, a widening Cast) refuse such aliasing instead of computing
// garbage.
bool Overlap(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  auto start_a = reinterpret_cast<uintptr_t>(a);
  auto start_b = reinterpret_cast<uintptr_t>(b);
  uintptr_t end_a = start_a + static_cast<uintptr_t>(a_bytes);
  uintptr_t end_b = start_b + static_cast<uintptr_t>(b_bytes);
  return start_a < end_b && start_b < end_a;
}

int64_t FloatBytes(int64_t elements) { return elements * static_cast<int64_t>(sizeof(float)); }

// Element-wise kernels may run in place (out == in, each element read by the
// thread that writes it) but not on partially overlapping ranges.
bool InPlaceOrDisjoint(const void* out, const void* in, int64_t bytes) {
  return out == in || !Overlap(out, bytes, in, bytes);
}

// Whether a strided operand reads element i exactly where a dense output
// of `dims` writes it (so out == operand is a safe in-place update).
bool DenseLike(const int64_t* dims, const int64_t* strides, int rank) {
  int64_t dense = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (dims[d] > 1 && strides[d] != dense) return false;
    dense *= dims[d];
  }
  return true;
}

const char* FloatDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "FLOAT";
    case DType::kFloat16:
      return "FLOAT16";
    case DType::kFloat64:
      return "DOUBLE";
    default:
      return nullptr;
  }
}

}  // namespace

Status CheckGemm(const GemmArgs& args, GemmArgs* resolved, int64_t* work) {
  *work = 0;
  *resolved = args;
  if (args.m < 0 || args.n < 0 || args.k < 0 || args.batch < 0) {
    return Invalid("Gemm", "negative size (m " + Str(args.m) + ", n " + Str(args.n) + ", k " +
                               Str(args.k) + ", batch " + Str(args.batch) + ")");
  }
  if (args.lda < 0 || args.ldb < 0 || args.ldc < 0 || args.stride_a < 0 || args.stride_b < 0 ||
      args.stride_c < 0 || args.bias_stride < 0) {
    return Invalid("Gemm", "negative leading dimension or batch stride");
  }
  if (!ValidActivation(args.activation)) return Invalid("Gemm", "unknown activation");
  const auto bias_kind = static_cast<int32_t>(args.bias_kind);
  if (bias_kind < static_cast<int32_t>(BiasKind::kNone) ||
      bias_kind > static_cast<int32_t>(BiasKind::kFull)) {
    return Invalid("Gemm", "unknown bias kind " + Str(bias_kind));
  }

  // op(A) is m x k: stored m x k (rows m) or, transposed, k x m.
  const int64_t a_rows = args.trans_a ? args.k : args.m;
  const int64_t a_cols = args.trans_a ? args.m : args.k;
  const int64_t b_rows = args.trans_b ? args.n : args.k;
  const int64_t b_cols = args.trans_b ? args.k : args.n;
  if (resolved->lda == 0) resolved->lda = a_cols;
  if (resolved->ldb == 0) resolved->ldb = b_cols;
  if (resolved->ldc == 0) resolved->ldc = args.n;
  if (resolved->lda < a_cols) return Invalid("Gemm", "lda " + Str(resolved->lda) + " < " + Str(a_cols));
  if (resolved->ldb < b_cols) return Invalid("Gemm", "ldb " + Str(resolved->ldb) + " < " + Str(b_cols));
  if (resolved->ldc < args.n) return Invalid("Gemm", "ldc " + Str(resolved->ldc) + " < n " + Str(args.n));

  int64_t c_elements = 0;
  if (!Mul(args.m, args.n, &c_elements) || !Mul(c_elements, args.batch, &c_elements)) {
    return Invalid("Gemm", "output size overflows");
  }
  if (c_elements == 0) return Status::Ok();

  int64_t span_a = 0, span_b = 0, span_c = 0, bias_len = 0;
  if (!Span(args.batch, args.stride_a, a_rows, resolved->lda, a_cols, &span_a) ||
      !Span(args.batch, args.stride_b, b_rows, resolved->ldb, b_cols, &span_b) ||
      !Span(args.batch, args.stride_c, args.m, resolved->ldc, args.n, &span_c)) {
    return Invalid("Gemm", "operand extent overflows");
  }
  if (args.batch > 1) {
    // Distinct batches must write distinct outputs.
    int64_t one_c = 0;
    Span(1, 0, args.m, resolved->ldc, args.n, &one_c);
    if (args.stride_c < one_c) {
      return Invalid("Gemm", "stride_c " + Str(args.stride_c) + " makes batches overlap (needs >= " +
                                 Str(one_c) + ")");
    }
  }
  if (args.c == nullptr) return Invalid("Gemm", "null C");
  if (args.k > 0) {
    if (args.a == nullptr) return Invalid("Gemm", "null A");
    if (args.b == nullptr) return Invalid("Gemm", "null B");
    if (Overlap(args.c, FloatBytes(span_c), args.a, FloatBytes(span_a))) {
      return Invalid("Gemm", "C overlaps A");
    }
    if (Overlap(args.c, FloatBytes(span_c), args.b, FloatBytes(span_b))) {
      return Invalid("Gemm", "C overlaps B");
    }
  }
  if (args.bias_kind != BiasKind::kNone) {
    if (args.bias == nullptr) return Invalid("Gemm", "null bias with a bias kind");
    switch (args.bias_kind) {
      case BiasKind::kScalar: bias_len = 1; break;
      case BiasKind::kRow: bias_len = args.n; break;
      case BiasKind::kColumn: bias_len = args.m; break;
      default: bias_len = c_elements / args.batch; break;
    }
    int64_t span_bias = 0;
    if (!Span(args.batch, args.bias_stride, 1, 0, bias_len, &span_bias)) {
      return Invalid("Gemm", "bias extent overflows");
    }
    // cuBLAS writes C before the epilogue reads the bias.
    if (Overlap(args.c, FloatBytes(span_c), args.bias, FloatBytes(span_bias))) {
      return Invalid("Gemm", "C overlaps the bias");
    }
  }
  *work = c_elements;
  return Status::Ok();
}

Status CheckBinary(const BinaryArgs& args, int64_t* work) {
  *work = 0;
  const auto op = static_cast<int32_t>(args.op);
  if (op < static_cast<int32_t>(BinaryOp::kAdd) || op > static_cast<int32_t>(BinaryOp::kDiv)) {
    return Invalid("Binary", "unknown op " + Str(op));
  }
  if (args.rank < 0 || args.rank > kMaxRank) {
    return Invalid("Binary", "rank " + Str(args.rank) + " outside [0, " + Str(kMaxRank) + "]");
  }
  if (!ValidActivation(args.activation)) return Invalid("Binary", "unknown activation");
  int64_t count = 0, span_a = 0, span_b = 0;
  if (!Product(args.out_dims, args.rank, &count)) return Invalid("Binary", "bad output shape");
  if (!StridedSpan(args.out_dims, args.a_strides, args.rank, &span_a) ||
      !StridedSpan(args.out_dims, args.b_strides, args.rank, &span_b)) {
    return Invalid("Binary", "negative or overflowing operand strides");
  }
  if (count == 0) return Status::Ok();
  if (args.a == nullptr || args.b == nullptr || args.out == nullptr) {
    return Invalid("Binary", "null operand or output");
  }
  const int64_t out_bytes = FloatBytes(count);
  const bool a_ok = !Overlap(args.out, out_bytes, args.a, FloatBytes(span_a)) ||
                    (args.out == args.a && DenseLike(args.out_dims, args.a_strides, args.rank));
  const bool b_ok = !Overlap(args.out, out_bytes, args.b, FloatBytes(span_b)) ||
                    (args.out == args.b && DenseLike(args.out_dims, args.b_strides, args.rank));
  if (!a_ok || !b_ok) return Invalid("Binary", "output overlaps a broadcast or shifted operand");
  *work = count;
  return Status::Ok();
}

Status CheckActivation(const ActivationArgs& args, int64_t* work) {
  *work = 0;
  if (args.count < 0) return Invalid("Activate", "negative count " + Str(args.count));
  if (!ValidActivation(args.activation)) return Invalid("Activate", "unknown activation");
  if (args.count == 0) return Status::Ok();
  if (args.in == nullptr || args.out == nullptr) return Invalid("Activate", "null input or output");
  if (!InPlaceOrDisjoint(args.out, args.in, FloatBytes(args.count))) {
    return Invalid("Activate", "output partially overlaps input");
  }
  *work = args.count;
  return Status::Ok();
}

Status CheckSoftmax(const SoftmaxArgs& args, int64_t* work) {
  *work = 0;
  const int64_t sizes[] = {args.outer, args.axis, args.inner};
  int64_t count = 0;
  if (!Product(sizes, 3, &count)) return Invalid("Softmax", "negative or overflowing shape");
  if (count == 0) return Status::Ok();
  if (args.in == nullptr || args.out == nullptr) return Invalid("Softmax", "null input or output");
  if (!InPlaceOrDisjoint(args.out, args.in, FloatBytes(count))) {
    return Invalid("Softmax", "output partially overlaps input");
  }
  *work = count;
  return Status::Ok();
}

Status CheckLayerNorm(const LayerNormArgs& args, int64_t* work) {
  *work = 0;
  const int64_t sizes[] = {args.rows, args.cols};
  int64_t count = 0;
  if (!Product(sizes, 2, &count)) return Invalid("LayerNorm", "negative or overflowing shape");
  if (!(args.epsilon >= 0.0f) || std::isinf(args.epsilon)) {
    return Invalid("LayerNorm", "epsilon must be finite and >= 0");
  }
  if (count == 0) return Status::Ok();
  if (args.in == nullptr || args.out == nullptr || args.scale == nullptr) {
    return Invalid("LayerNorm", "null input, output or scale");
  }
  if (!InPlaceOrDisjoint(args.out, args.in, FloatBytes(count)) ||
      Overlap(args.out, FloatBytes(count), args.scale, FloatBytes(args.cols)) ||
      (args.bias != nullptr && Overlap(args.out, FloatBytes(count), args.bias, FloatBytes(args.cols)))) {
    return Invalid("LayerNorm", "output overlaps an input other than in place");
  }
  *work = count;
  return Status::Ok();
}

Status CheckChannelAffine(const ChannelAffineArgs& args, int64_t* work) {
  *work = 0;
  const int64_t sizes[] = {args.outer, args.channels, args.inner};
  int64_t count = 0;
  if (!Product(sizes, 3, &count)) return Invalid("ChannelAffine", "negative or overflowing shape");
  if (count == 0) return Status::Ok();
  if (args.in == nullptr || args.out == nullptr || args.scale == nullptr || args.shift == nullptr) {
    return Invalid("ChannelAffine", "null input, output, scale or shift");
  }
  if (!InPlaceOrDisjoint(args.out, args.in, FloatBytes(count))) {
    return Invalid("ChannelAffine", "output partially overlaps input");
  }
  *work = count;
  return Status::Ok();
}

Status CheckReduce(const ReduceArgs& args, int64_t* work) {
  *work = 0;
  const int64_t in_sizes[] = {args.outer, args.reduce, args.inner};
  const int64_t out_sizes[] = {args.outer, args.inner};
  int64_t in_count = 0, out_count = 0;
  if (!Product(in_sizes, 3, &in_count) || !Product(out_sizes, 2, &out_count)) {
    return Invalid("Reduce", "negative or overflowing shape");
  }
  if (out_count == 0) return Status::Ok();
  if (args.out == nullptr) return Invalid("Reduce", "null output");
  if (in_count > 0 && args.in == nullptr) return Invalid("Reduce", "null input");
  if (Overlap(args.out, FloatBytes(out_count), args.in, FloatBytes(in_count))) {
    return Invalid("Reduce", "output overlaps input");
  }
  *work = out_count;
  return Status::Ok();
}

Status CheckGather(const GatherArgs& args, int64_t* work) {
  *work = 0;
  if (args.element_bytes == 0) return Invalid("Gather", "element_bytes is 0");
  const int64_t data_sizes[] = {args.outer, args.axis_len, args.inner, args.element_bytes};
  const int64_t out_sizes[] = {args.outer, args.count, args.inner, args.element_bytes};
  int64_t data_bytes = 0, out_bytes = 0;
  if (!Product(data_sizes, 4, &data_bytes) || !Product(out_sizes, 4, &out_bytes)) {
    return Invalid("Gather", "negative or overflowing shape");
  }
  if (out_bytes == 0) return Status::Ok();
  if (args.out == nullptr || args.indices == nullptr) return Invalid("Gather", "null output or indices");
  if (data_bytes > 0 && args.data == nullptr) return Invalid("Gather", "null data");
  if (Overlap(args.out, out_bytes, args.data, data_bytes)) return Invalid("Gather", "output overlaps data");
  *work = out_bytes / args.element_bytes;
  return Status::Ok();
}

Status CheckTranspose(const TransposeArgs& args, int64_t* work) {
  *work = 0;
  if (args.element_bytes == 0) return Invalid("Transpose", "element_bytes is 0");
  if (args.rank < 0 || args.rank > kMaxRank) {
    return Invalid("Transpose", "rank " + Str(args.rank) + " outside [0, " + Str(kMaxRank) + "]");
  }
  int64_t count = 0, span = 0, out_bytes = 0, in_bytes = 0;
  if (!Product(args.out_dims, args.rank, &count) || !Mul(count, args.element_bytes, &out_bytes)) {
    return Invalid("Transpose", "bad output shape");
  }
  if (!StridedSpan(args.out_dims, args.in_strides_permuted, args.rank, &span) ||
      !Mul(span, args.element_bytes, &in_bytes)) {
    return Invalid("Transpose", "negative or overflowing input strides");
  }
  if (count == 0) return Status::Ok();
  if (args.in == nullptr || args.out == nullptr) return Invalid("Transpose", "null input or output");
  if (Overlap(args.out, out_bytes, args.in, in_bytes)) return Invalid("Transpose", "output overlaps input");
  *work = count;
  return Status::Ok();
}

Status CheckCopy2D(const Copy2DArgs& args, int64_t* work) {
  *work = 0;
  if (args.rows < 0 || args.row_bytes < 0 || args.src_pitch < 0 || args.dst_pitch < 0) {
    return Invalid("Copy2D", "negative rows, row_bytes or pitch");
  }
  if (args.rows > 1 && (args.src_pitch < args.row_bytes || args.dst_pitch < args.row_bytes)) {
    return Invalid("Copy2D", "pitch (src " + Str(args.src_pitch) + ", dst " + Str(args.dst_pitch) +
                                 ") < row_bytes " + Str(args.row_bytes));
  }
  int64_t bytes = 0, span_src = 0, span_dst = 0;
  if (!Mul(args.rows, args.row_bytes, &bytes) ||
      !Span(1, 0, args.rows, args.src_pitch, args.row_bytes, &span_src) ||
      !Span(1, 0, args.rows, args.dst_pitch, args.row_bytes, &span_dst)) {
    return Invalid("Copy2D", "extent overflows");
  }
  if (bytes == 0) return Status::Ok();
  if (args.src == nullptr || args.dst == nullptr) return Invalid("Copy2D", "null source or destination");
  // A copy onto itself (same pointer and pitch) is a no-op; any other
  // overlap would depend on the copy order.
  const bool identity = args.src == args.dst && (args.rows == 1 || args.src_pitch == args.dst_pitch);
  if (!identity && Overlap(args.dst, span_dst, args.src, span_src)) {
    return Invalid("Copy2D", "destination overlaps source");
  }
  *work = bytes;
  return Status::Ok();
}

Status CheckCast(const CastArgs& args, int64_t* work) {
  *work = 0;
  if (FloatDTypeName(args.from) == nullptr || FloatDTypeName(args.to) == nullptr) {
    return Invalid("Cast", "unsupported conversion " + Str(static_cast<int32_t>(args.from)) + " -> " +
                               Str(static_cast<int32_t>(args.to)) +
                               " (FLOAT, FLOAT16 and DOUBLE only)");
  }
  int64_t bytes = 0;
  if (args.count < 0 || !Mul(args.count, 8, &bytes)) return Invalid("Cast", "bad count " + Str(args.count));
  if (args.count == 0) return Status::Ok();
  if (args.in == nullptr || args.out == nullptr) return Invalid("Cast", "null input or output");
  const int64_t from_bytes = args.count * (args.from == DType::kFloat16 ? 2 : args.from == DType::kFloat64 ? 8 : 4);
  const int64_t to_bytes = args.count * (args.to == DType::kFloat16 ? 2 : args.to == DType::kFloat64 ? 8 : 4);
  // Only an exact in-place copy (same pointer, same type: a no-op) may
  // overlap; anything else would overwrite input not yet read.
  const bool identity = args.in == args.out && args.from == args.to;
  if (!identity && Overlap(args.out, to_bytes, args.in, from_bytes)) {
    return Invalid("Cast", "output overlaps input");
  }
  *work = args.count;
  return Status::Ok();
}

Status GatherIndexError(int64_t value, int64_t position, int64_t axis_len) {
  return Status(StatusCode::kInvalidArgument, "Gather index " + Str(value) + " at position " +
                                                  Str(position) + " is out of range for axis length " +
                                                  Str(axis_len));
}

}  // namespace hotpath::executor::detail
