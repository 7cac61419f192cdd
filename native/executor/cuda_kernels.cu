// The CUDA kernel set: every kernel of kernels.h but Gemm's (cuda_gemm.cu).
// See cuda_kernels.h.
//
// Shapes: element-wise kernels use one thread per output element in
// grid-stride loops (int64 indices, so any size runs with a capped grid);
// row reductions (softmax over a contiguous axis, layer norm, reduce over
// a contiguous axis) use one 256-thread block per row with warp-shuffle
// reductions; reductions over a strided axis use one thread per output,
// which keeps the loads coalesced across neighbouring outputs.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "executor/cuda_kernels.h"
#include "executor/detail/cuda_status.h"
#include "executor/detail/kernel_checks.h"
#include "executor/detail/kernel_math.h"

namespace hotpath::executor {

namespace {

using detail::ApplyActivation;
using detail::CheckLaunch;

constexpr int kThreads = 256;            // every kernel's block size
constexpr int64_t kMaxBlocks = 1 << 20;  // grid cap; grid-stride loops do the rest
constexpr int64_t kMaxRowBlocks = 65535 * 16;

unsigned BlocksFor(int64_t count) {
  return static_cast<unsigned>(std::min<int64_t>((count + kThreads - 1) / kThreads, kMaxBlocks));
}
unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(std::min<int64_t>(rows, kMaxRowBlocks)); }
cudaStream_t StreamOf(const KernelContext& ctx) { return static_cast<cudaStream_t>(ctx.stream); }

// Thread index and stride of a 1-D grid-stride loop.
__device__ int64_t GlobalThread() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ int64_t GridThreads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return b > a ? b : a; }
};

// Reduces `value` over the block (blockDim.x a multiple of 32, <= 1024);
// every thread gets the result. `scratch` holds 33 floats of shared memory.
// Safe to call repeatedly with the same scratch.
template <typename Op>
__device__ float BlockReduce(float value, Op op, float identity, float* scratch) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  for (int offset = 16; offset > 0; offset >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();  // the previous call's readers of scratch are done
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < blockDim.x / 32 ? scratch[lane] : identity;
    for (int offset = 16; offset > 0; offset >>= 1) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
    if (lane == 0) scratch[32] = value;
  }
  __syncthreads();
  return scratch[32];
}

__device__ float ApplyBinary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
  }
  return 0.0f;
}

// --- Element-wise ---------------------------------------------------------------

__global__ void BinaryKernel(BinaryArgs args, int64_t count) {
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = args.rank - 1; d >= 0; --d) {
      const int64_t coord = rest % args.out_dims[d];
      rest /= args.out_dims[d];
      ia += coord * args.a_strides[d];
      ib += coord * args.b_strides[d];
    }
    args.out[i] = ApplyActivation(ApplyBinary(args.op, args.a[ia], args.b[ib]), args.activation);
  }
}

__global__ void ActivationKernel(ActivationArgs args) {
  for (int64_t i = GlobalThread(); i < args.count; i += GridThreads()) {
    args.out[i] = ApplyActivation(args.in[i], args.activation);
  }
}

__global__ void ChannelAffineKernel(ChannelAffineArgs args, int64_t count) {
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    const int64_t c = (i / args.inner) % args.channels;
    args.out[i] = args.in[i] * args.scale[c] + args.shift[c];
  }
}

// --- Softmax, LayerNorm, Reduce -------------------------------------------------

// Softmax over contiguous rows (inner == 1): one block per row.
__global__ void SoftmaxRowKernel(SoftmaxArgs args) {
  __shared__ float scratch[33];
  for (int64_t row = blockIdx.x; row < args.outer; row += gridDim.x) {
    const float* in = args.in + row * args.axis;
    float* out = args.out + row * args.axis;
    float max_value = -INFINITY;
    for (int64_t c = threadIdx.x; c < args.axis; c += blockDim.x) max_value = MaxOp()(max_value, in[c]);
    max_value = BlockReduce(max_value, MaxOp(), -INFINITY, scratch);
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < args.axis; c += blockDim.x) sum += expf(in[c] - max_value);
    sum = BlockReduce(sum, SumOp(), 0.0f, scratch);
    for (int64_t c = threadIdx.x; c < args.axis; c += blockDim.x) out[c] = expf(in[c] - max_value) / sum;
  }
}

