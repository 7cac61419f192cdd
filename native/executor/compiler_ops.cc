// Op compilers for the dense ops: Gemm, MatMul, the element-wise binaries,
// activations, Softmax, BatchNormalization, LayerNormalization and the
// reductions. Each validates its node, infers its output shape (sizes linear
// in the batch rows) and emits kernel steps. Shape ops, Gather and Cast are
// in compiler_shape_ops.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "executor/detail/broadcast.h"
#include "executor/detail/graph_builder.h"

namespace hotpath::executor::detail {
namespace {

// Constants the compiler materialises (broadcast LayerNorm parameters) stay
// small; a parameter this big is better left to onnxruntime.
constexpr int64_t kMaxFoldedElements = int64_t{64} << 20;

std::vector<uint8_t> FloatBytes(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

Status ParseFlag(GraphBuilder& b, const char* name, bool* out) {
  Result<int64_t> v = b.IntAttr(name, 0);
  if (!v.ok()) return v.status();
  if (v.value() != 0 && v.value() != 1) {
    return b.Invalid("attribute '" + std::string(name) + "' must be 0 or 1, got " + std::to_string(v.value()));
  }
  *out = v.value() == 1;
  return Status::Ok();
}

// How Gemm's C broadcasts over [M, N] (unidirectional, right-aligned).
Result<BiasKind> ClassifyBias(GraphBuilder& b, const Shape& c, const Lin& m, const Lin& n) {
  if (c.size() > 2) return b.Invalid("C has rank " + std::to_string(c.size()) + "; expected at most 2");
  const Lin c0 = c.size() == 2 ? c[0] : Fixed(1);
  const Lin c1 = c.empty() ? Fixed(1) : c.back();
  if (c0.is_const(1) && c1.is_const(1)) return BiasKind::kScalar;
  if (c0.is_const(1) && c1 == n) return BiasKind::kRow;
  if (c0 == m && c1.is_const(1)) return BiasKind::kColumn;
  if (c0 == m && c1 == n) return BiasKind::kFull;
  return b.Invalid("C " + ShapeString(c) + " does not broadcast to [" + LinString(m) + "," +
                   LinString(n) + "]");
}

}  // namespace

Status CompileGemm(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"alpha", "beta", "transA", "transB"}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(2, 3); !s.ok()) return s;
  const int32_t a = b.input(0), w = b.input(1), c = b.input(2), out = b.output(0);
  for (int32_t v : {a, w, c}) {
    if (v < 0) continue;
    if (Status s = b.ExpectFloat(v, v == c ? "C" : v == a ? "A" : "B"); !s.ok()) return s;
  }
  Result<float> alpha = b.FloatAttr("alpha", 1.0f);
  if (!alpha.ok()) return alpha.status();
  Result<float> beta = b.FloatAttr("beta", 1.0f);
  if (!beta.ok()) return beta.status();
  GemmStep step;
  if (Status s = ParseFlag(b, "transA", &step.trans_a); !s.ok()) return s;
  if (Status s = ParseFlag(b, "transB", &step.trans_b); !s.ok()) return s;
  const Shape& ad = b.value(a).dims;
  const Shape& wd = b.value(w).dims;
  if (ad.size() != 2 || wd.size() != 2) {
    return b.Invalid("A " + ShapeString(ad) + " and B " + ShapeString(wd) + " must both have rank 2");
  }
  const Lin m = step.trans_a ? ad[1] : ad[0];
  const Lin k = step.trans_a ? ad[0] : ad[1];
  const Lin kb = step.trans_b ? wd[1] : wd[0];
  const Lin n = step.trans_b ? wd[0] : wd[1];
  if (!(k == kb)) {
    return b.Invalid("inner dimensions differ: A " + ShapeString(ad) + ", B " + ShapeString(wd) +
                     (step.trans_a ? " (transA)" : "") + (step.trans_b ? " (transB)" : ""));
  }
  if (Status s = b.DefineRuntime(out, DType::kFloat32, {m, n}); !s.ok()) return s;
  step.a.value = a;
  step.b.value = w;
  step.c.value = out;
  step.m = m, step.n = n, step.k = k;
  step.lda = ad[1], step.ldb = wd[1], step.ldc = n;
  step.alpha = alpha.value();
  if (c >= 0 && beta.value() != 0.0f) {
    Result<BiasKind> kind = ClassifyBias(b, b.value(c).dims, m, n);
    if (!kind.ok()) return kind.status();
    step.bias.value = c;
    step.bias_kind = kind.value();
    step.beta = beta.value();
  }
  b.Emit(step);
  return Status::Ok();
}

