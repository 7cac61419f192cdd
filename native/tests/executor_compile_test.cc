// Tests for executor/compiler.h and memory_plan.h: shape inference per op
// (with the batch dimension symbolic, written B), every validation error
// path and its code, fusion and alias decisions (step counts), and the
// memory plan's no-overlap property over random lifetimes and random graphs.
// No kernels run here.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "executor/compiler.h"
#include "executor/detail/shape_math.h"
#include "executor/memory_plan.h"
#include "tests/check.h"
#include "tests/executor_plans.h"

namespace hotpath::executor {
namespace {

using testing::Attrs;
using testing::Float;
using testing::Int;
using testing::Ints;
using testing::PlanMaker;
using hotpath::test::Checker;

std::string OutShape(const Result<Program>& program, size_t output = 0) {
  if (!program.ok()) return "error: " + program.status().ToString();
  return detail::ShapeString(program.value().outputs[output].shape);
}

size_t Steps(const Result<Program>& program) { return program.ok() ? program.value().steps.size() : 999; }

void ExpectError(Checker& c, const Result<Program>& program, StatusCode code, const std::string& needle,
                 const char* what) {
  if (!c.True(!program.ok(), std::string(what) + ": compiles")) return;
  c.Equal(StatusCodeName(program.status().code()), std::string(StatusCodeName(code)), what);
  c.Contains(program.status().message(), needle, what);
}

// One op on one batched input, output straight out.
Result<Program> Unary(const std::string& op, std::vector<int64_t> dims, Attrs attrs = {}, int64_t opset = 17,
                      uint32_t max_batch = 8) {
  PlanMaker p(max_batch, opset);
  p.Output(p.Node(op, {p.Input("x", std::move(dims))}, std::move(attrs)));
  return Compile(p.plan);
}

void TestGemmAndMatMulShapes(Checker& c) {
  {
    PlanMaker p(8);
    const int32_t x = p.Input("x", {-1, 4});
    p.Output(p.Node("Gemm", {x, p.Random("w", {4, 3}, 1), p.Random("b", {3}, 2)}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[B,3]"), "Gemm [B,4]x[4,3]");
  }
  {
    PlanMaker p(8);
    const int32_t x = p.Input("x", {-1, 4});
    p.Output(p.Node("Gemm", {x, p.Random("w", {3, 4}, 1), p.Random("b", {1, 3}, 2)}, {{"transB", Int(1)}}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[B,3]"), "Gemm transB");
  }
  {  // transA on a fixed graph, column bias
    PlanMaker p(0);
    const int32_t x = p.Input("x", {4, 2});
    p.Output(p.Node("Gemm", {x, p.Random("w", {4, 3}, 1), p.Random("b", {2, 1}, 2)}, {{"transA", Int(1)}}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[2,3]"), "Gemm transA");
  }
  {  // inner dimensions differ
    PlanMaker p(8);
    p.Output(p.Node("Gemm", {p.Input("x", {-1, 4}), p.Random("w", {5, 3}, 1)}));
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "inner dimensions", "Gemm K mismatch");
  }
  {  // batched A against a 2-D B folds into one GEMM over 2B rows
    PlanMaker p(8);
    p.Output(p.Node("MatMul", {p.Input("x", {-1, 2, 3}), p.Random("w", {3, 4}, 1)}));
    Result<Program> program = Compile(p.plan);
    c.Equal(OutShape(program), std::string("[B,2,4]"), "MatMul batched x 2-D");
    if (program.ok()) {
      const auto* gemm = std::get_if<detail::GemmStep>(&program.value().steps[0].args);
      c.True(gemm != nullptr && gemm->m == detail::Lin{2, 0} && gemm->batch.is_const(1), "folded M = 2B");
    }
  }
  {  // both batched, same batch shape
    PlanMaker p(0);
    p.Output(p.Node("MatMul", {p.Input("a", {2, 3, 4}), p.Input("b", {2, 4, 5})}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[2,3,5]"), "MatMul batched x batched");
  }
  {  // a shared 2-D A against a batched B
    PlanMaker p(0);
    p.Output(p.Node("MatMul", {p.Input("a", {3, 4}), p.Input("b", {6, 4, 5})}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[6,3,5]"), "MatMul 2-D x batched");
  }
  {  // 1-D operands drop their dimension
    PlanMaker p(0);
    p.Output(p.Node("MatMul", {p.Input("a", {4}), p.Input("b", {4, 5})}));
    p.Output(p.Node("MatMul", {p.Input("c", {3, 4}), p.Input("d", {4})}));
    Result<Program> program = Compile(p.plan);
    c.Equal(OutShape(program, 0), std::string("[5]"), "MatMul 1-D A");
    c.Equal(OutShape(program, 1), std::string("[3]"), "MatMul 1-D B");
  }
  {  // batch broadcast that needs two strides
    PlanMaker p(0);
    p.Output(p.Node("MatMul", {p.Input("a", {2, 1, 3, 4}), p.Input("b", {1, 2, 4, 5})}));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "node 'MatMul_0' (MatMul)",
                "MatMul broadcast pattern");
  }
}

void TestBroadcastShapes(Checker& c) {
  struct Case {
    std::vector<int64_t> a, b;
    const char* expected;
  } cases[] = {
      {{-1, 3}, {3}, "[B,3]"},
      {{-1, 1, 4}, {3, 1}, "[B,3,4]"},
      {{-1, 3}, {1}, "[B,3]"},
      {{-1, 3}, {-1, 3}, "[B,3]"},
      {{-1, 2, 3}, {-1, 1, 3}, "[B,2,3]"},
  };
  for (const Case& k : cases) {
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      PlanMaker p(8);
      const int32_t b = k.b[0] == -1 ? p.Input("b", k.b) : p.Random("b", k.b, 1);
      p.Output(p.Node(op, {p.Input("a", k.a), b}));
      c.Equal(OutShape(Compile(p.plan)), std::string(k.expected), op);
    }
  }
  {  // [1] op [B]: the scalar side broadcasts
    PlanMaker p(8);
    p.Output(p.Node("Add", {p.Random("one", {1, 1}, 3), p.Input("x", {-1, 1})}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[B,1]"), "initializer + runtime");
  }
  {
    PlanMaker p(8);
    p.Output(p.Node("Add", {p.Input("a", {-1, 3}), p.Random("b", {4}, 1)}));
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "do not broadcast", "3 vs 4");
  }
  {
    PlanMaker p(8);
    p.Output(p.Node("Add", {p.Input("a", {-1, 3}), p.Random("b", {5, 3}, 1)}));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "one batch size", "B vs 5");
  }
  {  // the walk is simplified: same shapes run as rank 1, a bias row as rank 2
    PlanMaker p(8);
    const int32_t x = p.Input("x", {-1, 3, 4});
    p.Output(p.Node("Mul", {x, x}));
    p.Output(p.Node("Add", {p.Input("y", {-1, 4}), p.Random("r", {4}, 1)}));
    Result<Program> program = Compile(p.plan);
    if (c.True(program.ok(), "simplified binaries compile")) {
      const auto* same = std::get_if<detail::BinaryStep>(&program.value().steps[0].args);
      const auto* row = std::get_if<detail::BinaryStep>(&program.value().steps[1].args);
      c.True(same != nullptr && same->rank == 1 && same->out_dims[0] == detail::Lin{12, 0}, "same shape: rank 1");
      c.True(row != nullptr && row->rank == 2 && row->b_strides[0].is_const(0), "row bias: rank 2, broadcast");
    }
  }
}

void TestUnaryShapes(Checker& c) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "Identity"}) {
    c.Equal(OutShape(Unary(op, {-1, 3, 2})), std::string("[B,3,2]"), op);
  }
  c.Equal(OutShape(Unary("Clip", {-1, 3}, {{"min", Float(0)}, {"max", Float(6)}}, 10)), std::string("[B,3]"),
          "Clip opset 10 attributes");
  {
    PlanMaker p(8, 13);
    const int32_t x = p.Input("x", {-1, 3});
    p.Output(p.Node("Clip", {x, p.Floats("lo", {}, {0.0f}), p.Floats("hi", {}, {6.0f})}));
    Result<Program> program = Compile(p.plan);
    c.Equal(OutShape(program), std::string("[B,3]"), "Clip opset 13 inputs");
    if (program.ok()) {
      const auto* act = std::get_if<detail::ActivationStep>(&program.value().steps[0].args);
      c.True(act != nullptr && act->activation.lo == 0.0f && act->activation.hi == 6.0f, "Clip bounds");
    }
  }
  {  // Softmax: opset 11 flattens from the axis, opset 13 uses the one axis
    Result<Program> old = Unary("Softmax", {-1, 3, 4}, {{"axis", Int(1)}}, 11);
    Result<Program> now = Unary("Softmax", {-1, 3, 4}, {{"axis", Int(1)}}, 13);
    if (c.True(old.ok() && now.ok(), "Softmax compiles")) {
      const auto& s11 = std::get<detail::SoftmaxStep>(old.value().steps[0].args);
      const auto& s13 = std::get<detail::SoftmaxStep>(now.value().steps[0].args);
      c.True(s11.outer == detail::Lin{1, 0} && s11.axis.is_const(12) && s11.inner.is_const(1), "opset 11 flattens");
      c.True(s13.outer == detail::Lin{1, 0} && s13.axis.is_const(3) && s13.inner.is_const(4), "opset 13 one axis");
    }
    Result<Program> last = Unary("Softmax", {-1, 3, 4}, {}, 13);
    if (last.ok()) c.True(std::get<detail::SoftmaxStep>(last.value().steps[0].args).axis.is_const(4), "default -1");
  }
}

void TestShapeOps(Checker& c) {
  c.Equal(OutShape(Unary("Flatten", {-1, 2, 3})), std::string("[B,6]"), "Flatten axis 1");
  c.Equal(Steps(Unary("Flatten", {-1, 2, 3})), size_t{0}, "Flatten is an alias");
  c.Equal(OutShape(Unary("Flatten", {2, 3, 4}, {{"axis", Int(-1)}}, 17, 0)), std::string("[6,4]"), "Flatten -1");
  c.Equal(OutShape(Unary("Flatten", {2, 3}, {{"axis", Int(0)}}, 17, 0)), std::string("[1,6]"), "Flatten 0");
  {  // Flatten to [1, 6B], then Reshape back to [B, 6]: batch-linear dims survive
    PlanMaker p(8);
    const int32_t flat = p.Node("Flatten", {p.Input("x", {-1, 2, 3})}, {{"axis", Int(0)}});
    p.Output(p.Node("Reshape", {flat, p.Int64s("s", {2}, {-1, 6})}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[B,6]"), "Flatten 0 + Reshape -1");
  }
  {  // Reshape 0 copies, -1 infers
    PlanMaker p(8);
    p.Output(p.Node("Reshape", {p.Input("x", {-1, 2, 3}), p.Int64s("s", {3}, {0, 3, -1})}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[B,3,2]"), "Reshape [0,3,-1]");
  }
  {
    PlanMaker p(0);
    p.Output(p.Node("Reshape", {p.Input("x", {4, 6}), p.Int64s("s", {2}, {-1, 3})}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[8,3]"), "Reshape fixed -1");
  }
  {  // allowzero: 0 is a real zero
    PlanMaker p(0, 14);
    p.Output(p.Node("Reshape", {p.Input("x", {0, 3}), p.Int64s("s", {2}, {3, 0})}, {{"allowzero", Int(1)}}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[3,0]"), "Reshape allowzero");
  }
  {
    PlanMaker p(0);
    p.Output(p.Node("Reshape", {p.Input("x", {4, 6}), p.Int64s("s", {2}, {5, -1})}));
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "cannot infer", "Reshape 24 into 5");
  }
  {  // a fixed target shape for a batch-dependent tensor only fits one batch size
    PlanMaker p(8);
    p.Output(p.Node("Reshape", {p.Input("x", {-1, 6}), p.Int64s("s", {2}, {1, 6})}));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "does not hold", "Reshape [1,6] of [B,6]");
  }
  {  // a runtime shape is not supported
    PlanMaker p(8);
    p.Output(p.Node("Reshape", {p.Input("x", {-1, 6}), p.Input("s", {-1}, DType::kInt64)}));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "needs an initializer", "runtime shape");
  }
  {  // Concat across the batch ([2B,4]) and along features ([B,10])
    PlanMaker p(8);
    const int32_t a = p.Input("a", {-1, 4}), b = p.Input("b", {-1, 4}), e = p.Input("e", {-1, 6});
    const int32_t rows = p.Node("Concat", {a, b}, {{"axis", Int(0)}});
    p.Output(p.Node("Reshape", {rows, p.Int64s("s", {2}, {-1, 8})}));
    p.Output(p.Node("Concat", {a, e}, {{"axis", Int(-1)}}));
    Result<Program> program = Compile(p.plan);
    c.Equal(OutShape(program, 0), std::string("[B,8]"), "Concat axis 0 then Reshape");
    c.Equal(OutShape(program, 1), std::string("[B,10]"), "Concat axis 1");
    c.Equal(Steps(program), size_t{4}, "Concat: one copy per input");
  }
  {  // a batching model's outputs need the batch first
    PlanMaker p(8);
    p.Output(p.Node("Concat", {p.Input("a", {-1, 4}), p.Input("b", {-1, 4})}, {{"axis", Int(0)}}));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "batch dimension (B) first", "[2B,4] output");
  }
  {
    PlanMaker p(8);
    p.Output(p.Node("Concat", {p.Input("a", {-1, 4}), p.Input("b", {-1, 3, 1})}, {{"axis", Int(1)}}));
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "differ in dtype or rank", "Concat rank");
  }
  // Squeeze / Unsqueeze: axes as attributes before opset 13, inputs from 13.
  c.Equal(OutShape(Unary("Squeeze", {-1, 1, 3, 1}, {{"axes", Ints({1})}}, 11)), std::string("[B,3,1]"), "Squeeze 11");
  c.Equal(OutShape(Unary("Squeeze", {-1, 1, 3, 1}, {}, 13)), std::string("[B,3]"), "Squeeze all 1s");
  {
    PlanMaker p(8, 13);
    p.Output(p.Node("Squeeze", {p.Input("x", {-1, 1, 3}), p.Int64s("axes", {1}, {-2})}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[B,3]"), "Squeeze 13 axes input");
  }
  c.Equal(OutShape(Unary("Unsqueeze", {-1, 3}, {{"axes", Ints({1, -1})}}, 11)), std::string("[B,1,3,1]"),
          "Unsqueeze 11");
  {
    PlanMaker p(8, 13);
    p.Output(p.Node("Unsqueeze", {p.Input("x", {-1, 3}), p.Int64s("axes", {1}, {2})}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[B,3,1]"), "Unsqueeze 13");
  }
  ExpectError(c, Unary("Squeeze", {-1, 3}, {{"axes", Ints({0})}}, 11), StatusCode::kFailedPrecondition,
              "batch dimension", "Squeeze the batch");
  ExpectError(c, Unary("Squeeze", {-1, 3}, {{"axes", Ints({1})}}, 11), StatusCode::kInvalidArgument, "is not 1",
              "Squeeze a 3");
  // Transpose: a real permutation is a step, moving only 1s is an alias.
  c.Equal(OutShape(Unary("Transpose", {-1, 2, 3}, {{"perm", Ints({0, 2, 1})}})), std::string("[B,3,2]"),
          "Transpose");
  c.Equal(Steps(Unary("Transpose", {-1, 2, 3}, {{"perm", Ints({0, 2, 1})}})), size_t{1}, "Transpose step");
  c.Equal(Steps(Unary("Transpose", {-1, 1, 3}, {{"perm", Ints({0, 2, 1})}})), size_t{0}, "Transpose of 1s");
  ExpectError(c, Unary("Transpose", {-1, 2, 3}, {{"perm", Ints({0, 1, 1})}}), StatusCode::kInvalidArgument,
              "not a permutation", "bad perm");
}

void TestNormReduceGatherCast(Checker& c) {
  {
    PlanMaker p(8, 15);
    const int32_t x = p.Input("x", {-1, 3, 2});
    p.Output(p.Node("BatchNormalization", {x, p.Random("s", {3}, 1), p.Random("b", {3}, 2), p.Random("m", {3}, 3),
                                           p.Floats("v", {3}, {1, 2, 3})}));
    Result<Program> program = Compile(p.plan);
    c.Equal(OutShape(program), std::string("[B,3,2]"), "BatchNormalization");
    c.True(program.ok() && std::holds_alternative<detail::ChannelAffineStep>(program.value().steps[0].args),
           "folded into a channel affine");
  }
  {
    PlanMaker p(8, 17);
    const int32_t x = p.Input("x", {-1, 4});
    p.Output(p.Node("LayerNormalization", {x, p.Random("s", {4}, 1), p.Floats("b", {1}, {0.5f})}));
    Result<Program> program = Compile(p.plan);
    c.Equal(OutShape(program), std::string("[B,4]"), "LayerNormalization, bias broadcast");
    if (program.ok()) {
      c.Equal(program.value().weights.size(), size_t{512}, "scale and the broadcast bias packed, 256-aligned");
    }
  }
  {  // LayerNorm's Mean output is not computed: using it is unsupported
    PlanMaker p(8, 17);
    p.Node("LayerNormalization", {p.Input("x", {-1, 4}), p.Random("s", {4}, 1)}, {}, "ln", 1);
    const int32_t mean = p.plan.nodes.back().outputs[1];
    p.Output(p.plan.nodes.back().outputs[0]);
    p.Output(mean);
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "optional output 1", "LayerNorm Mean");
  }
  c.Equal(OutShape(Unary("ReduceSum", {-1, 3, 4}, {{"axes", Ints({1})}, {"keepdims", Int(0)}}, 11)),
          std::string("[B,4]"), "ReduceSum 11");
  c.Equal(OutShape(Unary("ReduceMean", {-1, 3, 4}, {{"axes", Ints({-1})}}, 17)), std::string("[B,3,1]"),
          "ReduceMean 17 keepdims");
  {
    PlanMaker p(8, 18);
    p.Output(p.Node("ReduceMean", {p.Input("x", {-1, 3, 4}), p.Int64s("axes", {2}, {1, 2})}, {{"keepdims", Int(0)}}));
    c.Equal(OutShape(Compile(p.plan)), std::string("[B]"), "ReduceMean 18 axes input");
  }
  c.Equal(OutShape(Unary("ReduceSum", {-1, 3}, {{"noop_with_empty_axes", Int(1)}}, 13)), std::string("[B,3]"),
          "ReduceSum noop");
  ExpectError(c, Unary("ReduceSum", {-1, 3, 4, 5}, {{"axes", Ints({1, 3})}}, 11), StatusCode::kFailedPrecondition,
              "non-contiguous", "ReduceSum axes 1,3");
  c.Equal(OutShape(Unary("ReduceSum", {-1, 3, 1, 5}, {{"axes", Ints({1, 3})}}, 11)), std::string("[B,1,1,1]"),
          "axes around a 1 are contiguous");
  {  // an embedding lookup and a runtime-data gather
    PlanMaker p(8);
    const int32_t ids = p.Input("ids", {-1, 3}, DType::kInt64);
    p.Output(p.Node("Gather", {p.Random("table", {10, 4}, 1), ids}));
    p.Output(p.Node("Gather", {p.Input("x", {-1, 5}), p.Int64s("pick", {2}, {4, -1})}, {{"axis", Int(1)}}));
    Result<Program> program = Compile(p.plan);
    c.Equal(OutShape(program, 0), std::string("[B,3,4]"), "Gather embedding");
    c.Equal(OutShape(program, 1), std::string("[B,2]"), "Gather axis 1");
  }
  {
    PlanMaker p(8);
    p.Output(p.Node("Gather", {p.Input("x", {-1, 5}), p.Int64s("pick", {1}, {5})}, {{"axis", Int(1)}}));
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "out of range", "constant index 5 of 5");
  }
  c.Equal(OutShape(Unary("Cast", {-1, 3}, {{"to", Int(10)}})), std::string("[B,3]"), "Cast to FLOAT16");
  c.Equal(Steps(Unary("Cast", {-1, 3}, {{"to", Int(1)}})), size_t{0}, "Cast to the same type is an alias");
  {
    PlanMaker p(8);
    p.Output(p.Node("Cast", {p.Input("x", {-1, 3}, DType::kInt64)}, {{"to", Int(1)}}));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "INT64", "Cast from INT64");
  }
}

void TestValidationErrors(Checker& c) {
  {
    PlanMaker p(8);
    p.Output(p.Node("Relu", {p.Input("x", {-1, 3})}));
    p.plan.nodes[0].inputs[0] = 99;
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "out of range", "bad node input index");
  }
  {
    PlanMaker p(8);
    p.Input("x", {-1, 3});
    p.plan.outputs.push_back(-1);
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "out of range", "bad output index");
  }
  {  // node 0 reads node 1's output: a cycle or wrong order
    PlanMaker p(8);
    const int32_t x = p.Input("x", {-1, 3});
    const int32_t a = p.Node("Relu", {x}, {}, "a");
    const int32_t b = p.Node("Relu", {a}, {}, "b");
    p.plan.nodes[0].inputs[0] = b;
    p.Output(b);
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "used before it is produced", "cycle");
  }
  {
    PlanMaker p(8);
    const int32_t x = p.Input("x", {-1, 3});
    const int32_t a = p.Node("Relu", {x});
    p.Node("Sigmoid", {x});
    p.plan.nodes[1].outputs[0] = a;
    p.Output(a);
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "produced more than once", "two producers");
  }
  {
    PlanMaker p(8);
    const int32_t w = p.Random("w", {4, 3}, 1);
    p.plan.tensors[static_cast<size_t>(w)].data.pop_back();
    p.Output(p.Node("Gemm", {p.Input("x", {-1, 4}), w}));
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "bytes of data, expected 48", "initializer size");
  }
  {
    PlanMaker p(8);
    p.Output(p.Node("Conv", {p.Input("x", {-1, 3})}, {}, "conv1"));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition,
                "op 'Conv' (node 'conv1') is not supported by the native executor", "unsupported op");
  }
  ExpectError(c, Unary("Relu", {-1, 3}, {{"bogus", Int(1)}}), StatusCode::kFailedPrecondition,
              "attribute 'bogus' is not supported", "unknown attribute");
  ExpectError(c, Unary("Gemm", {-1, 3}), StatusCode::kInvalidArgument, "expected 2 to 3 inputs", "input count");
  ExpectError(c, Unary("LeakyRelu", {-1, 3}, {{"alpha", Int(1)}}), StatusCode::kInvalidArgument, "must be a float",
              "attribute type");
  {
    PlanMaker p(8);
    p.Output(p.Node("Relu", {p.Input("x", {-1, 3}, DType::kInt64)}, {}, "r"));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "node 'r' (Relu): input 'x' is INT64",
                "float-only op");
  }
  {
    PlanMaker p(8, 13);
    const int32_t x = p.Input("x", {-1, 3});
    p.Output(p.Node("Clip", {x, p.Input("lo", {-1})}));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "computed at run time", "runtime Clip min");
  }
  // Absurd and malformed dimensions.
  ExpectError(c, Unary("Relu", {-1, int64_t{1} << 40, int64_t{1} << 40}), StatusCode::kInvalidArgument,
              "exceeds the executor's limit", "overflowing dims");
  ExpectError(c, Unary("Relu", {-1, 3, -5}), StatusCode::kInvalidArgument, "dimension 2 is -5", "negative dim");
  ExpectError(c, Unary("Relu", {-1, -1}), StatusCode::kFailedPrecondition, "dynamic", "second dynamic dim");
  ExpectError(c, Unary("Relu", {3, 4}), StatusCode::kInvalidArgument, "must be -1", "batching without -1");
  ExpectError(c, Unary("Relu", {-1, 1 << 20}, {}, 17, 4000000000u), StatusCode::kInvalidArgument, "exceeds",
              "huge max_batch_size");
  ExpectError(c, Unary("Relu", {-1, 1, 1, 1, 1, 1, 1, 1, 1}), StatusCode::kFailedPrecondition, "rank 9",
              "rank over kMaxRank");
  {
    PlanMaker p(0);
    p.Output(p.Node("Reshape", {p.Input("x", {4}), p.Int64s("s", {2}, {int64_t{1} << 62, 0})}));
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "", "absurd reshape");
  }
  {
    PlanMaker p(0);
    const int32_t w = p.Floats("w", {-2, 2}, {});
    p.Output(p.Node("Relu", {w}));
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "negative dimension", "negative initializer dim");
  }
  {
    PlanMaker p(8);
    p.Input("x", {-1, 3});
    p.plan.outputs.push_back(p.Node("Relu", {p.Input("y", {-1, 3})}));
    p.plan.nodes.clear();
    ExpectError(c, Compile(p.plan), StatusCode::kInvalidArgument, "never produced", "output never produced");
  }
  {  // a batch-dependent size that would be quadratic in the rows
    PlanMaker p(8);
    const int32_t x = p.Input("x", {-1, 2});
    p.Output(p.Node("Gather", {x, p.Input("i", {-1}, DType::kInt64)}, {{"axis", Int(1)}}));
    ExpectError(c, Compile(p.plan), StatusCode::kFailedPrecondition, "more than once", "quadratic shape");
  }
}