// Softmax over a strided axis (inner > 1): one thread per (outer, inner).
__global__ void SoftmaxColumnKernel(SoftmaxArgs args, int64_t columns) {
  for (int64_t col = GlobalThread(); col < columns; col += GridThreads()) {
    const int64_t o = col / args.inner;
    const int64_t i = col % args.inner;
    const float* in = args.in + o * args.axis * args.inner + i;
    float* out = args.out + o * args.axis * args.inner + i;
    float max_value = -INFINITY;
    for (int64_t a = 0; a < args.axis; ++a) max_value = MaxOp()(max_value, in[a * args.inner]);
    float sum = 0.0f;
    for (int64_t a = 0; a < args.axis; ++a) sum += expf(in[a * args.inner] - max_value);
    for (int64_t a = 0; a < args.axis; ++a) out[a * args.inner] = expf(in[a * args.inner] - max_value) / sum;
  }
}

// Two passes over the row (mean, then mean squared deviation), as the host.
// The mean is summed relative to the row's first element: a row with a large
// common offset then sums small numbers, and the float sum stays accurate.
__global__ void LayerNormKernel(LayerNormArgs args) {
  __shared__ float scratch[33];
  for (int64_t row = blockIdx.x; row < args.rows; row += gridDim.x) {
    const float* in = args.in + row * args.cols;
    float* out = args.out + row * args.cols;
    const float shift = in[0];
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < args.cols; c += blockDim.x) sum += in[c] - shift;
    const float mean = shift + BlockReduce(sum, SumOp(), 0.0f, scratch) / static_cast<float>(args.cols);
    float squares = 0.0f;
    for (int64_t c = threadIdx.x; c < args.cols; c += blockDim.x) {
      const float d = in[c] - mean;
      squares += d * d;
    }
    const float variance = BlockReduce(squares, SumOp(), 0.0f, scratch) / static_cast<float>(args.cols);
    const float inv_std = 1.0f / sqrtf(variance + args.epsilon);
    for (int64_t c = threadIdx.x; c < args.cols; c += blockDim.x) {
      float value = (in[c] - mean) * inv_std * args.scale[c];
      if (args.bias != nullptr) value += args.bias[c];
      out[c] = value;
    }
  }
}

__device__ float FinishReduce(float sum, const ReduceArgs& args) {
  if (!args.mean) return sum;
  // The mean of nothing is NaN, as on the host.
  return args.reduce > 0 ? sum / static_cast<float>(args.reduce) : __int_as_float(0x7fc00000);
}

// Reduce over contiguous rows (inner == 1): one block per output.
__global__ void ReduceRowKernel(ReduceArgs args) {
  __shared__ float scratch[33];
  for (int64_t row = blockIdx.x; row < args.outer; row += gridDim.x) {
    const float* in = args.in + row * args.reduce;
    float sum = 0.0f;
    for (int64_t r = threadIdx.x; r < args.reduce; r += blockDim.x) sum += in[r];
    sum = BlockReduce(sum, SumOp(), 0.0f, scratch);
    if (threadIdx.x == 0) args.out[row] = FinishReduce(sum, args);
  }
}

// Reduce over a strided axis: one thread per (outer, inner) output.
__global__ void ReduceColumnKernel(ReduceArgs args, int64_t outputs) {
  for (int64_t col = GlobalThread(); col < outputs; col += GridThreads()) {
    const int64_t o = col / args.inner;
    const int64_t i = col % args.inner;
    float sum = 0.0f;
    for (int64_t r = 0; r < args.reduce; ++r) sum += args.in[(o * args.reduce + r) * args.inner + i];
    args.out[col] = FinishReduce(sum, args);
  }
}

// --- Data movement ----------------------------------------------------------------

