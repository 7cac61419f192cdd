// The compiled step list: one Step per kernel call, with every size written
// as a linear function of the batch rows and every buffer as a planned
// offset. Internal to the executor (compiler.h produces it, step_runner.h
// runs it).
//
// Why linear sizes: the batch dimension is symbolic at compile time. Every
// tensor has at most one dimension that depends on the rows (the compiler
// rejects anything else), so every element count, stride and byte offset the
// kernels need is `per_row * rows + fixed`. At run time a step turns into its
// kernel's argument struct with a few multiply-adds: no lookups, no shape
// inference, no allocation.
//
// Thread-safety: plain values, immutable once compiled.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "executor/kernels.h"
#include "executor/plan.h"

namespace hotpath::executor::detail {

// per_row * rows + fixed. Both are >= 0 for every size the compiler accepts.
struct Lin {
  int64_t per_row = 0;
  int64_t fixed = 0;

  constexpr int64_t At(int64_t rows) const { return per_row * rows + fixed; }
  constexpr bool is_fixed() const { return per_row == 0; }
  constexpr bool is_const(int64_t v) const { return per_row == 0 && fixed == v; }
  friend constexpr bool operator==(const Lin&, const Lin&) = default;
};
constexpr Lin Fixed(int64_t v) { return Lin{0, v}; }

using Shape = std::vector<Lin>;

// Which memory block a buffer lives in: the instance's workspace or the
// shared weights image.
enum class Region : uint8_t { kNone, kWorkspace, kWeights };
struct BufRef {
  Region region = Region::kNone;
  uint64_t offset = 0;  // bytes from the region's base
};

// A kernel operand. The compiler fills `value` (an index into its value
// table); memory planning resolves it into `ref`, which is all the run time
// reads. value -1: absent (an optional operand, e.g. no bias).
struct Operand {
  int32_t value = -1;
  BufRef ref;
};

struct GemmStep {
  Operand a, b, bias, c;
  Lin m, n, k, lda, ldb, ldc;
  Lin batch = Fixed(1), stride_a, stride_b, stride_c, bias_stride;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 1.0f;
  BiasKind bias_kind = BiasKind::kNone;
  ActivationParams activation;
};

struct BinaryStep {
  BinaryOp op = BinaryOp::kAdd;
  Operand a, b, out;
  int32_t rank = 0;
  Lin out_dims[kMaxRank], a_strides[kMaxRank], b_strides[kMaxRank];
  ActivationParams activation;
};

struct ActivationStep {
  Operand in, out;
  Lin count;
  ActivationParams activation;
};

struct SoftmaxStep {
  Operand in, out;
  Lin outer, axis, inner;
};

struct LayerNormStep {
  Operand in, scale, bias, out;
  Lin rows, cols;
  float epsilon = 1e-5f;
};

struct ChannelAffineStep {
  Operand in, scale, shift, out;
  Lin outer, channels, inner;
};

struct ReduceStep {
  Operand in, out;
  Lin outer, reduce, inner;
  bool mean = false;
};

struct GatherStep {
  Operand data, indices, out;
  bool indices_int64 = true;
  Lin outer, axis_len, inner, count;
  uint32_t element_bytes = 4;
};

struct TransposeStep {
  Operand in, out;
  uint32_t element_bytes = 4;
  int32_t rank = 0;
  Lin out_dims[kMaxRank], in_strides_permuted[kMaxRank];
};

// One Copy2D; dst_offset places it inside `dst` (one Concat input).
struct CopyStep {
  Operand src, dst;
  Lin dst_offset;  // bytes
  Lin rows, row_bytes, src_pitch, dst_pitch;
};

struct CastStep {
  Operand in, out;
  Lin count;
  DType from = DType::kFloat32, to = DType::kFloat32;
};

using StepArgs = std::variant<GemmStep, BinaryStep, ActivationStep, SoftmaxStep, LayerNormStep,
                              ChannelAffineStep, ReduceStep, GatherStep, TransposeStep, CopyStep,
                              CastStep>;

struct Step {
  StepArgs args;
  // "node 'fc1' (Gemm)" (+ "+Add", "+Relu" for fused nodes): for messages.
  std::string label;
};

// Calls fn(Operand&, bool is_output) for every operand of `step` that is
// present (value >= 0 before planning). Steps have exactly one output.
template <typename Fn>
void ForEachOperand(StepArgs& step, Fn&& fn) {
  auto visit = [&](Operand& op, bool is_output) {
    if (op.value >= 0) fn(op, is_output);
  };
  std::visit(
      [&](auto& s) {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, GemmStep>) {
          visit(s.a, false), visit(s.b, false), visit(s.bias, false), visit(s.c, true);
        } else if constexpr (std::is_same_v<T, BinaryStep>) {
          visit(s.a, false), visit(s.b, false), visit(s.out, true);
        } else if constexpr (std::is_same_v<T, LayerNormStep>) {
          visit(s.in, false), visit(s.scale, false), visit(s.bias, false), visit(s.out, true);
        } else if constexpr (std::is_same_v<T, ChannelAffineStep>) {
          visit(s.in, false), visit(s.scale, false), visit(s.shift, false), visit(s.out, true);
        } else if constexpr (std::is_same_v<T, GatherStep>) {
          visit(s.data, false), visit(s.indices, false), visit(s.out, true);
        } else if constexpr (std::is_same_v<T, CopyStep>) {
          visit(s.src, false), visit(s.dst, true);
        } else {
          visit(s.in, false), visit(s.out, true);
        }
      },
      step);
}

}  // namespace hotpath::executor::detail