Status CompileMatMul(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(2, 2); !s.ok()) return s;
  const int32_t a = b.input(0), w = b.input(1), out = b.output(0);
  if (Status s = b.ExpectFloat(a, "A"); !s.ok()) return s;
  if (Status s = b.ExpectFloat(w, "B"); !s.ok()) return s;
  Shape ad = b.value(a).dims, wd = b.value(w).dims;
  if (ad.empty() || wd.empty()) return b.Invalid("operands must have rank >= 1");
  // numpy: a 1-D A is a row vector, a 1-D B a column vector; both extra
  // dimensions are dropped from the result.
  const bool drop_m = ad.size() == 1, drop_n = wd.size() == 1;
  if (drop_m) ad.insert(ad.begin(), Fixed(1));
  if (drop_n) wd.push_back(Fixed(1));
  const Lin m = ad[ad.size() - 2], k = ad.back(), kb = wd[wd.size() - 2], n = wd.back();
  if (!(k == kb)) return b.Invalid("inner dimensions differ: A " + ShapeString(ad) + ", B " + ShapeString(wd));
  const Shape batch_a(ad.begin(), ad.end() - 2), batch_b(wd.begin(), wd.end() - 2);
  Result<Shape> batch = BroadcastShapes(b, batch_a, batch_b);
  if (!batch.ok()) return batch.status();
  Shape out_dims = batch.value();
  if (!drop_m) out_dims.push_back(m);
  if (!drop_n) out_dims.push_back(n);
  if (Status s = b.DefineRuntime(out, DType::kFloat32, out_dims); !s.ok()) return s;

  GemmStep step;
  step.a.value = a, step.b.value = w, step.c.value = out;
  step.n = n, step.k = k, step.lda = k, step.ldb = n, step.ldc = n;
  const Lin batch_out = Numel(batch.value()), count_a = Numel(batch_a), count_b = Numel(batch_b);
  const std::optional<Lin> mk = MulLin(m, k), kn = MulLin(k, n), mn = MulLin(m, n);
  if (count_b.is_const(1)) {
    // B is one matrix: A's batch folds into M, one plain GEMM.
    std::optional<Lin> rows = MulLin(count_a, m);
    if (!rows) return b.Unsupported("A " + ShapeString(ad) + " is not linear in the batch");
    step.m = *rows;
  } else if (mk && kn && mn && (count_a.is_const(1) || count_a == batch_out) && count_b == batch_out) {
    // One GEMM per batch entry; a single A is shared (stride 0).
    step.m = m;
    step.batch = batch_out;
    step.stride_a = count_a.is_const(1) ? Fixed(0) : *mk;
    step.stride_b = *kn;
    step.stride_c = *mn;
  } else {
    return b.Unsupported("broadcasting the batch dimensions of A " + ShapeString(ad) + " and B " +
                         ShapeString(wd) + " is not supported (each must match the result's or be 1)");
  }
  b.Emit(step);
  return Status::Ok();
}