// Copies one element of T (a 1/2/4/8-byte type, pointers aligned to it) or,
// with T = unsigned char and `bytes` > 1, `bytes` bytes one by one.
template <typename T>
__device__ void CopyElement(const void* src, int64_t src_index, void* dst, int64_t dst_index, int64_t bytes) {
  if (sizeof(T) > 1 || bytes == 1) {
    static_cast<T*>(dst)[dst_index] = static_cast<const T*>(src)[src_index];
    return;
  }
  const auto* s = static_cast<const unsigned char*>(src) + src_index * bytes;
  auto* d = static_cast<unsigned char*>(dst) + dst_index * bytes;
  for (int64_t b = 0; b < bytes; ++b) d[b] = s[b];
}

template <typename T>
__device__ void ZeroElement(void* dst, int64_t dst_index, int64_t bytes) {
  if (sizeof(T) > 1 || bytes == 1) {
    static_cast<T*>(dst)[dst_index] = T{};
    return;
  }
  auto* d = static_cast<unsigned char*>(dst) + dst_index * bytes;
  for (int64_t b = 0; b < bytes; ++b) d[b] = 0;
}

// out[o, j, e] = data[o, idx[j], e]; an index out of range writes zeros and
// raises the stream's error flag (read by ExecStream::Synchronize).
template <typename T>
__global__ void GatherKernel(GatherArgs args, int64_t count, unsigned int* error_flag) {
  const int64_t bytes = args.element_bytes;
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    const int64_t e = i % args.inner;
    const int64_t rest = i / args.inner;
    const int64_t j = rest % args.count;
    const int64_t o = rest / args.count;
    int64_t index = args.indices_int64 ? static_cast<const int64_t*>(args.indices)[j]
                                       : static_cast<const int32_t*>(args.indices)[j];
    if (index < -args.axis_len || index >= args.axis_len) {
      ZeroElement<T>(args.out, i, bytes);
      atomicExch(error_flag, 1u);
      continue;
    }
    if (index < 0) index += args.axis_len;
    CopyElement<T>(args.data, (o * args.axis_len + index) * args.inner + e, args.out, i, bytes);
  }
}

template <typename T>
__global__ void TransposeKernel(TransposeArgs args, int64_t count) {
  const int64_t bytes = args.element_bytes;
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    int64_t rest = i, source = 0;
    for (int d = args.rank - 1; d >= 0; --d) {
      source += (rest % args.out_dims[d]) * args.in_strides_permuted[d];
      rest /= args.out_dims[d];
    }
    CopyElement<T>(args.in, source, args.out, i, bytes);
  }
}

__global__ void CastKernel(CastArgs args) {
  for (int64_t i = GlobalThread(); i < args.count; i += GridThreads()) {
    double value = 0.0;
    switch (args.from) {
      case DType::kFloat16: value = detail::WidenFloat(detail::HalfBitsToFloat(static_cast<const uint16_t*>(args.in)[i])); break;
      case DType::kFloat64: value = static_cast<const double*>(args.in)[i]; break;
      default: value = detail::WidenFloat(static_cast<const float*>(args.in)[i]); break;
    }
    // One rounding from double to the destination, canonical NaNs (as the host).
    switch (args.to) {
      case DType::kFloat16: static_cast<uint16_t*>(args.out)[i] = detail::DoubleToHalfBits(value); break;
      case DType::kFloat64: static_cast<double*>(args.out)[i] = value; break;
      default: static_cast<float*>(args.out)[i] = detail::NarrowDouble(value); break;
    }
  }
}

bool Aligned(const void* pointer, size_t alignment) {
  return reinterpret_cast<uintptr_t>(pointer) % alignment == 0;
}

// Launches Kernel<T> for the element size: a native type when the pointers
// allow it, bytes otherwise.
template <template <typename> class Launcher, typename Launch>
Status DispatchBySize(const Launch& launch, const void* in, const void* out, uint32_t bytes) {
  auto fits = [&](size_t size) { return bytes == size && Aligned(in, size) && Aligned(out, size); };
  if (fits(8)) return Launcher<uint64_t>::Run(launch);
  if (fits(4)) return Launcher<uint32_t>::Run(launch);
  if (fits(2)) return Launcher<uint16_t>::Run(launch);
  return Launcher<unsigned char>::Run(launch);
}

