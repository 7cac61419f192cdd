// Memory planning: where each runtime buffer of a compiled graph lives in
// the instance's one workspace block.
//
// Each buffer has a size (at max_batch_size rows) and a lifetime, an
// inclusive interval of step times (0 is "copy the job's inputs in", step s
// runs at s + 1, the last time copies the outputs out). Two buffers whose
// lifetimes intersect never overlap in memory; a buffer whose lifetime has
// ended is reused. The placement is greedy by size with best fit: buffers
// are placed largest first, each into the smallest gap (between the buffers
// already placed that are live at the same time) that holds it, else above
// them all. Offsets and sizes are rounded to `alignment`.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace hotpath::executor {

inline constexpr uint64_t kBufferAlignment = 256;

struct BufferLifetime {
  uint64_t bytes = 0;  // may be 0 (an empty tensor): placed, overlaps nothing
  int32_t first = 0;   // time it is written first
  int32_t last = 0;    // time it is read last (>= first)
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // per buffer, multiples of the alignment
  uint64_t total_bytes = 0;       // workspace bytes the buffers need (aligned)
};

// `alignment` must be a power of two.
MemoryPlan PlanMemory(const std::vector<BufferLifetime>& buffers,
                      uint64_t alignment = kBufferAlignment);

// OK when no two buffers with intersecting lifetimes overlap in memory and
// every buffer lies inside total_bytes at an aligned offset; INTERNAL naming
// the first offending pair otherwise. O(n^2): for tests and debug checks.
Status CheckMemoryPlan(const std::vector<BufferLifetime>& buffers, const MemoryPlan& plan,
                       uint64_t alignment = kBufferAlignment);

}  // namespace hotpath::executor