Status CompileBinary(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(2, 2); !s.ok()) return s;
  const int32_t x = b.input(0), y = b.input(1), out = b.output(0);
  if (Status s = b.ExpectFloat(x, "input A"); !s.ok()) return s;
  if (Status s = b.ExpectFloat(y, "input B"); !s.ok()) return s;
  Result<Shape> dims = BroadcastShapes(b, b.value(x).dims, b.value(y).dims);
  if (!dims.ok()) return dims.status();
  if (Status s = b.DefineRuntime(out, DType::kFloat32, dims.value()); !s.ok()) return s;
  static const std::unordered_map<std::string, BinaryOp> kOps = {
      {"Add", BinaryOp::kAdd}, {"Sub", BinaryOp::kSub}, {"Mul", BinaryOp::kMul}, {"Div", BinaryOp::kDiv}};
  BinaryStep step;
  step.op = kOps.at(b.node().op_type);
  step.a.value = x, step.b.value = y, step.out.value = out;
  BroadcastLayout layout = MakeBroadcastLayout(dims.value(), b.value(x).dims, b.value(y).dims);
  step.rank = static_cast<int32_t>(layout.dims.size());
  for (size_t i = 0; i < layout.dims.size(); ++i) {
    step.out_dims[i] = layout.dims[i];
    step.a_strides[i] = layout.a_strides[i];
    step.b_strides[i] = layout.b_strides[i];
  }
  b.Emit(step);
  return Status::Ok();
}

Status CompileActivation(GraphBuilder& b) {
  const std::string& op = b.node().op_type;
  const bool clip_inputs = op == "Clip" && b.opset() >= 11;
  ActivationParams act;
  if (op == "Relu") act.kind = Activation::kRelu;
  if (op == "Sigmoid") act.kind = Activation::kSigmoid;
  if (op == "Tanh") act.kind = Activation::kTanh;
  if (op == "LeakyRelu") act.kind = Activation::kLeakyRelu;
  if (op == "Clip") act.kind = Activation::kClip;
  Status attrs = op == "LeakyRelu"               ? b.CheckAttributes({"alpha"})
                 : (op == "Clip" && !clip_inputs) ? b.CheckAttributes({"min", "max"})
                                                  : b.CheckAttributes({});
  if (!attrs.ok()) return attrs;
  if (Status s = b.ExpectInputs(1, clip_inputs ? 3 : 1); !s.ok()) return s;
  const int32_t in = b.input(0), out = b.output(0);
  if (Status s = b.ExpectFloat(in, "input"); !s.ok()) return s;
  if (op == "LeakyRelu") {
    Result<float> alpha = b.FloatAttr("alpha", 0.01f);
    if (!alpha.ok()) return alpha.status();
    act.alpha = alpha.value();
  }
  if (op == "Clip" && !clip_inputs) {
    Result<float> lo = b.FloatAttr("min", std::numeric_limits<float>::lowest());
    if (!lo.ok()) return lo.status();
    Result<float> hi = b.FloatAttr("max", std::numeric_limits<float>::max());
    if (!hi.ok()) return hi.status();
    act.lo = lo.value(), act.hi = hi.value();
  }
  if (clip_inputs) {
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (b.input(i) < 0) continue;
      Result<std::vector<float>> bound = b.ConstFloats(b.input(i), i == 1 ? "min" : "max");
      if (!bound.ok()) return bound.status();
      if (bound.value().size() != 1) return b.Invalid(std::string(i == 1 ? "min" : "max") + " must be a scalar");
      (i == 1 ? act.lo : act.hi) = bound.value()[0];
    }
  }
  if (Status s = b.DefineRuntime(out, DType::kFloat32, b.value(in).dims); !s.ok()) return s;
  ActivationStep step;
  step.in.value = in, step.out.value = out;
  step.count = Numel(b.value(in).dims);
  step.activation = act;
  b.Emit(step);
  return Status::Ok();
}

