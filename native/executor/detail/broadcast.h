// ONNX (numpy) broadcasting for the compiler: the result shape of two
// operands, and the per-operand strides a Binary kernel walks, simplified
// (size-1 dimensions dropped, contiguous runs merged) so the common cases
// (same shape, a bias row) run as rank 1 or 2 loops. Internal.
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <optional>

#include "executor/detail/graph_builder.h"

namespace hotpath::executor::detail {

// Right-aligned: equal dimensions, or one of them 1. A batch-dependent
// dimension against a fixed one other than 1 only agrees for one batch size:
// FAILED_PRECONDITION; two fixed ones that differ: INVALID_ARGUMENT.
inline Result<Shape> BroadcastShapes(const GraphBuilder& b, const Shape& x, const Shape& y) {
  const size_t rank = std::max(x.size(), y.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Lin dx = i + x.size() >= rank ? x[i + x.size() - rank] : Fixed(1);
    const Lin dy = i + y.size() >= rank ? y[i + y.size() - rank] : Fixed(1);
    if (dx == dy || dy.is_const(1)) {
      out[i] = dx;
    } else if (dx.is_const(1)) {
      out[i] = dy;
    } else if (dx.is_fixed() && dy.is_fixed()) {
      return b.Invalid("shapes " + ShapeString(x) + " and " + ShapeString(y) + " do not broadcast");
    } else {
      return b.Unsupported("shapes " + ShapeString(x) + " and " + ShapeString(y) +
                           " only broadcast for one batch size");
    }
  }
  return out;
}

struct BroadcastLayout {
  Shape dims;       // the walk's extents (rank >= 1)
  Shape a_strides;  // elements; 0 where `a` is broadcast
  Shape b_strides;
};

// `a` and `b` must broadcast to `out` (BroadcastShapes).
inline BroadcastLayout MakeBroadcastLayout(const Shape& out, const Shape& a, const Shape& b) {
  auto aligned_strides = [&](const Shape& x) {
    const size_t offset = out.size() - x.size();
    const Shape own = Strides(x);
    Shape strides(out.size(), Fixed(0));
    for (size_t i = offset; i < out.size(); ++i) {
      if (!x[i - offset].is_const(1)) strides[i] = own[i - offset];
    }
    return strides;
  };
  const Shape sa = aligned_strides(a), sb = aligned_strides(b);
  BroadcastLayout layout;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].is_const(1)) continue;  // contributes nothing to any index
    layout.dims.push_back(out[i]);
    layout.a_strides.push_back(sa[i]);
    layout.b_strides.push_back(sb[i]);
  }
  // Merge dimension i into i+1 while both operands walk them as one run.
  for (size_t i = layout.dims.size(); i-- > 1;) {
    const size_t j = i - 1;  // the outer of the pair (j, i)
    const std::optional<Lin> a_run = MulLin(layout.a_strides[i], layout.dims[i]);
    const std::optional<Lin> b_run = MulLin(layout.b_strides[i], layout.dims[i]);
    const std::optional<Lin> extent = MulLin(layout.dims[j], layout.dims[i]);
    if (!a_run || !b_run || !extent || !(*a_run == layout.a_strides[j]) || !(*b_run == layout.b_strides[j])) {
      continue;
    }
    layout.dims[j] = *extent;
    layout.a_strides[j] = layout.a_strides[i];
    layout.b_strides[j] = layout.b_strides[i];
    layout.dims.erase(layout.dims.begin() + static_cast<std::ptrdiff_t>(i));
    layout.a_strides.erase(layout.a_strides.begin() + static_cast<std::ptrdiff_t>(i));
    layout.b_strides.erase(layout.b_strides.begin() + static_cast<std::ptrdiff_t>(i));
  }
  if (layout.dims.empty()) {
    layout.dims.push_back(Fixed(1));
    layout.a_strides.push_back(Fixed(0));
    layout.b_strides.push_back(Fixed(0));
  }
  return layout;
}

}  // namespace hotpath::executor::detail
