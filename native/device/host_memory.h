// Host (system RAM) capacity, read from /proc/meminfo with sysinfo(2) as the
// fallback. Used by the host backend and by device detection.
//
// Thread-safety: all functions are reentrant; no shared state.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace hotpath::device {

struct HostMemory {
  uint64_t total_bytes = 0;
  // Memory a new allocation could get without swapping (MemAvailable), or an
  // estimate (free + buffers + page cache) on kernels without it. Clamped to
  // total_bytes.
  uint64_t available_bytes = 0;
};

// /proc/meminfo first (it has MemAvailable), then sysinfo(2). INTERNAL, naming
// both failures, only if neither can be read.
Result<HostMemory> QueryHostMemory();

// Parses the text of /proc/meminfo. Pure, for tests. NOT_FOUND when MemTotal
// is missing or zero, INVALID_ARGUMENT when a used value is malformed or
// overflows.
Result<HostMemory> ParseMeminfo(std::string_view text);

}  // namespace hotpath::device
