// Op compilers for data movement: Concat, Flatten, Reshape, Squeeze,
// Unsqueeze, Transpose, Identity, Gather and Cast. Shape-only ops define an
// alias of their input (no step, no copy); the others emit Copy2D, Transpose,
// Gather or Cast steps. These work on every dtype the executor carries,
// except Cast, which converts between the float types.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "executor/detail/graph_builder.h"

namespace hotpath::executor::detail {
namespace {

bool IsFloatType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kFloat64;
}

// Axes from the attribute (before `input_opset`) or from input 1 (from it on).
Result<std::vector<int64_t>> AxesOperand(GraphBuilder& b, int64_t input_opset) {
  if (b.opset() < input_opset) return b.IntsAttr("axes");
  if (b.input(1) < 0) return std::vector<int64_t>{};
  return b.ConstInts(b.input(1), "axes");
}

Result<std::vector<bool>> AxisSet(GraphBuilder& b, const std::vector<int64_t>& axes, size_t rank) {
  std::vector<bool> set(rank, false);
  for (int64_t a : axes) {
    Result<size_t> axis = NormalizeAxis(b, a, rank);
    if (!axis.ok()) return axis.status();
    if (set[axis.value()]) return b.Invalid("axis " + std::to_string(a) + " is listed twice");
    set[axis.value()] = true;
  }
  return set;
}

}  // namespace

Status CompileConcat(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"axis"}); !s.ok()) return s;
  if (!b.HasAttr("axis")) return b.Invalid("attribute 'axis' is required");
  if (Status s = b.ExpectInputs(1, b.node().inputs.size()); !s.ok()) return s;
  const int32_t first = b.input(0), out = b.output(0);
  const DType dtype = b.value(first).dtype;
  const Shape& first_dims = b.value(first).dims;
  Result<int64_t> axis_attr = b.IntAttr("axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  Result<size_t> axis_r = NormalizeAxis(b, axis_attr.value(), first_dims.size());
  if (!axis_r.ok()) return axis_r.status();
  const size_t axis = axis_r.value();
  Shape dims = first_dims;
  dims[axis] = Fixed(0);
  for (int32_t in : b.node().inputs) {
    if (in < 0) return b.Invalid("an input is missing");
    const Shape& d = b.value(in).dims;
    if (b.value(in).dtype != dtype || d.size() != dims.size()) {
      return b.Invalid("inputs differ in dtype or rank (" + ShapeString(first_dims) + " vs " + ShapeString(d) + ")");
    }
    for (size_t i = 0; i < d.size(); ++i) {
      if (i == axis || d[i] == dims[i]) continue;
      const bool fixed = d[i].is_fixed() && dims[i].is_fixed();
      const std::string why = "inputs " + ShapeString(first_dims) + " and " + ShapeString(d) +
                              " differ outside axis " + std::to_string(axis);
      return fixed ? b.Invalid(why) : b.Unsupported(why);
    }
    dims[axis] = AddLin(dims[axis], d[axis]);
  }
  if (Status s = b.DefineRuntime(out, dtype, dims); !s.ok()) return s;
  const Lin esize = Fixed(DTypeSize(dtype));
  const Lin inner = Prod(dims, axis + 1, dims.size());
  const std::optional<Lin> inner_bytes = MulLin(inner, esize);
  const std::optional<Lin> dst_pitch = MulLin(dims[axis], *inner_bytes);
  if (!dst_pitch) return b.Unsupported("output " + ShapeString(dims) + " is not linear in the batch");
  Lin offset = Fixed(0);
  for (int32_t in : b.node().inputs) {
    const std::optional<Lin> row_bytes = MulLin(b.value(in).dims[axis], *inner_bytes);
    if (!row_bytes) return b.Unsupported("input " + ShapeString(b.value(in).dims) + " is not linear in the batch");
    CopyStep step;
    step.src.value = in, step.dst.value = out;
    step.dst_offset = offset;
    step.rows = Prod(dims, 0, axis);
    step.row_bytes = *row_bytes;
    step.src_pitch = *row_bytes;
    step.dst_pitch = *dst_pitch;
    b.Emit(step);
    offset = AddLin(offset, *row_bytes);
  }
  return Status::Ok();
}