struct GatherLaunch {
  KernelContext ctx;
  GatherArgs args;
  int64_t count;
};
template <typename T>
struct GatherLauncher {
  static Status Run(const GatherLaunch& l) {
    GatherKernel<T><<<BlocksFor(l.count), kThreads, 0, StreamOf(l.ctx)>>>(
        l.args, l.count, reinterpret_cast<unsigned int*>(l.ctx.error_flag));
    return CheckLaunch("GatherKernel");
  }
};

struct TransposeLaunch {
  KernelContext ctx;
  TransposeArgs args;
  int64_t count;
};
template <typename T>
struct TransposeLauncher {
  static Status Run(const TransposeLaunch& l) {
    TransposeKernel<T><<<BlocksFor(l.count), kThreads, 0, StreamOf(l.ctx)>>>(l.args, l.count);
    return CheckLaunch("TransposeKernel");
  }
};

class CudaKernelSet final : public KernelSet {
 public:
  explicit CudaKernelSet(const CublasApi* blas) : blas_(blas) {}

  const char* name() const override { return blas_ != nullptr ? "cuda+cublas" : "cuda"; }

  Status Gemm(const KernelContext& ctx, const GemmArgs& args) const override {
    GemmArgs resolved;
    int64_t work = 0;
    Status checked = detail::CheckGemm(args, &resolved, &work);
    if (!checked.ok() || work == 0) return checked;
    return detail::CudaGemm(ctx, resolved, blas_);
  }

  Status Binary(const KernelContext& ctx, const BinaryArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckBinary(args, &count);
    if (!checked.ok() || count == 0) return checked;
    BinaryKernel<<<BlocksFor(count), kThreads, 0, StreamOf(ctx)>>>(args, count);
    return CheckLaunch("BinaryKernel");
  }

  Status Activate(const KernelContext& ctx, const ActivationArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckActivation(args, &count);
    if (!checked.ok() || count == 0) return checked;
    ActivationKernel<<<BlocksFor(count), kThreads, 0, StreamOf(ctx)>>>(args);
    return CheckLaunch("ActivationKernel");
  }

  Status Softmax(const KernelContext& ctx, const SoftmaxArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckSoftmax(args, &count);
    if (!checked.ok() || count == 0) return checked;
    if (args.inner == 1) {
      SoftmaxRowKernel<<<RowBlocks(args.outer), kThreads, 0, StreamOf(ctx)>>>(args);
      return CheckLaunch("SoftmaxRowKernel");
    }
    const int64_t columns = args.outer * args.inner;
    SoftmaxColumnKernel<<<BlocksFor(columns), kThreads, 0, StreamOf(ctx)>>>(args, columns);
    return CheckLaunch("SoftmaxColumnKernel");
  }

  Status LayerNorm(const KernelContext& ctx, const LayerNormArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckLayerNorm(args, &count);
    if (!checked.ok() || count == 0) return checked;
    LayerNormKernel<<<RowBlocks(args.rows), kThreads, 0, StreamOf(ctx)>>>(args);
    return CheckLaunch("LayerNormKernel");
  }

  Status ChannelAffine(const KernelContext& ctx, const ChannelAffineArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckChannelAffine(args, &count);
    if (!checked.ok() || count == 0) return checked;
    ChannelAffineKernel<<<BlocksFor(count), kThreads, 0, StreamOf(ctx)>>>(args, count);
    return CheckLaunch("ChannelAffineKernel");
  }