Status CompileSoftmax(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"axis"}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(1, 1); !s.ok()) return s;
  const int32_t in = b.input(0), out = b.output(0);
  if (Status s = b.ExpectFloat(in, "input"); !s.ok()) return s;
  const Shape& dims = b.value(in).dims;
  // Before opset 13 Softmax flattens the input to 2-D at `axis` (default 1);
  // from 13 on it normalises along the one axis (default -1).
  const bool flatten = b.opset() < 13;
  Result<int64_t> axis_attr = b.IntAttr("axis", flatten ? 1 : -1);
  if (!axis_attr.ok()) return axis_attr.status();
  Result<size_t> axis = NormalizeAxis(b, axis_attr.value(), dims.size());
  if (!axis.ok()) return axis.status();
  if (Status s = b.DefineRuntime(out, DType::kFloat32, dims); !s.ok()) return s;
  SoftmaxStep step;
  step.in.value = in, step.out.value = out;
  step.outer = Prod(dims, 0, axis.value());
  step.axis = flatten ? Prod(dims, axis.value(), dims.size()) : dims[axis.value()];
  step.inner = flatten ? Fixed(1) : Prod(dims, axis.value() + 1, dims.size());
  b.Emit(step);
  return Status::Ok();
}

Status CompileBatchNorm(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"epsilon", "momentum", "training_mode", "spatial"}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(5, 5); !s.ok()) return s;
  if (Status s = b.ExpectUnusedOutputsFrom(1); !s.ok()) return s;
  Result<int64_t> training = b.IntAttr("training_mode", 0);
  if (!training.ok()) return training.status();
  if (training.value() != 0) return b.Unsupported("training_mode=1 is not supported (inference only)");
  Result<float> epsilon = b.FloatAttr("epsilon", 1e-5f);
  if (!epsilon.ok()) return epsilon.status();
  const int32_t x = b.input(0), out = b.output(0);
  if (Status s = b.ExpectFloat(x, "X"); !s.ok()) return s;
  const Shape& dims = b.value(x).dims;
  if (dims.size() < 2) return b.Invalid("X " + ShapeString(dims) + " must have rank >= 2 (N, C, ...)");
  if (!dims[1].is_fixed()) return b.Unsupported("the channel dimension of X " + ShapeString(dims) + " depends on the batch");
  const size_t channels = static_cast<size_t>(dims[1].fixed);
  static const char* const kRoles[] = {"X", "scale", "B", "input_mean", "input_var"};
  std::vector<float> params[5];
  for (size_t i = 1; i < 5; ++i) {
    Result<std::vector<float>> values = b.ConstFloats(b.input(i), kRoles[i]);
    if (!values.ok()) return values.status();
    if (values.value().size() != channels) {
      return b.Invalid(std::string(kRoles[i]) + " has " + std::to_string(values.value().size()) +
                       " elements for " + std::to_string(channels) + " channels");
    }
    params[i] = std::move(values).value();
  }
  // Folded once, here: y = x * scale' + shift' with scale' = scale/sqrt(var+eps)
  // and shift' = B - mean * scale' (computed in double, stored as float).
  std::vector<float> scale(channels), shift(channels);
  for (size_t c = 0; c < channels; ++c) {
    const double s = params[1][c] / std::sqrt(static_cast<double>(params[4][c]) + epsilon.value());
    scale[c] = static_cast<float>(s);
    shift[c] = static_cast<float>(params[2][c] - params[3][c] * s);
  }
  const Shape channel_dims = {Fixed(static_cast<int64_t>(channels))};
  Result<int32_t> scale_v = b.AddConstant(DType::kFloat32, channel_dims, FloatBytes(scale));
  Result<int32_t> shift_v = b.AddConstant(DType::kFloat32, channel_dims, FloatBytes(shift));
  if (!scale_v.ok()) return scale_v.status();
  if (!shift_v.ok()) return shift_v.status();
  if (Status s = b.DefineRuntime(out, DType::kFloat32, dims); !s.ok()) return s;
  ChannelAffineStep step;
  step.in.value = x, step.out.value = out;
  step.scale.value = scale_v.value(), step.shift.value = shift_v.value();
  step.outer = dims[0];
  step.channels = dims[1];
  step.inner = Prod(dims, 2, dims.size());
  b.Emit(step);
  return Status::Ok();
}

