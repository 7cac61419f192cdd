// The kernel interface: one table of kernels per device kind, behind one
// abstract class, as ggml's backend interface does. The compiler
// (compiler.h) turns a graph into a flat list of calls on these; the host set
// (host_kernels.cc) is the readable reference, the CUDA set (cuda_kernels.cu)
// is tested against it.
//
// Conventions for every kernel:
//   - pointers are in the kernel set's memory space (device pointers for
//     CUDA, host pointers for host); all tensors are dense, row-major;
//   - float kernels compute in FP32 (no TF32, no reduced precision);
//   - element counts may be 0 (then nothing happens);
//   - a kernel never reads or writes outside the ranges its arguments
//     describe. Guard checks (null pointer with a non-zero count, rank over
//     kMaxRank) return INVALID_ARGUMENT; data errors (a Gather index out of
//     range) are reported through the returned Status on host and through
//     the context's `error_flag` on CUDA (ExecStream::Synchronize reads it
//     once per batch, after the sync);
//   - CUDA kernels are launched asynchronously on the instance's stream
//     (`stream` in the context); their Status reports launch errors only:
//     a failed CUDA call is UNAVAILABLE when the device recovers
//     (FaultClass kTransient, e.g. out of resources) and INTERNAL when the
//     context is lost (kSticky, e.g. an illegal address), the message naming
//     the call and the cudaError; guard checks stay INVALID_ARGUMENT.
//   - lda/ldb/ldc of 0 mean dense (the row length);
//   - element-wise kernels may run exactly in place (out == in, no
//     broadcast of that operand); any other overlap of an output with an
//     input is refused (INVALID_ARGUMENT), never computed wrong.
//
// Thread-safety: a KernelSet is immutable and shared by every instance; the
// per-call KernelContext says which stream/workspace an instance uses.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "executor/plan.h"

