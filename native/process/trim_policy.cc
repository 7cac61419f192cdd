// ExcessThreshold and ShouldTrim. See trim_policy.h.
#include "process/trim_policy.h"

#include <algorithm>
#include <cmath>

namespace hotpath::process {

uint64_t ExcessThreshold(const TrimSettings& settings, uint64_t accounted_bytes) {
  const double ratio = std::max(0.0, settings.excess_ratio);
  const double scaled = std::floor(ratio * static_cast<double>(accounted_bytes));
  // 2^63 bytes is far beyond any RSS: clamping keeps the conversion defined.
  const uint64_t proportional = scaled >= 9.2e18 ? (1ull << 63) : static_cast<uint64_t>(scaled);
  return std::max(settings.min_excess_bytes, proportional);
}

bool ShouldTrim(const TrimSettings& settings, const TrimInputs& inputs) {
  if (inputs.requested) return true;
  if (inputs.rss_bytes <= inputs.accounted_bytes) return false;
  const uint64_t excess = inputs.rss_bytes - inputs.accounted_bytes;
  if (excess < ExcessThreshold(settings, inputs.accounted_bytes)) return false;
  if (!inputs.trimmed_before) return true;
  return inputs.rss_bytes >= inputs.rss_floor_bytes &&
         inputs.rss_bytes - inputs.rss_floor_bytes >= settings.min_growth_bytes;
}

}  // namespace hotpath::process