void TestFusionAndAliases(Checker& c) {
  {  // Gemm + Relu -> 1; Gemm + Sigmoid -> 1
    PlanMaker p(8);
    const int32_t h = p.Node("Relu", {p.Node("Gemm", {p.Input("x", {-1, 4}), p.Random("w1", {4, 8}, 1),
                                                      p.Random("b1", {8}, 2)})});
    p.Output(p.Node("Sigmoid", {p.Node("Gemm", {h, p.Random("w2", {8, 1}, 3), p.Random("b2", {1}, 4)})}));
    Result<Program> program = Compile(p.plan);
    c.Equal(Steps(program), size_t{2}, "MLP: one step per layer");
    if (program.ok()) {
      const auto& g = std::get<detail::GemmStep>(program.value().steps[0].args);
      c.True(g.activation.kind == Activation::kRelu && g.bias_kind == BiasKind::kRow, "Gemm+bias+Relu");
      c.Contains(program.value().steps[0].label, "(Relu)", "fused label names both nodes");
    }
  }
  {  // MatMul + Add(row) + Tanh -> 1; Add + LeakyRelu -> 1
    PlanMaker p(8);
    const int32_t mm = p.Node("MatMul", {p.Input("x", {-1, 2, 4}), p.Random("w", {4, 3}, 1)});
    const int32_t t = p.Node("Tanh", {p.Node("Add", {p.Random("b", {1, 3}, 2), mm})});
    p.Output(p.Node("LeakyRelu", {p.Node("Mul", {t, p.Input("y", {-1, 2, 3})})}));
    Result<Program> program = Compile(p.plan);
    c.Equal(Steps(program), size_t{2}, "MatMul+Add+Tanh, Mul+LeakyRelu");
  }
  {  // an intermediate that is also a graph output is not fused away
    PlanMaker p(8);
    const int32_t g = p.Node("Gemm", {p.Input("x", {-1, 4}), p.Random("w", {4, 3}, 1)});
    p.Output(p.Node("Relu", {g}));
    p.Output(g);
    c.Equal(Steps(Compile(p.plan)), size_t{2}, "graph output blocks fusion");
  }
  {  // two readers block fusion
    PlanMaker p(8);
    const int32_t g = p.Node("Gemm", {p.Input("x", {-1, 4}), p.Random("w", {4, 3}, 1)});
    p.Output(p.Node("Add", {p.Node("Relu", {g}), p.Node("Sigmoid", {g})}));
    c.Equal(Steps(Compile(p.plan)), size_t{4}, "two readers");
  }
  {  // a bias computed after the Gemm cannot fold into it
    PlanMaker p(8);
    const int32_t x = p.Input("x", {-1, 3});
    const int32_t g = p.Node("Gemm", {x, p.Random("w", {3, 3}, 1)});
    const int32_t late = p.Node("Relu", {p.Input("r", {-1, 3})});
    p.Output(p.Node("Add", {g, late}));
    c.Equal(Steps(Compile(p.plan)), size_t{3}, "late bias");
  }
  {  // dead branches are dropped, shape ops are free
    PlanMaker p(8);
    const int32_t x = p.Input("x", {-1, 2, 3});
    p.Node("Sigmoid", {x});  // nobody reads it
    const int32_t flat = p.Node("Flatten", {x});
    const int32_t sq = p.Node("Unsqueeze", {flat, p.Int64s("a", {1}, {1})});
    p.Output(p.Node("Relu", {p.Node("Squeeze", {sq, p.Int64s("a2", {1}, {1})})}));
    Result<Program> program = Compile(p.plan);
    c.Equal(Steps(program), size_t{1}, "dead step removed, aliases free");
  }
  {  // an aliased graph input copied straight out
    PlanMaker p(8);
    const int32_t x = p.Input("x", {-1, 3});
    p.Output(p.Node("Identity", {x}));
    Result<Program> program = Compile(p.plan);
    if (c.True(program.ok(), "identity graph")) {
      c.Equal(program.value().outputs[0].ref.offset, program.value().inputs[0].ref.offset, "output = input slot");
      c.Equal(program.value().inputs[0].spec.dims[0], int64_t{-1}, "IoSpec batch dim is -1");
    }
  }
}

