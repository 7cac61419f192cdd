// Arithmetic on linear sizes (Lin, steps.h) for the compiler.
//
// Sizes come from an untrusted plan, so every product saturates at kSaturated
// instead of overflowing; the compiler then rejects any tensor bigger than
// kMaxCompiledBytes, which every saturated size is. Products of two sizes
// that both depend on the rows are not linear: MulLin reports them, Prod
// saturates them (a defined tensor never has two such dimensions).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "executor/detail/steps.h"

namespace hotpath::executor::detail {

inline constexpr int64_t kSaturated = int64_t{1} << 62;

inline int64_t SatMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (a < 0 || b < 0) return kSaturated;  // never valid for a size
  if (__builtin_mul_overflow(a, b, &out) || out > kSaturated) return kSaturated;
  return out;
}

inline int64_t SatAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out) || out > kSaturated) return kSaturated;
  return out;
}

// The size at `rows` rows, saturating (compile-time checks; the run time uses
// Lin::At on sizes already checked to fit).
inline int64_t SatAt(const Lin& lin, int64_t rows) {
  return SatAdd(SatMul(lin.per_row, rows), lin.fixed);
}

inline Lin AddLin(const Lin& a, const Lin& b) {
  return Lin{SatAdd(a.per_row, b.per_row), SatAdd(a.fixed, b.fixed)};
}

// nullopt when both depend on the rows (the product is quadratic).
inline std::optional<Lin> MulLin(const Lin& a, const Lin& b) {
  if (!a.is_fixed() && !b.is_fixed()) return std::nullopt;
  if (a.is_fixed()) return Lin{SatMul(b.per_row, a.fixed), SatMul(b.fixed, a.fixed)};
  return Lin{SatMul(a.per_row, b.fixed), SatMul(a.fixed, b.fixed)};
}

// Product of dims[from, to); saturated when it is not linear.
inline Lin Prod(const Shape& dims, size_t from, size_t to) {
  Lin out = Fixed(1);
  for (size_t i = from; i < to && i < dims.size(); ++i) {
    std::optional<Lin> next = MulLin(out, dims[i]);
    out = next ? *next : Fixed(kSaturated);
  }
  return out;
}
inline Lin Numel(const Shape& dims) { return Prod(dims, 0, dims.size()); }

// Row-major strides in elements.
inline Shape Strides(const Shape& dims) {
  Shape strides(dims.size());
  for (size_t i = dims.size(); i-- > 0;) strides[i] = Prod(dims, i + 1, dims.size());
  return strides;
}

// "B" for the batch rows: "[B,3]", "[2B+1,4]", "[5]".
inline std::string LinString(const Lin& lin) {
  if (lin.is_fixed()) return std::to_string(lin.fixed);
  std::string out = lin.per_row == 1 ? "B" : std::to_string(lin.per_row) + "B";
  if (lin.fixed != 0) out += "+" + std::to_string(lin.fixed);
  return out;
}
inline std::string ShapeString(const Shape& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ",";
    out += LinString(dims[i]);
  }
  return out + "]";
}

}  // namespace hotpath::executor::detail
