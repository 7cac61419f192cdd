// Materialises each step kind into its kernel's argument struct
// (detail/step_runner.h).
#include "executor/detail/step_runner.h"

#include <string>
#include <variant>

namespace hotpath::executor::detail {
namespace {

// The two memory regions of one job, and the job's rows.
struct Frame {
  std::byte* workspace;
  const std::byte* weights;
  int64_t rows;

  int64_t operator()(const Lin& lin) const { return lin.At(rows); }

  // nullptr for an absent operand. Kernels never write through a weights
  // pointer (only step outputs are written, and those live in the workspace).
  void* Ptr(const Operand& op) const {
    switch (op.ref.region) {
      case Region::kWorkspace: return workspace + op.ref.offset;
      case Region::kWeights: return const_cast<std::byte*>(weights + op.ref.offset);
      case Region::kNone: return nullptr;
    }
    return nullptr;
  }
  float* F(const Operand& op) const { return static_cast<float*>(Ptr(op)); }
};

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const GemmStep& s) {
  GemmArgs a;
  a.a = f.F(s.a), a.b = f.F(s.b), a.c = f.F(s.c), a.bias = f.F(s.bias);
  a.m = f(s.m), a.n = f(s.n), a.k = f(s.k);
  a.trans_a = s.trans_a, a.trans_b = s.trans_b;
  a.lda = f(s.lda), a.ldb = f(s.ldb), a.ldc = f(s.ldc);
  a.batch = f(s.batch);
  a.stride_a = f(s.stride_a), a.stride_b = f(s.stride_b), a.stride_c = f(s.stride_c);
  a.alpha = s.alpha, a.beta = s.beta;
  a.bias_kind = s.bias_kind, a.bias_stride = f(s.bias_stride);
  a.activation = s.activation;
  return k.Gemm(ctx, a);
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const BinaryStep& s) {
  BinaryArgs a;
  a.op = s.op;
  a.a = f.F(s.a), a.b = f.F(s.b), a.out = f.F(s.out);
  a.rank = s.rank;
  for (int32_t i = 0; i < s.rank; ++i) {
    a.out_dims[i] = f(s.out_dims[i]);
    a.a_strides[i] = f(s.a_strides[i]);
    a.b_strides[i] = f(s.b_strides[i]);
  }
  a.activation = s.activation;
  return k.Binary(ctx, a);
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const ActivationStep& s) {
  return k.Activate(ctx, ActivationArgs{f.F(s.in), f.F(s.out), f(s.count), s.activation});
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const SoftmaxStep& s) {
  return k.Softmax(ctx, SoftmaxArgs{f.F(s.in), f.F(s.out), f(s.outer), f(s.axis), f(s.inner)});
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const LayerNormStep& s) {
  return k.LayerNorm(ctx, LayerNormArgs{f.F(s.in), f.F(s.scale), f.F(s.bias), f.F(s.out), f(s.rows),
                                        f(s.cols), s.epsilon});
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const ChannelAffineStep& s) {
  return k.ChannelAffine(ctx, ChannelAffineArgs{f.F(s.in), f.F(s.scale), f.F(s.shift), f.F(s.out),
                                                f(s.outer), f(s.channels), f(s.inner)});
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const ReduceStep& s) {
  return k.Reduce(ctx, ReduceArgs{f.F(s.in), f.F(s.out), f(s.outer), f(s.reduce), f(s.inner), s.mean});
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const GatherStep& s) {
  GatherArgs a;
  a.data = f.Ptr(s.data), a.indices = f.Ptr(s.indices), a.out = f.Ptr(s.out);
  a.indices_int64 = s.indices_int64;
  a.outer = f(s.outer), a.axis_len = f(s.axis_len), a.inner = f(s.inner), a.count = f(s.count);
  a.element_bytes = s.element_bytes;
  return k.Gather(ctx, a);
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const TransposeStep& s) {
  TransposeArgs a;
  a.in = f.Ptr(s.in), a.out = f.Ptr(s.out);
  a.element_bytes = s.element_bytes;
  a.rank = s.rank;
  for (int32_t i = 0; i < s.rank; ++i) {
    a.out_dims[i] = f(s.out_dims[i]);
    a.in_strides_permuted[i] = f(s.in_strides_permuted[i]);
  }
  return k.Transpose(ctx, a);
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const CopyStep& s) {
  Copy2DArgs a;
  a.src = f.Ptr(s.src);
  a.dst = static_cast<std::byte*>(f.Ptr(s.dst)) + f(s.dst_offset);
  a.rows = f(s.rows), a.row_bytes = f(s.row_bytes), a.src_pitch = f(s.src_pitch), a.dst_pitch = f(s.dst_pitch);
  return k.Copy2D(ctx, a);
}

Status Run(const Frame& f, const KernelSet& k, const KernelContext& ctx, const CastStep& s) {
  return k.Cast(ctx, CastArgs{f.Ptr(s.in), f.Ptr(s.out), f(s.count), s.from, s.to});
}

}  // namespace

Status RunStep(const Step& step, const KernelSet& kernels, const KernelContext& context,
               std::byte* workspace, const std::byte* weights, int64_t rows) {
  const Frame frame{workspace, weights, rows};
  Status status = std::visit([&](const auto& s) { return Run(frame, kernels, context, s); }, step.args);
  if (status.ok()) return status;
  return Status(status.code(), step.label + ": " + status.message());
}

}  // namespace hotpath::executor::detail