void TestMemoryPlanRandomLifetimes(Checker& c) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLifetime> buffers(1 + rng() % 40);
    for (BufferLifetime& b : buffers) {
      b.bytes = rng() % 5 == 0 ? 0 : 1 + rng() % 5000;
      b.first = static_cast<int32_t>(rng() % 30);
      b.last = b.first + static_cast<int32_t>(rng() % 10);
    }
    const MemoryPlan plan = PlanMemory(buffers);
    Status ok = CheckMemoryPlan(buffers, plan);
    if (!c.True(ok.ok(), "random lifetimes: " + ok.message())) break;
    uint64_t peak = 0;  // never worse than giving everything its own room
    for (const BufferLifetime& b : buffers) peak += (b.bytes + 255) / 256 * 256;
    c.True(plan.total_bytes <= peak, "plan within the sum of sizes");
  }
  // A chain reuses: x -> 10 Relus -> y needs two buffers, not eleven.
  PlanMaker p(4);
  int32_t v = p.Input("x", {-1, 1024});
  for (int i = 0; i < 10; ++i) v = p.Node(i % 2 == 0 ? "Relu" : "Tanh", {v});
  p.Output(v);
  Result<Program> program = Compile(p.plan);
  if (c.True(program.ok(), "chain compiles")) {
    c.True(program.value().workspace_bytes <= 3 * 4 * 1024 * 4 + 256, "chain workspace reuses buffers");
  }
}

