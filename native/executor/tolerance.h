// The one tolerance for comparing a device's float outputs with the host
// reference (issue 22): every element must satisfy
//
//     |d - h| <= rtol * (|h| + rms(h))
//
// where rms(h) is the root mean square of the whole reference output. Why
// this form: both sides compute in FP32 but sum in different orders (the
// host's Dot keeps 8 interleaved partial sums, the own SGEMM one FMA chain,
// cuBLAS its own split). That difference scales with the size of the sums
// the layer formed, not with the one element, so an element that a final
// linear layer leaves near 0 (e.g. 1e-3 in an output whose rms is 1) must not
// be held to 1e-5 of itself. A per-element `atol + rtol |h|` fails such
// elements on correct kernels; the rms term scales the absolute slack with
// the output instead of a fixed atol. An indexing or layout bug still gives
// O(rms) differences and fails by orders of magnitude.
//
// NaN must meet NaN and an infinity the same infinity.
//
// Used by executor_check (bench/native), the GPU CTests and the host
// device-order test, so a device run and its CPU emulation are judged alike.
// Header-only; plain functions, thread-safe.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace hotpath::executor {

// rtol for one kernel or a small graph (a few layers of K <= 1024).
inline constexpr double kDeviceRtol = 1e-5;
// rtol for a model of several wide layers (executor_check's models, the
// 4 x 1024 test MLP): each layer adds about 2^-24 * sqrt(K) of the sum's rms,
// and a linear last layer can cancel most of a sum. The host device-order
// test (device_order_models_test) reports the margin on the real models.
inline constexpr double kModelRtol = 1e-4;

struct FloatComparison {
  uint64_t elements = 0;
  uint64_t failures = 0;   // elements outside the tolerance (NaN/inf mismatches included)
  double rms = 0;          // rms of the reference
  double rtol = 0;
  double max_abs = 0;      // largest |d - h| over finite pairs
  double max_ratio = 0;    // largest |d - h| / (rtol (|h| + rms)): > 1 fails
  uint64_t worst = 0;      // index of the element with the largest ratio
  double worst_got = 0, worst_want = 0;
  bool ok() const { return failures == 0; }
};

// A number as a person reads it: 6 significant digits, exponent when small
// or large ("2.81e-06", "0.00123457", "1024").
inline std::string FormatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

// Compares `got` (the device) with `want` (the host reference), n floats.
inline FloatComparison CompareFloats(const float* got, const float* want, size_t n, double rtol) {
  FloatComparison c;
  c.elements = n;
  c.rtol = rtol;
  double sum_squares = 0;
  size_t finite = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isfinite(want[i])) {
      sum_squares += static_cast<double>(want[i]) * want[i];
      ++finite;
    }
  }
  c.rms = finite == 0 ? 0.0 : std::sqrt(sum_squares / static_cast<double>(finite));
  for (size_t i = 0; i < n; ++i) {
    const double g = got[i];
    const double w = want[i];
    double ratio = 0;
    if (std::isnan(w) || std::isnan(g)) {
      ratio = std::isnan(w) && std::isnan(g) ? 0 : INFINITY;
    } else if (std::isinf(w) || std::isinf(g)) {
      ratio = g == w ? 0 : INFINITY;
    } else {
      const double diff = std::fabs(g - w);
      const double allowed = rtol * (std::fabs(w) + c.rms);
      if (diff > c.max_abs) c.max_abs = diff;
      ratio = diff == 0 ? 0 : (allowed > 0 ? diff / allowed : INFINITY);
    }
    if (ratio > 1) ++c.failures;
    if (i == 0 || ratio > c.max_ratio) {
      c.max_ratio = ratio;
      c.worst = i;
      c.worst_got = g;
      c.worst_want = w;
    }
  }
  return c;
}

// "3 of 1024 elements outside |d - h| <= 1e-05 (|h| + rms 0.731): worst
// [17] device 0.00123 host 0.00119 (|d - h| 4.1e-05 = 2.3x allowed);
// max |d - h| 4.1e-05".
inline std::string DescribeComparison(const FloatComparison& c) {
  std::string text = std::to_string(c.failures) + " of " + std::to_string(c.elements) +
                     " elements outside |d - h| <= " + FormatNumber(c.rtol) + " (|h| + rms " +
                     FormatNumber(c.rms) + ")";
  if (c.elements > 0) {
    text += ": worst [" + std::to_string(c.worst) + "] device " + FormatNumber(c.worst_got) + " host " +
            FormatNumber(c.worst_want) + " (" + FormatNumber(c.max_ratio) + "x the allowed difference)";
  }
  return text + "; max |d - h| " + FormatNumber(c.max_abs);
}

}  // namespace hotpath::executor