Status CompileFlatten(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"axis"}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(1, 1); !s.ok()) return s;
  const Shape& dims = b.value(b.input(0)).dims;
  Result<int64_t> axis_attr = b.IntAttr("axis", 1);
  if (!axis_attr.ok()) return axis_attr.status();
  Result<size_t> axis = NormalizeAxis(b, axis_attr.value(), dims.size(), /*inclusive=*/true);
  if (!axis.ok()) return axis.status();
  return b.DefineAlias(b.output(0), b.input(0),
                       {Prod(dims, 0, axis.value()), Prod(dims, axis.value(), dims.size())});
}

Status CompileReshape(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"allowzero"}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(2, 2); !s.ok()) return s;
  const Shape& dims = b.value(b.input(0)).dims;
  Result<std::vector<int64_t>> shape = b.ConstInts(b.input(1), "shape");
  if (!shape.ok()) return shape.status();
  Result<int64_t> allowzero = b.IntAttr("allowzero", 0);
  if (!allowzero.ok()) return allowzero.status();
  Shape out;
  std::optional<size_t> inferred;
  Lin known = Fixed(1);
  for (size_t i = 0; i < shape.value().size(); ++i) {
    const int64_t v = shape.value()[i];
    if (v == -1) {
      if (inferred) return b.Invalid("shape has more than one -1");
      inferred = i;
      out.push_back(Fixed(1));
      continue;
    }
    if (v < -1 || v > static_cast<int64_t>(kSaturated)) return b.Invalid("shape entry " + std::to_string(v) + " is invalid");
    Lin d = Fixed(v);
    if (v == 0 && allowzero.value() == 0) {  // 0 copies the input's dimension
      if (i >= dims.size()) return b.Invalid("shape entry " + std::to_string(i) + " is 0 beyond the input's rank");
      d = dims[i];
    }
    const std::optional<Lin> next = MulLin(known, d);
    if (!next) return b.Unsupported("shape " + ShapeString(out) + " is not linear in the batch");
    known = *next;
    out.push_back(d);
  }
  const Lin total = Numel(dims);
  if (inferred) {
    // total = x * known, for x a whole number (known fixed) or a fixed
    // multiple of the batch-linear known.
    Lin x;
    bool whole = false;
    if (known.is_fixed() && known.fixed != 0) {
      whole = total.per_row % known.fixed == 0 && total.fixed % known.fixed == 0;
      x = Lin{total.per_row / known.fixed, total.fixed / known.fixed};
    } else if (!known.is_fixed()) {
      const int64_t c = total.per_row / known.per_row;
      whole = total.per_row == c * known.per_row && total.fixed == SatMul(c, known.fixed);
      x = Fixed(c);
    }
    if (!whole) {
      const std::string why = "cannot infer the -1 in shape " + ShapeString(out) + " for input " + ShapeString(dims);
      return total.is_fixed() ? b.Invalid(why) : b.Unsupported(why);
    }
    out[*inferred] = x;
  } else if (!(known == total)) {
    const std::string why = "shape " + ShapeString(out) + " does not hold the elements of " + ShapeString(dims);
    return total.is_fixed() && known.is_fixed() ? b.Invalid(why) : b.Unsupported(why);
  }
  return b.DefineAlias(b.output(0), b.input(0), out);
}