namespace hotpath::executor {

inline constexpr int kMaxRank = 8;

// Per-instance state a kernel may use: the CUDA stream (cudaStream_t as an
// opaque pointer; null on host) and an error word in the kernel set's memory
// (device memory on CUDA) that kernels set to a non-zero code on a data error.
// Take it from ExecStream::context() and pass it through unchanged.
struct KernelContext {
  void* stream = nullptr;
  uint32_t* error_flag = nullptr;  // may be null on host
  // The stream's own cuBLAS handle (cublasHandle_t, bound to `stream`) when
  // the set is "cuda+cublas"; cuBLAS handles must not be shared between
  // threads, so each ExecStream owns one. Null: Gemm uses the own SGEMM.
  void* blas_handle = nullptr;
};

// Fused epilogue of Gemm/MatMul and the stand-alone activation kernel.
enum class Activation : int32_t {
  kNone,
  kRelu,
  kLeakyRelu,  // x < 0 ? alpha * x : x
  kSigmoid,
  kTanh,
  kClip,  // min(max(x, lo), hi)
};

struct ActivationParams {
  Activation kind = Activation::kNone;
  float alpha = 0.01f;  // LeakyRelu
  float lo = -3.402823466e+38f;  // Clip
  float hi = 3.402823466e+38f;
};

// C[b] = act(alpha * op(A[b]) @ op(B[b]) + beta * bias), for b in [0, batch).
// op(X) is X or its transpose. A row-major M x K (or K x M when trans_a),
// B K x N (or N x K when trans_b), C M x N with leading dimension ldc.
// Batch strides are in elements; a stride of 0 broadcasts that operand.
// Bias (nullable) broadcasts to M x N per bias_kind; its batch stride is
// bias_stride (0: shared by every batch).
enum class BiasKind : int32_t { kNone, kScalar, kRow /* [N] */, kColumn /* [M] */, kFull /* [M,N] */ };
struct GemmArgs {
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1.0f;
  const float* bias = nullptr;
  BiasKind bias_kind = BiasKind::kNone;
  float beta = 1.0f;
  int64_t bias_stride = 0;
  ActivationParams activation;
};

// out[i] = a[idx_a(i)] op b[idx_b(i)] with ONNX (numpy) broadcasting: out has
// `rank` dims; a_strides/b_strides are the operands' strides in elements with
// 0 on broadcast dimensions.
enum class BinaryOp : int32_t { kAdd, kSub, kMul, kDiv };
struct BinaryArgs {
  BinaryOp op = BinaryOp::kAdd;
  const float* a = nullptr;
  const float* b = nullptr;
  float* out = nullptr;
  int32_t rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
  ActivationParams activation;  // fused epilogue (kNone: plain)
};

// out[i] = act(in[i]) for i < count (in == out allowed).
struct ActivationArgs {
  const float* in = nullptr;
  float* out = nullptr;
  int64_t count = 0;
  ActivationParams activation;
};

// Softmax over the middle dimension of [outer, axis, inner].
struct SoftmaxArgs {
  const float* in = nullptr;
  float* out = nullptr;
  int64_t outer = 0, axis = 0, inner = 0;
};

// LayerNormalization over the last `cols` elements of each of `rows` rows:
// out = (x - mean) / sqrt(var + epsilon) * scale + bias (bias nullable);
// scale and bias hold `cols` elements.
struct LayerNormArgs {
  const float* in = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t rows = 0, cols = 0;
  float epsilon = 1e-5f;
};

// out[o, c, i] = in[o, c, i] * scale[c] + shift[c] over [outer, channels,
// inner]: inference BatchNormalization after the compiler folds mean, var,
// epsilon, scale and bias into scale/shift.
struct ChannelAffineArgs {
  const float* in = nullptr;
  const float* scale = nullptr;
  const float* shift = nullptr;
  float* out = nullptr;
  int64_t outer = 0, channels = 0, inner = 0;
};

// Sum (or mean) over the middle dimension of [outer, reduce, inner].
struct ReduceArgs {
  const float* in = nullptr;
  float* out = nullptr;
  int64_t outer = 0, reduce = 0, inner = 0;
  bool mean = false;
};

// out[o, j, :] = data[o, idx[j] (+axis_len if negative), :] over data
// [outer, axis_len, inner] and `count` indices (INT64 or INT32). An index
// outside [-axis_len, axis_len) is a data error: host returns INVALID_ARGUMENT
// naming it; CUDA writes zeros for that row and sets the error flag to 1.
// Elements are `element_bytes` wide (the data may be any dtype).
struct GatherArgs {
  const void* data = nullptr;
  const void* indices = nullptr;
  bool indices_int64 = true;
  void* out = nullptr;
  int64_t outer = 0, axis_len = 0, inner = 0, count = 0;
  uint32_t element_bytes = 4;
};

// out = transpose(in): out_dims[k] = in_dims[perm[k]]; in_strides_permuted[k]
// is the input stride (elements) of the input dimension that becomes output
// dimension k.
struct TransposeArgs {
  const void* in = nullptr;
  void* out = nullptr;
  uint32_t element_bytes = 4;
  int32_t rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides_permuted[kMaxRank] = {};
};

// Copies `rows` rows of `row_bytes` bytes; source rows are src_pitch bytes
// apart, destination rows dst_pitch (Concat, and plain copies with rows 1).
struct Copy2DArgs {
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t rows = 0, row_bytes = 0, src_pitch = 0, dst_pitch = 0;
};

// Element-wise conversion between float types (FLOAT, FLOAT16, DOUBLE);
// FLOAT16 is IEEE binary16 stored as uint16, rounded to nearest even.
struct CastArgs {
  const void* in = nullptr;
  void* out = nullptr;
  int64_t count = 0;
  DType from = DType::kFloat32;
  DType to = DType::kFloat32;
};

class KernelSet {
 public:
  virtual ~KernelSet() = default;
  // "host", "cuda" or "cuda+cublas": logged and shown in /healthz details.
  virtual const char* name() const = 0;

  virtual Status Gemm(const KernelContext& ctx, const GemmArgs& args) const = 0;
  virtual Status Binary(const KernelContext& ctx, const BinaryArgs& args) const = 0;
  virtual Status Activate(const KernelContext& ctx, const ActivationArgs& args) const = 0;
  virtual Status Softmax(const KernelContext& ctx, const SoftmaxArgs& args) const = 0;
  virtual Status LayerNorm(const KernelContext& ctx, const LayerNormArgs& args) const = 0;
  virtual Status ChannelAffine(const KernelContext& ctx, const ChannelAffineArgs& args) const = 0;
  virtual Status Reduce(const KernelContext& ctx, const ReduceArgs& args) const = 0;
  virtual Status Gather(const KernelContext& ctx, const GatherArgs& args) const = 0;
  virtual Status Transpose(const KernelContext& ctx, const TransposeArgs& args) const = 0;
  virtual Status Copy2D(const KernelContext& ctx, const Copy2DArgs& args) const = 0;
  virtual Status Cast(const KernelContext& ctx, const CastArgs& args) const = 0;
};

// The portable C++ reference set. Never fails except for guard checks and
// Gather's index check.
const KernelSet& HostKernels();

}  // namespace hotpath::executor