// Random dense graphs: every op reads one or two earlier values of the same
// shape, [B, 8] or [B, 4]; the plan must never overlap two live buffers.
void TestMemoryPlanRandomGraphs(Checker& c) {
  std::mt19937 rng(7);
  const char* unary[] = {"Relu", "Sigmoid", "Tanh", "Identity", "Softmax"};
  const char* binary[] = {"Add", "Sub", "Mul", "Div"};
  for (int trial = 0; trial < 100; ++trial) {
    PlanMaker p(1 + rng() % 16);
    std::vector<int32_t> wide = {p.Input("x", {-1, 8})}, narrow = {p.Input("y", {-1, 4})};
    const int nodes = 2 + static_cast<int>(rng() % 30);
    for (int n = 0; n < nodes; ++n) {
      const int kind = static_cast<int>(rng() % 4);
      std::vector<int32_t>& pool = rng() % 2 ? wide : narrow;
      const int32_t a = pool[rng() % pool.size()], b = pool[rng() % pool.size()];
      if (kind == 0) {
        pool.push_back(p.Node(unary[rng() % 5], {a}));
      } else if (kind == 1) {
        pool.push_back(p.Node(binary[rng() % 4], {a, b}));
      } else if (kind == 2) {  // narrow -> wide through a Gemm
        wide.push_back(p.Node("Gemm", {narrow[rng() % narrow.size()], p.Random("w" + std::to_string(n), {4, 8}, n)}));
      } else {
        narrow.push_back(p.Node("Concat", {narrow[rng() % narrow.size()], narrow[rng() % narrow.size()]},
                                {{"axis", Int(1)}}));
        narrow.back() = p.Node("ReduceMean", {p.Node("Reshape", {narrow.back(), p.Int64s("s" + std::to_string(n), {3}, {0, 4, 2})})},
                               {{"axes", Ints({2})}, {"keepdims", Int(0)}});
      }
    }
    p.Output(wide.back());
    p.Output(narrow[rng() % narrow.size()]);
    Result<Program> program = Compile(p.plan);
    if (!c.True(program.ok(), "random graph compiles: " + program.status().ToString())) break;
    std::vector<BufferLifetime> lifetimes;
    MemoryPlan plan;
    for (const PlannedBuffer& b : program.value().buffers) {
      lifetimes.push_back(b.lifetime);
      plan.offsets.push_back(b.offset);
    }
    plan.total_bytes = program.value().error_flag_offset;
    Status ok = CheckMemoryPlan(lifetimes, plan);
    if (!c.True(ok.ok(), "random graph plan: " + ok.message())) break;
    c.True(program.value().workspace_bytes >= program.value().error_flag_offset + 4, "room for the error flag");
  }
}

}  // namespace
}  // namespace hotpath::executor

int main() {
  hotpath::test::Checker check;
  using namespace hotpath::executor;
  TestGemmAndMatMulShapes(check);
  TestBroadcastShapes(check);
  TestUnaryShapes(check);
  TestShapeOps(check);
  TestNormReduceGatherCast(check);
  TestValidationErrors(check);
  TestFusionAndAliases(check);
  TestMemoryPlanRandomLifetimes(check);
  TestMemoryPlanRandomGraphs(check);
  return check.ExitCode();
}