namespace {

// LayerNorm's scale or bias as exactly `cols` floats laid out like the
// normalised dims: used as is when it already is, else broadcast into a
// folded constant (only possible for an initializer).
Result<int32_t> LayerNormParam(GraphBuilder& b, int32_t v, const char* role, const Shape& norm) {
  if (Status s = b.ExpectFloat(v, role); !s.ok()) return s;
  const Shape& dims = b.value(v).dims;
  Result<Shape> target = BroadcastShapes(b, dims, norm);
  if (!target.ok() || !(target.value() == norm)) {
    return b.Invalid(std::string(role) + " " + ShapeString(dims) + " does not broadcast to the normalised shape " +
                     ShapeString(norm));
  }
  if (Numel(dims) == Numel(norm)) return v;  // same elements, same order
  if (!b.IsConstant(v)) {
    return b.Unsupported(std::string(role) + " " + ShapeString(dims) +
                         " is computed at run time and needs broadcasting to " + ShapeString(norm));
  }
  const int64_t cols = Numel(norm).fixed;
  if (cols > kMaxFoldedElements) return b.Unsupported("the normalised shape " + ShapeString(norm) + " is too large");
  Result<std::vector<float>> values = b.ConstFloats(v, role);
  if (!values.ok()) return values.status();
  const BroadcastLayout layout = MakeBroadcastLayout(norm, dims, dims);
  std::vector<float> expanded(static_cast<size_t>(cols));
  for (int64_t i = 0; i < cols; ++i) {
    int64_t rest = i, src = 0;
    for (size_t d = layout.dims.size(); d-- > 0;) {
      const int64_t extent = layout.dims[d].fixed;
      src += (rest % extent) * layout.a_strides[d].fixed;
      rest /= extent;
    }
    expanded[static_cast<size_t>(i)] = values.value()[static_cast<size_t>(src)];
  }
  return b.AddConstant(DType::kFloat32, norm, FloatBytes(expanded));
}

}  // namespace

Status CompileLayerNorm(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"axis", "epsilon", "stash_type"}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(2, 3); !s.ok()) return s;
  if (Status s = b.ExpectUnusedOutputsFrom(1); !s.ok()) return s;
  const int32_t x = b.input(0), out = b.output(0);
  if (Status s = b.ExpectFloat(x, "X"); !s.ok()) return s;
  const Shape& dims = b.value(x).dims;
  Result<int64_t> axis_attr = b.IntAttr("axis", -1);
  if (!axis_attr.ok()) return axis_attr.status();
  Result<size_t> axis = NormalizeAxis(b, axis_attr.value(), dims.size());
  if (!axis.ok()) return axis.status();
  Result<float> epsilon = b.FloatAttr("epsilon", 1e-5f);
  if (!epsilon.ok()) return epsilon.status();
  const Shape norm(dims.begin() + static_cast<std::ptrdiff_t>(axis.value()), dims.end());
  if (!Numel(norm).is_fixed()) {
    return b.Unsupported("the normalised dimensions " + ShapeString(norm) + " depend on the batch");
  }
  Result<int32_t> scale = LayerNormParam(b, b.input(1), "Scale", norm);
  if (!scale.ok()) return scale.status();
  int32_t bias = -1;
  if (b.input(2) >= 0) {
    Result<int32_t> folded = LayerNormParam(b, b.input(2), "B", norm);
    if (!folded.ok()) return folded.status();
    bias = folded.value();
  }
  if (Status s = b.DefineRuntime(out, DType::kFloat32, dims); !s.ok()) return s;
  LayerNormStep step;
  step.in.value = x, step.out.value = out;
  step.scale.value = scale.value(), step.bias.value = bias;
  step.rows = Prod(dims, 0, axis.value());
  step.cols = Numel(norm);
  step.epsilon = epsilon.value();
  b.Emit(step);
  return Status::Ok();
}