  Status Reduce(const KernelContext& ctx, const ReduceArgs& args) const override {
    int64_t outputs = 0;
    Status checked = detail::CheckReduce(args, &outputs);
    if (!checked.ok() || outputs == 0) return checked;
    if (args.inner == 1 && args.reduce > 0) {
      ReduceRowKernel<<<RowBlocks(args.outer), kThreads, 0, StreamOf(ctx)>>>(args);
      return CheckLaunch("ReduceRowKernel");
    }
    ReduceColumnKernel<<<BlocksFor(outputs), kThreads, 0, StreamOf(ctx)>>>(args, outputs);
    return CheckLaunch("ReduceColumnKernel");
  }

  Status Gather(const KernelContext& ctx, const GatherArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckGather(args, &count);
    if (!checked.ok() || count == 0) return checked;
    if (ctx.error_flag == nullptr) {
      return Status(StatusCode::kInvalidArgument, "Gather: no error flag in the CUDA kernel context");
    }
    return DispatchBySize<GatherLauncher>(GatherLaunch{ctx, args, count}, args.data, args.out,
                                          args.element_bytes);
  }

  Status Transpose(const KernelContext& ctx, const TransposeArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckTranspose(args, &count);
    if (!checked.ok() || count == 0) return checked;
    return DispatchBySize<TransposeLauncher>(TransposeLaunch{ctx, args, count}, args.in, args.out,
                                             args.element_bytes);
  }

  Status Copy2D(const KernelContext& ctx, const Copy2DArgs& args) const override {
    int64_t bytes = 0;
    Status checked = detail::CheckCopy2D(args, &bytes);
    if (!checked.ok() || bytes == 0 || args.src == args.dst) return checked;
    cudaError_t err = cudaSuccess;
    if (args.rows == 1 || (args.src_pitch == args.row_bytes && args.dst_pitch == args.row_bytes)) {
      // Contiguous on both sides: one linear copy.
      err = cudaMemcpyAsync(args.dst, args.src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                            StreamOf(ctx));
      if (err != cudaSuccess) return detail::CudaStatus("cudaMemcpyAsync (Copy2D)", err);
      return Status::Ok();
    }
    err = cudaMemcpy2DAsync(args.dst, static_cast<size_t>(args.dst_pitch), args.src,
                            static_cast<size_t>(args.src_pitch), static_cast<size_t>(args.row_bytes),
                            static_cast<size_t>(args.rows), cudaMemcpyDeviceToDevice, StreamOf(ctx));
    if (err != cudaSuccess) return detail::CudaStatus("cudaMemcpy2DAsync (Copy2D)", err);
    return Status::Ok();
  }

  Status Cast(const KernelContext& ctx, const CastArgs& args) const override {
    int64_t count = 0;
    Status checked = detail::CheckCast(args, &count);
    if (!checked.ok() || count == 0 || args.in == args.out) return checked;
    if (args.from == args.to) {
      const int64_t size = args.from == DType::kFloat16 ? 2 : args.from == DType::kFloat64 ? 8 : 4;
      cudaError_t err = cudaMemcpyAsync(args.out, args.in, static_cast<size_t>(count * size),
                                        cudaMemcpyDeviceToDevice, StreamOf(ctx));
      if (err != cudaSuccess) return detail::CudaStatus("cudaMemcpyAsync (Cast)", err);
      return Status::Ok();
    }
    CastKernel<<<BlocksFor(count), kThreads, 0, StreamOf(ctx)>>>(args);
    return CheckLaunch("CastKernel");
  }

 private:
  const CublasApi* const blas_;  // null: own SGEMM only
};

}  // namespace

std::unique_ptr<KernelSet> MakeCudaKernelSet(const CublasApi* blas) {
  return std::make_unique<CudaKernelSet>(blas);
}

Status ProbeCudaKernels() {
  Status gemm = detail::ProbeGemmKernels();
  if (!gemm.ok()) return gemm;
  cudaFuncAttributes attributes{};
  cudaError_t err = cudaFuncGetAttributes(&attributes, BinaryKernel);
  if (err != cudaSuccess) return detail::CudaStatus("cudaFuncGetAttributes(BinaryKernel)", err);
  return Status::Ok();
}

}  // namespace hotpath::executor
