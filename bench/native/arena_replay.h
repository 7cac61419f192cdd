// Replay of the "high-frequency small batches" inference pattern against an
// arena, in simulated time (no sleeping): Poisson arrivals, per-model
// batching, per-request activation buffers, three tenants with quotas and
// idle evictable model reservations. See arena_replay.cc for the model.
#pragma once

#include <cstdint>
#include <memory>

#include "arena/arena.h"

namespace hotpath::bench {

struct ReplayConfig {
  double seconds = 300;       // simulated duration
  double rate_per_s = 120;    // Poisson arrivals, all models together
  double warmup_fraction = 0.1;  // requests before steady state
  uint64_t seed = 7;
};

struct FormStats {
  double peak = 0;
  double final = 0;  // at the last sample
};

struct ReplayResult {
  uint64_t requests = 0;
  uint64_t batches = 0;
  uint64_t steady_requests = 0;
  uint64_t steady_backend_calls = 0;  // allocs + frees after warm-up
  double backend_calls_steady_per_1k = 0;
  uint64_t backend_calls_total = 0;
  FormStats external_frag;
  FormStats cache_overhead;
  FormStats internal_frag;
  uint64_t cached_bytes_peak = 0;
  uint64_t backend_reserved_peak = 0;
  uint64_t evictions = 0;
  uint64_t model_loads = 0;
  uint64_t quota_rejections = 0;
  uint64_t end_bytes_held = 0;  // after destroying every owner: must be 0
};

// Runs the replay on `arena` (which must be empty). Samples the three
// fragmentation forms at each batch's allocation peak in steady state.
ReplayResult RunReplay(arena::Arena& arena, const ReplayConfig& config);

}  // namespace hotpath::bench