Status CompileSqueeze(GraphBuilder& b) {
  const bool axes_input = b.opset() >= 13;
  Status attrs = axes_input ? b.CheckAttributes({}) : b.CheckAttributes({"axes"});
  if (!attrs.ok()) return attrs;
  if (Status s = b.ExpectInputs(1, axes_input ? 2 : 1); !s.ok()) return s;
  const Shape& dims = b.value(b.input(0)).dims;
  Result<std::vector<int64_t>> axes = AxesOperand(b, 13);
  if (!axes.ok()) return axes.status();
  Result<std::vector<bool>> set = AxisSet(b, axes.value(), dims.size());
  if (!set.ok()) return set.status();
  Shape out;
  for (size_t i = 0; i < dims.size(); ++i) {
    const bool squeeze = axes.value().empty() ? dims[i].is_const(1) : set.value()[i];
    if (!squeeze) {
      out.push_back(dims[i]);
    } else if (!dims[i].is_fixed()) {
      return b.Unsupported("axis " + std::to_string(i) + " of " + ShapeString(dims) + " is the batch dimension");
    } else if (dims[i].fixed != 1) {
      return b.Invalid("axis " + std::to_string(i) + " of " + ShapeString(dims) + " is not 1");
    }
  }
  return b.DefineAlias(b.output(0), b.input(0), out);
}

Status CompileUnsqueeze(GraphBuilder& b) {
  const bool axes_input = b.opset() >= 13;
  Status attrs = axes_input ? b.CheckAttributes({}) : b.CheckAttributes({"axes"});
  if (!attrs.ok()) return attrs;
  if (Status s = b.ExpectInputs(axes_input ? 2 : 1, axes_input ? 2 : 1); !s.ok()) return s;
  const Shape& dims = b.value(b.input(0)).dims;
  Result<std::vector<int64_t>> axes = AxesOperand(b, 13);
  if (!axes.ok()) return axes.status();
  if (axes.value().empty()) return b.Invalid("axes is empty");
  const size_t rank = dims.size() + axes.value().size();
  Result<std::vector<bool>> set = AxisSet(b, axes.value(), rank);
  if (!set.ok()) return set.status();
  Shape out;
  size_t next = 0;
  for (size_t i = 0; i < rank; ++i) out.push_back(set.value()[i] ? Fixed(1) : dims[next++]);
  return b.DefineAlias(b.output(0), b.input(0), out);
}

Status CompileTranspose(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"perm"}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(1, 1); !s.ok()) return s;
  const int32_t in = b.input(0), out = b.output(0);
  const Shape& dims = b.value(in).dims;
  Result<std::vector<int64_t>> perm_attr = b.IntsAttr("perm");
  if (!perm_attr.ok()) return perm_attr.status();
  std::vector<int64_t> perm = perm_attr.value();
  if (!b.HasAttr("perm")) {
    for (size_t i = dims.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  std::vector<bool> seen(dims.size(), false);
  bool permutation = perm.size() == dims.size();
  for (int64_t p : perm) {
    permutation = permutation && p >= 0 && p < static_cast<int64_t>(dims.size()) && !seen[static_cast<size_t>(p)];
    if (permutation) seen[static_cast<size_t>(p)] = true;
  }
  if (!permutation) return b.Invalid("perm is not a permutation of the " + std::to_string(dims.size()) + " axes");
  Shape out_dims;
  for (int64_t p : perm) out_dims.push_back(dims[static_cast<size_t>(p)]);
  // Moving only size-1 dimensions leaves the bytes in place: an alias.
  int64_t last = -1;
  bool in_order = true;
  for (int64_t p : perm) {
    if (dims[static_cast<size_t>(p)].is_const(1)) continue;
    in_order = in_order && p > last;
    last = p;
  }
  if (in_order) return b.DefineAlias(out, in, out_dims);
  if (Status s = b.DefineRuntime(out, b.value(in).dtype, out_dims); !s.ok()) return s;
  TransposeStep step;
  step.in.value = in, step.out.value = out;
  step.element_bytes = DTypeSize(b.value(in).dtype);
  step.rank = static_cast<int32_t>(dims.size());
  const Shape strides = Strides(dims);
  for (size_t k = 0; k < perm.size(); ++k) {
    step.out_dims[k] = out_dims[k];
    step.in_strides_permuted[k] = strides[static_cast<size_t>(perm[k])];
  }
  b.Emit(step);
  return Status::Ok();
}

Status CompileIdentity(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(1, 1); !s.ok()) return s;
  return b.DefineAlias(b.output(0), b.input(0), b.value(b.input(0)).dims);
}

