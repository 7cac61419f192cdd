// Scalar math shared by the host kernels (host_kernels.cc, C++20) and the CUDA
// kernels (cuda_kernels.cu, nvcc C++17): the activation epilogue, the Gemm
// bias lookup and IEEE binary16 conversion. One definition for both sides so
// the two kernel sets differ only in summation order, never in formulas.
//
// Every function is a pure, inline value function (thread-safe). Under nvcc
// they are __host__ __device__.
#pragma once

#include <math.h>  // ::expf / ::tanhf / ::fmaf, which both g++ and nvcc device code provide
#include <stdint.h>
#include <string.h>  // memcpy: the portable bit cast on host and device

#include "executor/kernels.h"

#if defined(__CUDACC__)
#define HOTPATH_HD __host__ __device__
#else
#define HOTPATH_HD
#endif

namespace hotpath::executor::detail {

// Comparisons are written so a NaN input stays NaN (x < 0 is false for NaN),
// as ONNX Runtime's CPU kernels do, instead of fmaxf/fminf which drop NaNs.
HOTPATH_HD inline float ApplyActivation(float x, const ActivationParams& p) {
  switch (p.kind) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x < 0.0f ? 0.0f : x;
    case Activation::kLeakyRelu:
      return x < 0.0f ? p.alpha * x : x;
    case Activation::kSigmoid: {
      // exp of a non-positive argument only, so large |x| cannot overflow.
      if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
      float e = expf(x);
      return e / (1.0f + e);
    }
    case Activation::kTanh:
      return tanhf(x);
    case Activation::kClip: {
      float y = x < p.lo ? p.lo : x;
      return y > p.hi ? p.hi : y;
    }
  }
  return x;
}

// The bias element added to C[batch][i][j] (see BiasKind); 0 for kNone.
HOTPATH_HD inline float BiasAt(const float* bias, BiasKind kind, int64_t bias_offset, int64_t n,
                               int64_t i, int64_t j) {
  switch (kind) {
    case BiasKind::kNone:
      return 0.0f;
    case BiasKind::kScalar:
      return bias[bias_offset];
    case BiasKind::kRow:
      return bias[bias_offset + j];
    case BiasKind::kColumn:
      return bias[bias_offset + i];
    case BiasKind::kFull:
      return bias[bias_offset + i * n + j];
  }
  return 0.0f;
}

// The Gemm epilogue on `scaled` = alpha * (the sum of op(A) @ op(B)), already
// rounded: the bias as one fused multiply-add (beta * bias + scaled), then
// the activation. Written with fmaf so the device kernels (where nvcc would
// contract a plain `scaled + beta * bias` or not, as it sees fit) and the
// host device-order set (host_device_order.h) round it identically. The
// reference host set keeps its own unfused epilogue.
HOTPATH_HD inline float GemmBiasActivation(float scaled, const GemmArgs& g, float bias) {
  if (g.bias_kind != BiasKind::kNone) scaled = fmaf(g.beta, bias, scaled);
  return ApplyActivation(scaled, g.activation);
}

// float <-> double for Cast. Every value converts exactly (or, narrowing,
// with the hardware's round-to-nearest-even) on host and device alike, except
// NaN: CPUs keep a NaN's payload, GPUs produce a canonical NaN. Both sides
// therefore write the same canonical quiet NaN (sign kept), so Cast results
// are bit-identical on every device.
HOTPATH_HD inline double WidenFloat(float value) {
  if (value != value) {
    uint32_t in_bits = 0;
    memcpy(&in_bits, &value, sizeof(in_bits));
    const uint64_t bits = 0x7FF8000000000000ull | (static_cast<uint64_t>(in_bits & 0x80000000u) << 32);
    double nan = 0.0;
    memcpy(&nan, &bits, sizeof(nan));
    return nan;
  }
  return static_cast<double>(value);
}

HOTPATH_HD inline float NarrowDouble(double value) {
  if (value != value) {
    uint64_t in_bits = 0;
    memcpy(&in_bits, &value, sizeof(in_bits));
    const uint32_t bits = 0x7FC00000u | static_cast<uint32_t>((in_bits >> 32) & 0x80000000u);
    float nan = 0.0f;
    memcpy(&nan, &bits, sizeof(nan));
    return nan;
  }
  return static_cast<float>(value);
}

// Rounds `value` to binary16 (round to nearest, ties to even), from the
// double's bits so the result is rounded exactly once whatever the source
// type (a float converts to double exactly). Overflow gives +-inf (anything
// at or above 65520 in magnitude), values below half the smallest subnormal
// give +-0, NaN becomes the canonical quiet NaN 0x7E00 (sign kept).
HOTPATH_HD inline uint16_t DoubleToHalfBits(double value) {
  uint64_t bits = 0;
  memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 48) & 0x8000u);
  const int exponent = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);

  if (exponent == 0x7FF) {  // inf, or NaN (the canonical quiet NaN, as WidenFloat)
    return static_cast<uint16_t>(sign | (mantissa == 0 ? 0x7C00u : 0x7E00u));
  }
  if (exponent == 0) return sign;  // zero or a double subnormal (< 2^-1022)

  const int e = exponent - 1023;  // value = 1.mantissa * 2^e
  if (e > 15) return static_cast<uint16_t>(sign | 0x7C00u);
  if (e >= -14) {
    // Normal half: keep 10 of the 52 mantissa bits. A carry out of the
    // mantissa bumps the exponent, and out of exponent 30 gives inf, which is
    // exactly the right result in both cases.
    uint32_t half = (static_cast<uint32_t>(e + 15) << 10) | static_cast<uint32_t>(mantissa >> 42);
    const uint64_t rest = mantissa & ((uint64_t{1} << 42) - 1);
    const uint64_t halfway = uint64_t{1} << 41;
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Subnormal half: the value in units of 2^-24 is significand >> (28 - e).
  const int shift = 28 - e;  // >= 43
  if (shift > 60) return sign;  // < 2^-33: far below half of 2^-24
  const uint64_t significand = mantissa | (uint64_t{1} << 52);
  uint32_t half = static_cast<uint32_t>(significand >> shift);
  const uint64_t rest = significand & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  // Rounding up from 0x3FF gives 0x400, the smallest normal: also right.
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

HOTPATH_HD inline uint16_t FloatToHalfBits(float value) { return DoubleToHalfBits(WidenFloat(value)); }

// Exact: every binary16 value is a float.
HOTPATH_HD inline float HalfBitsToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1Fu;
  const uint32_t mantissa = half & 0x3FFu;
  uint32_t bits = 0;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float (a normal float).
    float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1F) {
    bits = sign | (mantissa == 0 ? 0x7F800000u : 0x7FC00000u);  // inf, or the canonical NaN
  } else {
    bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float result = 0.0f;
  memcpy(&result, &bits, sizeof(result));
  return result;
}

}  // namespace hotpath::executor::detail
