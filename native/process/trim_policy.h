// When to give freed heap memory back to the operating system: a pure
// function of what was measured, testable without threads or a real heap.
//
// After a burst of large requests, glibc keeps the freed memory in its
// arenas (chunks below the mmap threshold, which itself grows to 32 MiB as
// large chunks are freed), so RSS stays at the burst's peak while the JS heap
// and external memory are back to normal. A container limit sees the peak.
// malloc_trim(0) hands those pages back; it walks every arena under their
// locks, so it runs only when RSS is far above what the process accounts for.
//
// Thread-safety: pure functions on values.
#pragma once

#include <cstdint>

namespace hotpath::process {

struct TrimSettings {
  // RSS above the accounted memory by less than this never trims.
  uint64_t min_excess_bytes = 64ull << 20;
  // ... nor by less than this fraction of the accounted memory.
  double excess_ratio = 0.5;
  // After a trim, RSS must grow this much above the lowest RSS seen since
  // before the next one: memory a trim cannot give back (worker heaps,
  // onnxruntime sessions, which the accounted figure does not cover) must not
  // cause a trim on every tick.
  uint64_t min_growth_bytes = 32ull << 20;
};

struct TrimInputs {
  uint64_t rss_bytes = 0;
  // What the process accounts for: the JS heap plus external memory, as the
  // JS thread last reported it (0 when it has not).
  uint64_t accounted_bytes = 0;
  // The lowest RSS seen since the last trim (its result, or lower since);
  // meaningful only when `trimmed_before`.
  uint64_t rss_floor_bytes = 0;
  bool trimmed_before = false;
  // The JS thread asked for a trim: a full collection just freed a burst's
  // garbage, which shows neither as RSS growth nor (yet) in `accounted_bytes`.
  bool requested = false;
};

// RSS minus what is accounted for, above which a trim may run:
// max(min_excess_bytes, excess_ratio * accounted_bytes).
uint64_t ExcessThreshold(const TrimSettings& settings, uint64_t accounted_bytes);

// True when asked (`requested`), or when RSS exceeds the accounted memory by
// more than ExcessThreshold and, after an earlier trim, has grown by at least
// min_growth_bytes above the floor since.
bool ShouldTrim(const TrimSettings& settings, const TrimInputs& inputs);

}  // namespace hotpath::process