Status CompileGather(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"axis"}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(2, 2); !s.ok()) return s;
  const int32_t data = b.input(0), indices = b.input(1), out = b.output(0);
  const Shape& dims = b.value(data).dims;
  const Shape& idx_dims = b.value(indices).dims;
  const DType idx_type = b.value(indices).dtype;
  if (idx_type != DType::kInt64 && idx_type != DType::kInt32) {
    return b.Invalid(std::string("indices must be INT64 or INT32, not ") + DTypeName(idx_type));
  }
  Result<int64_t> axis_attr = b.IntAttr("axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  Result<size_t> axis_r = NormalizeAxis(b, axis_attr.value(), dims.size());
  if (!axis_r.ok()) return axis_r.status();
  const size_t axis = axis_r.value();
  const Lin axis_len = dims[axis];
  if (b.IsConstant(indices) && axis_len.is_fixed()) {
    // Constant indices are checked once, here, instead of failing every job.
    Result<std::vector<int64_t>> values = b.ConstInts(indices, "indices");
    if (!values.ok()) return values.status();
    for (int64_t i : values.value()) {
      if (i < -axis_len.fixed || i >= axis_len.fixed) {
        return b.Invalid("index " + std::to_string(i) + " is out of range for axis length " +
                         std::to_string(axis_len.fixed));
      }
    }
  }
  Shape out_dims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(axis));
  out_dims.insert(out_dims.end(), idx_dims.begin(), idx_dims.end());
  out_dims.insert(out_dims.end(), dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, dims.end());
  if (Status s = b.DefineRuntime(out, b.value(data).dtype, out_dims); !s.ok()) return s;
  GatherStep step;
  step.data.value = data, step.indices.value = indices, step.out.value = out;
  step.indices_int64 = idx_type == DType::kInt64;
  step.outer = Prod(dims, 0, axis);
  step.axis_len = axis_len;
  step.inner = Prod(dims, axis + 1, dims.size());
  step.count = Numel(idx_dims);
  step.element_bytes = DTypeSize(b.value(data).dtype);
  b.Emit(step);
  return Status::Ok();
}

Status CompileCast(GraphBuilder& b) {
  if (Status s = b.CheckAttributes({"to", "saturate"}); !s.ok()) return s;
  if (Status s = b.ExpectInputs(1, 1); !s.ok()) return s;
  if (!b.HasAttr("to")) return b.Invalid("attribute 'to' is required");
  Result<int64_t> to_attr = b.IntAttr("to", 0);
  if (!to_attr.ok()) return to_attr.status();
  const int32_t in = b.input(0), out = b.output(0);
  const DType from = b.value(in).dtype;
  const DType to = static_cast<DType>(to_attr.value());
  if (!IsFloatType(from) || !IsFloatType(to)) {
    return b.Unsupported(std::string("casting ") + DTypeName(from) + " to " + DTypeName(to) +
                         " is not supported (FLOAT, FLOAT16 and DOUBLE only)");
  }
  if (from == to) return b.DefineAlias(out, in, b.value(in).dims);
  if (Status s = b.DefineRuntime(out, to, b.value(in).dims); !s.ok()) return s;
  CastStep step;
  step.in.value = in, step.out.value = out;
  step.count = Numel(b.value(in).dims);
  step.from = from, step.to = to;
  b.Emit(step);
  return Status::Ok();
}

}  // namespace hotpath::executor::detail