Status CompileReduce(GraphBuilder& b) {
  const bool mean = b.node().op_type == "ReduceMean";
  // Axes moved from an attribute to an optional input: ReduceSum at opset
  // 13, ReduceMean at 18 (with noop_with_empty_axes alongside).
  const bool axes_input = b.opset() >= (mean ? 18 : 13);
  Status attrs = axes_input ? b.CheckAttributes({"keepdims", "noop_with_empty_axes"})
                            : b.CheckAttributes({"axes", "keepdims"});
  if (!attrs.ok()) return attrs;
  if (Status s = b.ExpectInputs(1, axes_input ? 2 : 1); !s.ok()) return s;
  const int32_t in = b.input(0), out = b.output(0);
  if (Status s = b.ExpectFloat(in, "input"); !s.ok()) return s;
  const Shape& dims = b.value(in).dims;
  Result<std::vector<int64_t>> axes = axes_input ? std::vector<int64_t>{} : b.IntsAttr("axes");
  if (axes_input && b.input(1) >= 0) axes = b.ConstInts(b.input(1), "axes");
  if (!axes.ok()) return axes.status();
  Result<int64_t> keepdims = b.IntAttr("keepdims", 1);
  if (!keepdims.ok()) return keepdims.status();
  Result<int64_t> noop = b.IntAttr("noop_with_empty_axes", 0);
  if (!noop.ok()) return noop.status();
  if (axes.value().empty() && noop.value() != 0) return b.DefineAlias(out, in, dims);

  std::vector<bool> reduced(dims.size(), axes.value().empty());
  for (int64_t a : axes.value()) {
    Result<size_t> axis = NormalizeAxis(b, a, dims.size());
    if (!axis.ok()) return axis.status();
    if (reduced[axis.value()]) return b.Invalid("axis " + std::to_string(a) + " is listed twice");
    reduced[axis.value()] = true;
  }
  size_t first = dims.size(), last = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d]) first = std::min(first, d), last = std::max(last, d);
  }
  if (first == dims.size()) first = last = 0;  // rank 0: reduce the one element
  for (size_t d = first; d < last; ++d) {
    if (!reduced[d] && !dims[d].is_const(1)) {
      return b.Unsupported("reducing over non-contiguous axes of " + ShapeString(dims) + " is not supported");
    }
  }
  Shape out_dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d]) out_dims.push_back(dims[d]);
    else if (keepdims.value() != 0) out_dims.push_back(Fixed(1));
  }
  if (Status s = b.DefineRuntime(out, DType::kFloat32, out_dims); !s.ok()) return s;
  ReduceStep step;
  step.in.value = in, step.out.value = out;
  step.outer = Prod(dims, 0, first);
  step.reduce = Prod(dims, first, dims.empty() ? 0 : last + 1);
  step.inner = Prod(dims, dims.empty() ? 0 : last + 1, dims.size());
  step.mean = mean;
  b.Emit(step);
  return Status::Ok();
}

OpCompiler FindOpCompiler(const std::string& op_type) {
  static const std::unordered_map<std::string, OpCompiler> kOps = {
      {"Gemm", CompileGemm},
      {"MatMul", CompileMatMul},
      {"Add", CompileBinary},
      {"Sub", CompileBinary},
      {"Mul", CompileBinary},
      {"Div", CompileBinary},
      {"Relu", CompileActivation},
      {"LeakyRelu", CompileActivation},
      {"Sigmoid", CompileActivation},
      {"Tanh", CompileActivation},
      {"Clip", CompileActivation},
      {"Softmax", CompileSoftmax},
      {"BatchNormalization", CompileBatchNorm},
      {"LayerNormalization", CompileLayerNorm},
      {"ReduceSum", CompileReduce},
      {"ReduceMean", CompileReduce},
      {"Concat", CompileConcat},
      {"Flatten", CompileFlatten},
      {"Reshape", CompileReshape},
      {"Squeeze", CompileSqueeze},
      {"Unsqueeze", CompileUnsqueeze},
      {"Transpose", CompileTranspose},
      {"Identity", CompileIdentity},
      {"Gather", CompileGather},
      {"Cast", CompileCast},
  };
  auto it = kOps.find(op_type);
  return it == kOps.end() ? nullptr : it->second;
}

}  // namespace hotpath::executor::detail
